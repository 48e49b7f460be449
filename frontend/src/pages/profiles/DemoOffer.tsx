import { useDemoAvailability, useStartDemo } from "../../api/demo";
import { ErrorAlert } from "../../components/Feedback";

/** On an empty server: offer to train the collector's example model here and profile it. */
export function DemoOffer({ onStarted }: { onStarted: () => void }) {
  const availability = useDemoAvailability(true);
  const start = useStartDemo();

  if (start.data) {
    return (
      <p className="notice" role="status">
        The demo job <strong>{start.data.job_name}</strong> is training on this server's CPU. It
        appears in this list as soon as its first profile part is uploaded, usually within a minute
        or two.
      </p>
    );
  }
  if (availability.data && !availability.data.available) {
    return <p className="muted">A demo job cannot be created here: {availability.data.reason}</p>;
  }
  return (
    <div className="demo-offer">
      <p>
        To look around first, create a demo job: the collector's example training script runs on
        this server's CPU for a few dozen steps and uploads a real profile.
      </p>
      {start.isError && <ErrorAlert error={start.error} />}
      <button
        type="button"
        className="btn btn-primary"
        disabled={!availability.data?.available || start.isPending}
        onClick={() => start.mutate(undefined, { onSuccess: onStarted })}
      >
        {start.isPending ? "Starting…" : "Create a demo job"}
      </button>
    </div>
  );
}
