import { useEffect, useState } from "react";
import { useTimelineSearch } from "../../api/timeline";
import { formatDuration } from "../../lib/format";
import { offsetOf } from "./format";

export type SearchPick = { id: string; track: string; startNs: string; durNs: number };

/** Find events by name; choosing one zooms to it and selects it. */
export function SearchBox({
  jobId,
  originNs,
  onPick,
}: {
  jobId: number;
  originNs: string;
  onPick: (pick: SearchPick) => void;
}) {
  const [text, setText] = useState("");
  const [query, setQuery] = useState("");
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const timer = window.setTimeout(() => setQuery(text.trim()), 250);
    return () => window.clearTimeout(timer);
  }, [text]);
  const found = useTimelineSearch(jobId, query);
  const results = found.data?.results ?? [];
  return (
    <div className="tl-search">
      <label className="field field-inline field-search">
        <span className="visually-hidden">Search events by name</span>
        <input
          type="search"
          placeholder="Search events by name"
          value={text}
          onChange={(event) => {
            setText(event.target.value);
            setOpen(true);
          }}
          onFocus={() => setOpen(true)}
          onKeyDown={(event) => event.key === "Escape" && setOpen(false)}
        />
      </label>
      {open && query && found.data && (
        <div className="tl-search-results" role="listbox" aria-label="Matching events">
          <p className="muted">
            {found.data.count.toLocaleString("en-US")} events
            {found.data.names.length > 0 && ` in ${found.data.names.length} names`}
            {found.data.count > results.length && `; the first ${results.length} by time`}
          </p>
          <ul>
            {results.map((r) => (
              <li key={r.id}>
                <button
                  type="button"
                  role="option"
                  aria-selected={false}
                  onClick={() => {
                    setOpen(false);
                    onPick({ id: r.id, track: r.track, startNs: r.start_ns, durNs: r.dur_ns });
                  }}
                >
                  <span className="mono tl-ellipsis">{r.name}</span>
                  <span className="muted nowrap">
                    {offsetOf(originNs, r.start_ns)} · {formatDuration(r.dur_ns)}
                  </span>
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
