import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import {
  type TimelineTracks,
  exportUrl,
  useRangeEvents,
  useRangeTotals,
  useTimelineEvent,
  useTimelineTracks,
} from "../../api/timeline";
import type { TrainingJob } from "../../api/types";
import { PartialBadge, StatusBadge } from "../../components/Badges";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { isPartial } from "../../lib/jobs";
import { type Area as CanvasArea, TimelineCanvas } from "../../timeline/TimelineCanvas";
import { type Bounds, type View, centreOn, focusOn } from "../../timeline/coords";
import {
  HEADER_PX,
  type Hit,
  layoutTracks,
  requestedIds,
  visibleRows,
} from "../../timeline/layout";
import { type Step, type TrackNode, absoluteNs, eventId, nsBetween } from "../../timeline/model";
import type { Placed, Scene } from "../../timeline/renderer";
import { type PickedRow, RangePane } from "./RangePane";
import { SearchBox, type SearchPick } from "./SearchBox";
import { type Connection, SelectionPane } from "./SelectionPane";
import { ShortcutsPanel } from "./ShortcutsPanel";
import { Tooltip } from "./Tooltip";
import { TrackTree } from "./TrackTree";
import "./timeline.css";
import { ancestorsOf, defaultExpanded, rankFilter, ranksOf } from "./tree";
import type { Area } from "./urlState";
import { useGroupPages } from "./useGroupPages";
import { useInitialTimelineUrl, useTimelineUrlWriter } from "./useTimelineUrl";
import { useViewportData } from "./useViewportData";

export function TimelinePage() {
  return (
    <>
      <h1 className="visually-hidden">Timeline</h1>
      <LoadedJobGate page="timeline">{(job) => <JobTimeline job={job} />}</LoadedJobGate>
    </>
  );
}

function JobTimeline({ job }: { job: TrainingJob }) {
  const running = job.status === "in_progress" || job.status === "stopping" || isPartial(job);
  const tracks = useTimelineTracks(job.id, running ? 15_000 : false);
  return (
    <>
      <h2 className="job-heading tl-heading">
        {job.name} <StatusBadge status={job.status} />
        {isPartial(job) && <PartialBadge />}
      </h2>
      {tracks.isError && <ErrorAlert error={tracks.error} />}
      {!tracks.data && !tracks.isError && <Loading what="the timeline" />}
      {tracks.data && tracks.data.tracks.length === 0 && (
        <EmptyState title="Nothing to draw yet">
          <p>
            No part of this job has been processed yet. The timeline fills in as parts are parsed.
          </p>
        </EmptyState>
      )}
      {tracks.data && tracks.data.tracks.length > 0 && (
        <TimelineView key={job.id} jobId={job.id} tracks={tracks.data} />
      )}
    </>
  );
}

const MemoTree = memo(TrackTree);

function TimelineView({ jobId, tracks }: { jobId: number; tracks: TimelineTracks }) {
  const initial = useInitialTimelineUrl();
  const originNs = tracks.origin_ns;
  const treeRoots = tracks.tracks as TrackNode[];
  const bounds: Bounds = useMemo(
    () => ({ startNs: 0, endNs: Math.max(nsBetween(originNs, tracks.end_ns), 1) }),
    [originNs, tracks.end_ns],
  );
  const steps: Step[] = useMemo(
    () =>
      tracks.steps.map((s) => ({
        name: s.name,
        startNs: nsBetween(originNs, s.start_ns),
        durNs: s.dur_ns,
      })),
    [tracks.steps, originNs],
  );
  const [expanded, setExpanded] = useState<Set<string>>(() =>
    initial.open ? new Set(initial.open) : defaultExpanded(treeRoots),
  );
  // Large groups come collapsed; their children join the tree as their pages are read.
  const groups = useGroupPages(jobId, treeRoots, expanded);
  const roots = groups.roots;
  const [ranks, setRanks] = useState<number[] | null>(initial.ranks);
  const [selection, setSelection] = useState<string | null>(initial.selection);
  const [area, setArea] = useState<Area | null>(initial.area);
  const [picked, setPicked] = useState<PickedRow | null>(null);
  const [showShortcuts, setShowShortcuts] = useState(false);
  const [scrollTop, setScrollTop] = useState(0);
  const startView = useMemo<View>(
    () =>
      initial.range
        ? {
            startNs: nsBetween(originNs, initial.range.startNs),
            endNs: nsBetween(originNs, initial.range.endNs),
          }
        : { startNs: bounds.startNs, endNs: bounds.endNs },
    [], // eslint-disable-line react-hooks/exhaustive-deps
  );
  const [target, setTarget] = useState({ view: startView, version: 0 });
  const [live, setLive] = useState<{ view: View; width: number; height: number } | null>(null);
  const treeRef = useRef<HTMLDivElement>(null);
  const hoverRef = useRef<(hover: HoverState | null) => void>(() => {});

  const layout = useMemo(
    () => layoutTracks(roots, expanded, rankFilter(ranks)),
    [roots, expanded, ranks],
  );
  const rowsHeight = (live?.height ?? 600) - HEADER_PX;
  // Tracks a screen above and below come along, so scrolling rarely waits for data.
  const ids = useMemo(
    () => requestedIds(visibleRows(layout, scrollTop - rowsHeight, rowsHeight * 3)),
    [layout, scrollTop, rowsHeight],
  );
  const viewport = useViewportData(jobId, originNs, live?.view ?? null, live?.width ?? 0, ids);
  const details = useTimelineEvent(jobId, selection);
  const totals = useRangeTotals(jobId, area);
  const pickedArea = useMemo(
    () => (area && picked ? { ...area, tracks: [picked.track] } : null),
    [area, picked],
  );
  const highlighted = useRangeEvents(jobId, pickedArea, picked?.name ?? null);
  const onArea = useCallback(
    (next: CanvasArea | null) => {
      setPicked(null);
      setArea(
        next && {
          startNs: absoluteNs(originNs, next.startNs),
          endNs: absoluteNs(originNs, next.endNs),
          tracks: next.tracks,
        },
      );
    },
    [originNs],
  );

  const scene: Scene = useMemo(() => {
    const place = (e: {
      track: string;
      depth: number;
      start_ns: string;
      dur_ns: number;
    }): Placed => ({
      track: e.track,
      depth: e.depth,
      startNs: nsBetween(originNs, e.start_ns),
      durNs: e.dur_ns,
    });
    const d = selection ? details.data : undefined;
    return {
      data: viewport.data,
      steps,
      selection: d ? place(d.event) : null,
      arrows: d?.launch && d.run ? [{ from: place(d.launch), to: place(d.run) }] : [],
      area: area && {
        startNs: nsBetween(originNs, area.startNs),
        endNs: nsBetween(originNs, area.endNs),
        tracks: area.tracks,
      },
      highlights: picked ? (highlighted.data?.results ?? []).map(place) : [],
    };
  }, [viewport.data, steps, selection, details.data, originNs, area, picked, highlighted.data]);

  // The URL follows the view, selection, filter and expansion, so the address bar is a link.
  const liveView = live?.view;
  useTimelineUrlWriter({
    job: null, // the path names the job (/jobs/<id>/timeline), or it is the loaded one
    ranks,
    range: liveView
      ? {
          startNs: absoluteNs(originNs, liveView.startNs),
          endNs: absoluteNs(originNs, liveView.endNs),
        }
      : initial.range,
    selection,
    open: [...expanded],
    area,
  });

  const jumpTo = useCallback(
    (view: View) => setTarget((t) => ({ view, version: t.version + 1 })),
    [],
  );
  const reveal = useCallback(
    (track: string) => {
      const above = ancestorsOf(roots, track);
      setExpanded((open) =>
        above.every((id) => open.has(id)) ? open : new Set([...open, ...above]),
      );
    },
    [roots],
  );
  const onToggle = useCallback(
    (id: string) =>
      setExpanded((open) => {
        const next = new Set(open);
        if (!next.delete(id)) next.add(id);
        return next;
      }),
    [],
  );
  const onSelect = useCallback((hit: Hit | null) => {
    setSelection(hit?.type === "event" ? eventId(hit.part, hit.idx) : null);
  }, []);
  // A link from a finding names its event by store row: once found, use the timeline's own id
  // and open the tracks down to it.
  useEffect(() => {
    const event = details.data?.event;
    if (event && selection?.includes(":@")) {
      // Once per link: the fetched event tells which timeline event the store row is.
      /* eslint-disable react-hooks/set-state-in-effect */
      reveal(event.track);
      setSelection(event.id);
      /* eslint-enable react-hooks/set-state-in-effect */
    }
  }, [details.data, selection, reveal]);
  const onFocusSelection = useCallback(() => {
    const event = details.data?.event;
    if (event && selection)
      jumpTo(focusOn(nsBetween(originNs, event.start_ns), event.dur_ns, bounds));
  }, [details.data, selection, originNs, bounds, jumpTo]);
  const onPickSearch = useCallback(
    (pick: SearchPick) => {
      reveal(pick.track);
      setSelection(pick.id);
      jumpTo(focusOn(nsBetween(originNs, pick.startNs), pick.durNs, bounds));
    },
    [reveal, jumpTo, originNs, bounds],
  );
  const onPickConnection = useCallback(
    (c: Connection) => {
      setSelection(eventId(c.part, c.run));
      if (liveView)
        jumpTo(centreOn(liveView, (c.launchStartNs + c.runStartNs + c.runDurNs) / 2, bounds));
    },
    [jumpTo, liveView, bounds],
  );
  const trackLabel = useCallback((id: string) => trackPath(layout, roots, id), [layout, roots]);
  const allRanks = useMemo(() => ranksOf(roots), [roots]);

  return (
    <div className="tl-page">
      <div className="tl-toolbar">
        <SearchBox jobId={jobId} originNs={originNs} onPick={onPickSearch} />
        {allRanks.length > 1 && (
          <fieldset className="status-filter">
            <legend>Ranks</legend>
            {allRanks.map((rank) => {
              const on = !ranks || ranks.includes(rank);
              return (
                <label key={rank} className={`chip ${on ? "chip-on" : ""}`}>
                  <input
                    type="checkbox"
                    checked={on}
                    onChange={() => setRanks(toggleRank(ranks, allRanks, rank))}
                  />
                  {rank}
                </label>
              );
            })}
          </fieldset>
        )}
        <span className="tl-toolbar-end">
          <button type="button" className="btn btn-small" onClick={() => jumpTo({ ...bounds })}>
            Whole job
          </button>
          {liveView && (
            <a
              className="btn btn-small"
              href={exportUrl(jobId, {
                startNs: absoluteNs(originNs, liveView.startNs),
                endNs: absoluteNs(originNs, liveView.endNs),
              })}
            >
              Export visible range
            </a>
          )}
          <a className="btn btn-small" href={exportUrl(jobId)}>
            Export whole job
          </a>
        </span>
      </div>
      {viewport.error && <ErrorAlert error={viewport.error} />}
      {groups.error !== null && <ErrorAlert error={groups.error} />}
      <div className="tl-main">
        <MemoTree
          ref={treeRef}
          layout={layout}
          onToggle={onToggle}
          onShowMore={groups.showMore}
          onScroll={setScrollTop}
          onShowShortcuts={() => setShowShortcuts(true)}
        />
        <TimelineCanvas
          layout={layout}
          view={target.view}
          viewVersion={target.version}
          bounds={bounds}
          scrollTop={scrollTop}
          scene={scene}
          onViewChange={(view, width, height) => setLive({ view, width, height })}
          onScrollBy={(delta) => treeRef.current?.scrollBy({ top: delta })}
          onHover={(hit, x, y) => hoverRef.current(hit ? { hit, x, y } : null)}
          onSelect={onSelect}
          onFocusSelection={onFocusSelection}
          onToggleShortcuts={() => setShowShortcuts((shown) => !shown)}
          onArea={onArea}
        />
        {showShortcuts && <ShortcutsPanel onClose={() => setShowShortcuts(false)} />}
      </div>
      <p className="muted tl-status" aria-live="polite">
        {viewport.loading
          ? "Loading…"
          : `${tracks.n_events.toLocaleString("en-US")} events in ${tracks.parts.length} parts`}
      </p>
      {area && (
        <RangePane
          jobId={jobId}
          startNs={nsBetween(originNs, area.startNs)}
          endNs={nsBetween(originNs, area.endNs)}
          totals={{ data: totals.data, error: totals.error, isLoading: totals.isLoading }}
          trackLabel={trackLabel}
          picked={picked}
          onPick={setPicked}
          onClear={() => onArea(null)}
          highlighted={
            picked && highlighted.data
              ? { count: highlighted.data.count, shown: highlighted.data.results.length }
              : null
          }
        />
      )}
      <SelectionPane
        originNs={originNs}
        trackLabel={trackLabel}
        details={{
          data: selection ? details.data : undefined,
          error: details.error,
          isLoading: details.isLoading,
        }}
        hasSelection={selection !== null}
        data={viewport.data}
        onPickConnection={onPickConnection}
      />
      <HoverLayer jobId={jobId} setterRef={hoverRef} />
    </div>
  );
}

type HoverState = { hit: Hit; x: number; y: number };

/** Hover changes at mouse speed; only this small component re-renders for it. */
function HoverLayer({
  jobId,
  setterRef,
}: {
  jobId: number;
  setterRef: React.RefObject<(hover: HoverState | null) => void>;
}) {
  const [hover, setHover] = useState<HoverState | null>(null);
  useEffect(() => {
    setterRef.current = setHover;
  }, [setterRef]);
  return hover ? (
    <Tooltip jobId={jobId} hit={hover.hit} clientX={hover.x} clientY={hover.y} />
  ) : null;
}

function toggleRank(ranks: number[] | null, all: number[], rank: number): number[] | null {
  const current = new Set(ranks ?? all);
  if (!current.delete(rank)) current.add(rank);
  if (current.size === 0 || current.size === all.length) return null;
  return [...current].sort((a, b) => a - b);
}

/** "algo-1 › HOST-0 PID-1102 › GPU-0 device › stream 7": where a track sits in the tree. */
function trackPath(
  layout: ReturnType<typeof layoutTracks>,
  roots: TrackNode[],
  id: string,
): string {
  const labels: string[] = [];
  const find = (node: TrackNode): boolean => {
    labels.push(node.label);
    if (node.id === id || node.children?.some(find)) return true;
    labels.pop();
    return false;
  };
  roots.some(find);
  return labels.length ? labels.join(" › ") : (layout.byId.get(id)?.node.label ?? id);
}
