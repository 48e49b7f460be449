import { useTags } from "../../api/jobs";
import "./tags.css";

type Props = { chosen: string[]; onChange: (tags: string[]) => void };

/** Jobs having every chosen tag: chosen tags show as chips, more are picked from those in use. */
export function TagFilter({ chosen, onChange }: Props) {
  const tags = useTags();
  const choices = (tags.data ?? []).filter((choice) => !chosen.includes(choice.tag));
  if (!chosen.length && !choices.length) return null;
  return (
    <div className="tag-filter" role="group" aria-label="Tags">
      <span className="filter-label">Tags</span>
      {chosen.map((tag) => (
        <span key={tag} className="tag tag-chosen">
          {tag}
          <button
            type="button"
            className="btn-link"
            aria-label={`Remove the tag filter ${tag}`}
            onClick={() => onChange(chosen.filter((t) => t !== tag))}
          >
            ×
          </button>
        </span>
      ))}
      {choices.length > 0 && (
        <select
          aria-label="Filter by tag"
          value=""
          onChange={(event) => event.target.value && onChange([...chosen, event.target.value])}
        >
          <option value="">{chosen.length ? "and tag…" : "Any tag"}</option>
          {choices.map((choice) => (
            <option key={choice.tag} value={choice.tag}>
              {choice.tag} ({choice.jobs})
            </option>
          ))}
        </select>
      )}
    </div>
  );
}
