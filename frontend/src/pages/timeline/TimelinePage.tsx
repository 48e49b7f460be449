import { memo, useCallback, useMemo, useRef, useState } from "react";
import { type TimelineTracks, useTimelineTracks } from "../../api/timeline";
import type { TrainingJob } from "../../api/types";
import { PartialBadge, StatusBadge } from "../../components/Badges";
import { EmptyState, ErrorAlert, Loading } from "../../components/Feedback";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { isPartial } from "../../lib/jobs";
import { TimelineCanvas } from "../../timeline/TimelineCanvas";
import type { Bounds } from "../../timeline/coords";
import { HEADER_PX, layoutTracks, requestedIds, visibleRows } from "../../timeline/layout";
import { type Step, type TrackNode, nsBetween } from "../../timeline/model";
import { RangePane } from "./RangePane";
import { SelectionPane } from "./SelectionPane";
import { ShortcutsPanel } from "./ShortcutsPanel";
import { Toolbar } from "./Toolbar";
import { HoverLayer, type HoverState } from "./Tooltip";
import { TrackTree } from "./TrackTree";
import { timelineScene } from "./scene";
import "./timeline.css";
import { rankFilter, ranksOf, trackPath } from "./tree";
import { useCanvasView } from "./useCanvasView";
import { useGroupPages } from "./useGroupPages";
import { useRangeSelection } from "./useRangeSelection";
import { useSelection } from "./useSelection";
import { useTimelineUrlState } from "./useTimelineUrlState";
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
  const url = useTimelineUrlState(treeRoots);
  const canvas = useCanvasView(originNs, bounds, url.initialRange, url.setRange);
  // Large groups come collapsed; their children join the tree as their pages are read.
  const groups = useGroupPages(jobId, treeRoots, url.open);
  const roots = groups.roots;
  const selection = useSelection({
    jobId,
    originNs,
    bounds,
    roots,
    selection: url.selection,
    setSelection: url.setSelection,
    openAll: url.openAll,
    liveView: canvas.shown?.view,
    jumpTo: canvas.jumpTo,
  });
  const range = useRangeSelection(jobId, originNs, url.area, url.setArea);
  const [showShortcuts, setShowShortcuts] = useState(false);
  const [scrollTop, setScrollTop] = useState(0);
  const treeRef = useRef<HTMLDivElement>(null);
  const hoverRef = useRef<(hover: HoverState | null) => void>(() => {});

  const layout = useMemo(
    () => layoutTracks(roots, url.open, rankFilter(url.ranks)),
    [roots, url.open, url.ranks],
  );
  const rowsHeight = (canvas.shown?.height ?? 600) - HEADER_PX;
  // Tracks a screen above and below come along, so scrolling rarely waits for data.
  const ids = useMemo(
    () => requestedIds(visibleRows(layout, scrollTop - rowsHeight, rowsHeight * 3)),
    [layout, scrollTop, rowsHeight],
  );
  const viewport = useViewportData(
    jobId,
    originNs,
    canvas.shown?.view ?? null,
    canvas.shown?.width ?? 0,
    ids,
  );
  const scene = useMemo(
    () =>
      timelineScene({
        originNs,
        data: viewport.data,
        steps,
        selected: selection.details,
        area: url.area,
        highlights: range.highlighted?.results ?? [],
      }),
    [originNs, viewport.data, steps, selection.details, url.area, range.highlighted],
  );
  const trackLabel = useCallback((id: string) => trackPath(layout, roots, id), [layout, roots]);
  const allRanks = useMemo(() => ranksOf(roots), [roots]);

  return (
    <div className="tl-page">
      <Toolbar
        jobId={jobId}
        originNs={originNs}
        onPickSearch={selection.onPickSearch}
        allRanks={allRanks}
        ranks={url.ranks}
        onRanks={url.setRanks}
        onWholeJob={() => canvas.jumpTo({ ...bounds })}
        shownRange={canvas.shown?.range ?? null}
      />
      {viewport.error && <ErrorAlert error={viewport.error} />}
      {groups.error !== null && <ErrorAlert error={groups.error} />}
      <div className="tl-main">
        <MemoTree
          ref={treeRef}
          layout={layout}
          onToggle={url.toggleOpen}
          onShowMore={groups.showMore}
          onScroll={setScrollTop}
          onShowShortcuts={() => setShowShortcuts(true)}
        />
        <TimelineCanvas
          layout={layout}
          view={canvas.target.view}
          viewVersion={canvas.target.version}
          bounds={bounds}
          scrollTop={scrollTop}
          scene={scene}
          onViewChange={canvas.onViewChange}
          onScrollBy={(delta) => treeRef.current?.scrollBy({ top: delta })}
          onHover={(hit, x, y) => hoverRef.current(hit ? { hit, x, y } : null)}
          onSelect={selection.onSelect}
          onFocusSelection={selection.onFocusSelection}
          onToggleShortcuts={() => setShowShortcuts((shown) => !shown)}
          onArea={range.onArea}
        />
        {showShortcuts && <ShortcutsPanel onClose={() => setShowShortcuts(false)} />}
      </div>
      <p className="muted tl-status" aria-live="polite">
        {viewport.loading
          ? "Loading…"
          : `${tracks.n_events.toLocaleString("en-US")} events in ${tracks.parts.length} parts`}
      </p>
      {url.area && (
        <RangePane
          jobId={jobId}
          startNs={nsBetween(originNs, url.area.startNs)}
          endNs={nsBetween(originNs, url.area.endNs)}
          totals={{
            data: range.totals.data,
            error: range.totals.error,
            isLoading: range.totals.isLoading,
          }}
          trackLabel={trackLabel}
          picked={range.picked}
          onPick={range.setPicked}
          onClear={() => range.onArea(null)}
          highlighted={
            range.highlighted
              ? { count: range.highlighted.count, shown: range.highlighted.results.length }
              : null
          }
        />
      )}
      <SelectionPane
        originNs={originNs}
        trackLabel={trackLabel}
        details={{
          data: selection.details,
          error: selection.error,
          isLoading: selection.isLoading,
        }}
        hasSelection={url.selection !== null}
        data={viewport.data}
        onPickConnection={selection.onPickConnection}
      />
      <HoverLayer jobId={jobId} setterRef={hoverRef} />
    </div>
  );
}
