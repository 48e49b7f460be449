import { Link } from "react-router";
import { EmptyState } from "../components/Feedback";

export function NotFoundPage() {
  return (
    <EmptyState title="No such page">
      <p>
        Go to <Link to="/profiles">Profiles</Link> to pick a training job.
      </p>
    </EmptyState>
  );
}
