import { type KeyboardEvent, useEffect, useId, useState } from "react";
import { type Series, useSeriesSearch } from "../../api/history";
import { useDebounced } from "../../lib/useDebounced";
import { runCount, splitMatch, stepOption } from "./historyView";

/** How near the end of the list (px) a scroll loads the next page. */
const LOAD_AHEAD_PX = 48;
const TYPING_MS = 250;

/** The series shown, chosen among every series: typing searches them on the server, and further
 * pages load as the list scrolls to its end (or with "Show more"). ARIA 1.2's combobox: focus
 * stays in the input, the arrow keys move the active option, Enter picks it, Escape closes. */
export function SeriesPicker({
  value,
  onChange,
}: {
  value: Series | null;
  onChange: (series: Series) => void;
}) {
  const id = useId();
  const [open, setOpen] = useState(false);
  // null while the person is not typing: the input then shows the chosen series' name.
  const [text, setText] = useState<string | null>(null);
  const [activeId, setActiveId] = useState<number | null>(null);
  const search = useDebounced((text ?? "").trim(), TYPING_MS);
  const found = useSeriesSearch(search);
  const options = found.data?.pages.flatMap((page) => page.results) ?? [];
  const count = found.data?.pages[0]?.count ?? 0;
  const active = options.findIndex((s) => s.id === activeId);
  const optionId = (seriesId: number) => `${id}-series-${seriesId}`;

  useEffect(() => {
    if (open && activeId !== null) {
      document.getElementById(`${id}-series-${activeId}`)?.scrollIntoView?.({ block: "nearest" });
    }
  }, [id, open, activeId]);

  const loadMore = () => {
    if (found.hasNextPage && !found.isFetchingNextPage) void found.fetchNextPage();
  };
  const close = () => {
    setOpen(false);
    setText(null);
    setActiveId(null);
  };
  const pick = (series: Series) => {
    onChange(series);
    close();
  };
  const move = (step: 1 | -1) => {
    if (!open) {
      // Opens on the chosen series when the list holds it, else on the first.
      const chosen = options.find((s) => s.id === value?.id) ?? options[0];
      setOpen(true);
      setActiveId(chosen?.id ?? null);
      return;
    }
    const next = stepOption(active, step, options.length);
    if (step > 0 && next === options.length - 1 && active === next) loadMore();
    if (next >= 0) setActiveId(options[next]!.id);
  };
  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      move(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.key === "Enter" && open && active >= 0) {
      event.preventDefault();
      pick(options[active]!);
    } else if (event.key === "Escape" && open) {
      event.preventDefault();
      close();
    }
  };

  return (
    <div className="series-picker">
      <label htmlFor={`${id}-input`} id={`${id}-label`}>
        Series
      </label>
      <div className="series-picker-field">
        <input
          id={`${id}-input`}
          type="text"
          role="combobox"
          aria-expanded={open}
          aria-controls={`${id}-list`}
          aria-autocomplete="list"
          aria-activedescendant={open && active >= 0 ? optionId(activeId!) : undefined}
          autoComplete="off"
          spellCheck={false}
          placeholder="Search series by name"
          value={text ?? value?.name ?? ""}
          onChange={(event) => {
            setText(event.target.value);
            setActiveId(null);
            setOpen(true);
          }}
          onClick={() => setOpen(true)}
          onFocus={(event) => event.target.select()}
          onBlur={close}
          onKeyDown={onKeyDown}
        />
        <span className="series-picker-chevron" aria-hidden="true">
          ▾
        </span>
        {open && (
          // Pressing in the popup keeps the focus in the input (its blur would close the popup).
          <div className="series-picker-popup" onMouseDown={(event) => event.preventDefault()}>
            <ul
              id={`${id}-list`}
              role="listbox"
              aria-labelledby={`${id}-label`}
              className="series-picker-list"
              onScroll={(event) => {
                const list = event.currentTarget;
                if (list.scrollTop + list.clientHeight >= list.scrollHeight - LOAD_AHEAD_PX) {
                  loadMore();
                }
              }}
            >
              {options.map((series, i) => {
                const [before, match, after] = splitMatch(series.name, search);
                return (
                  <li
                    key={series.id}
                    id={optionId(series.id)}
                    role="option"
                    aria-selected={i === active}
                    className={
                      series.id === value?.id ? "series-option is-current" : "series-option"
                    }
                    onClick={() => pick(series)}
                    onMouseMove={() => series.id !== activeId && setActiveId(series.id)}
                  >
                    <span className="series-option-name">
                      {before}
                      {match && <mark>{match}</mark>}
                      {after}
                    </span>
                    <span className="muted">{runCount(series.run_count)}</span>
                  </li>
                );
              })}
            </ul>
            <div className="series-picker-footer" role="status">
              {found.isError ? (
                <span className="text-error">
                  {found.error instanceof Error ? found.error.message : String(found.error)}
                </span>
              ) : found.isPending ? (
                "Searching…"
              ) : count === 0 ? (
                search ? (
                  `No series matches “${search}”.`
                ) : (
                  "No series yet."
                )
              ) : (
                <>
                  <span>
                    {options.length} of {count} series
                  </span>
                  {found.hasNextPage && (
                    <button
                      type="button"
                      className="btn btn-small"
                      tabIndex={-1}
                      disabled={found.isFetchingNextPage}
                      onClick={loadMore}
                    >
                      {found.isFetchingNextPage ? "Loading…" : "Show more"}
                    </button>
                  )}
                </>
              )}
            </div>
          </div>
        )}
      </div>
    </div>
  );
}
