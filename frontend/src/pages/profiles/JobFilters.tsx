import { useEffect, useRef, useState } from "react";
import type { JobState } from "../../api/types";
import { JOB_STATES } from "../../lib/jobs";
import { hasFilters, type ListState } from "./listQuery";
import { TagFilter } from "./TagFilter";

type Props = {
  state: ListState;
  onChange: (changes: Partial<ListState>) => void;
};

const SEARCH_DELAY_MS = 300;

export function JobFilters({ state, onChange }: Props) {
  const [draft, setDraft] = useState(state.search);
  const timer = useRef<number | undefined>(undefined);
  // The pending search applies to the filters as they are when it fires, not when typed.
  const latestOnChange = useRef(onChange);
  useEffect(() => {
    latestOnChange.current = onChange;
  });
  useEffect(() => () => window.clearTimeout(timer.current), []);

  // Typing updates the list after a short pause rather than on every key.
  const typeSearch = (value: string) => {
    setDraft(value);
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(
      () => latestOnChange.current({ search: value }),
      SEARCH_DELAY_MS,
    );
  };

  const toggleStatus = (status: JobState) => {
    const statuses = state.statuses.includes(status)
      ? state.statuses.filter((s) => s !== status)
      : [...state.statuses, status];
    onChange({ statuses });
  };

  const clear = () => {
    window.clearTimeout(timer.current);
    setDraft("");
    onChange({ search: "", statuses: [], fromDay: "", toDay: "", mine: false, tags: [] });
  };

  return (
    <div className="filters">
      <label className="field field-inline field-search">
        <span>Search</span>
        <input
          type="search"
          placeholder="Job name contains…"
          value={draft}
          onChange={(event) => typeSearch(event.target.value)}
        />
      </label>
      <label className="field field-inline">
        <span>Created from</span>
        <input
          type="date"
          value={state.fromDay}
          max={state.toDay || undefined}
          onChange={(event) => onChange({ fromDay: event.target.value })}
        />
      </label>
      <label className="field field-inline">
        <span>to</span>
        <input
          type="date"
          value={state.toDay}
          min={state.fromDay || undefined}
          onChange={(event) => onChange({ toDay: event.target.value })}
        />
      </label>
      <fieldset className="status-filter">
        <legend>Status</legend>
        {JOB_STATES.map(({ value, label }) => (
          <label key={value} className={`chip ${state.statuses.includes(value) ? "chip-on" : ""}`}>
            <input
              type="checkbox"
              checked={state.statuses.includes(value)}
              onChange={() => toggleStatus(value)}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <label className={`chip ${state.mine ? "chip-on" : ""}`} title="Only the jobs you own">
        <input
          type="checkbox"
          checked={state.mine}
          onChange={() => onChange({ mine: !state.mine })}
        />
        Mine
      </label>
      <TagFilter chosen={state.tags} onChange={(tags) => onChange({ tags })} />
      {(hasFilters(state) || draft) && (
        <button type="button" className="btn btn-link" onClick={clear}>
          Clear filters
        </button>
      )}
    </div>
  );
}
