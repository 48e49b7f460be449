import { useMemo, useState } from "react";
import { Link } from "react-router";
import {
  type CallTree,
  type CallTreeOccurrences,
  type CallTreeQuery,
  useCallTree,
  useOccurrences,
} from "../../api/calltree";
import type { TrainingJob } from "../../api/types";
import { type DataColumn, Table } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { Panel } from "../../components/Panel";
import { formatCount, formatDuration } from "../../lib/format";
import { FlameGraph } from "./FlameGraph";
import { childrenOf, matching, pathIds, rootsOf } from "./flame";
import { parseSource, sourceOf, sourceOptions, sourceValue } from "./parts";
import "./calltree.css";

export function CallTreePage() {
  return (
    <>
      <h1>Call tree</h1>
      <LoadedJobGate page="call tree">{(job) => <JobCallTree job={job} />}</LoadedJobGate>
    </>
  );
}

function JobCallTree({ job }: { job: TrainingJob }) {
  const [query, setQuery] = useState<CallTreeQuery>({
    part: null,
    rank: null,
    node: null,
    threads: null,
    inverted: false,
    min_ns: 0,
  });
  const [search, setSearch] = useState("");
  const [selected, setSelected] = useState<number | null>(null);
  const tree = useCallTree(job.id, query);
  const change = (q: Partial<CallTreeQuery>) => {
    setSelected(null);
    setQuery({ ...query, ...q });
  };
  const data = tree.data;
  const shownSource = data ? sourceOf(data) : null;
  return (
    <>
      <h2 className="job-heading">{job.name}</h2>
      {tree.isError && <ErrorAlert error={tree.error} />}
      {tree.isPending && <Loading what="the call tree" />}
      {data && (
        <>
          <div className="calltree-controls">
            {data.parts.length > 1 && (
              <label>
                Part{" "}
                <select
                  aria-label="Part"
                  value={shownSource ? sourceValue(shownSource) : ""}
                  onChange={(e) => {
                    const source = parseSource(e.target.value);
                    change({
                      part: "part" in source ? source.part : null,
                      rank: "rank" in source ? source.rank : null,
                      node: "node" in source ? source.node : null,
                      threads: null,
                    });
                  }}
                >
                  {sourceOptions(data.parts).map((o) => (
                    <option key={o.value} value={o.value}>
                      {o.label}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label>
              Thread{" "}
              <select
                aria-label="Thread"
                value={threadChoice(data, query)}
                onChange={(e) =>
                  change({
                    threads:
                      e.target.value === EACH_PARTS_STEPS
                        ? null
                        : e.target.value
                          ? [Number(e.target.value)]
                          : data.threads.map((t) => t.track),
                  })
                }
              >
                {data.rank !== null && (
                  <option value={EACH_PARTS_STEPS}>Each part's thread that ran the steps</option>
                )}
                <option value="">All host threads</option>
                {data.threads.map((t) => (
                  <option key={t.track} value={t.track}>
                    {`${t.label} (${t.events} events${t.steps ? `, ${t.steps} steps` : ""})`}
                  </option>
                ))}
              </select>
            </label>
            <fieldset className="calltree-direction">
              <label>
                <input
                  type="radio"
                  checked={!query.inverted}
                  onChange={() => change({ inverted: false })}
                />{" "}
                Top-down
              </label>
              <label>
                <input
                  type="radio"
                  checked={query.inverted}
                  onChange={() => change({ inverted: true })}
                />{" "}
                Bottom-up
              </label>
            </fieldset>
            <label>
              Search{" "}
              <input
                type="search"
                aria-label="Search frames"
                value={search}
                onChange={(e) => setSearch(e.target.value)}
              />
            </label>
            <span title={summedPartsTip(data)}>
              {`${data.frames} frames, ${formatDuration(data.total_ns)}${summedText(data)} (${data.window_label})`}
            </span>
          </div>
          <Tree
            data={data}
            search={search}
            selected={selected}
            onSelect={setSelected}
            jobId={job.id}
            query={query}
          />
        </>
      )}
    </>
  );
}

function summedPartsTip(data: CallTree): string {
  return `A process's tree sums its parts where the profiler recorded something (a collector chunk of annotations only is left out), its latest ${formatCount(data.max_summed_parts)} at most.`;
}

/** " in 4 of 8 parts" for a process's tree; nothing for one part's. */
function summedText(data: CallTree): string {
  if (data.rank === null) return "";
  const total = data.parts.filter((p) => p.rank === data.rank && p.node === data.node).length;
  return ` in ${formatCount(data.summed_parts.length)} of ${formatCount(total)} parts`;
}

/** A process's parts, unasked: each part's thread that ran the steps (one thread can have
 * another id in each capture). */
const EACH_PARTS_STEPS = "steps";

/** The thread the tree shows ("" for all of them). Unasked, the server picks the thread that
 * ran the training steps: idle feeder threads would fill most of an all-threads tree. */
function threadChoice(data: CallTree, query: CallTreeQuery): string {
  if (data.rank !== null && query.threads === null) return EACH_PARTS_STEPS;
  const all = data.selected.length > 1 && data.selected.length === data.threads.length;
  return all || data.selected.length === 0 ? "" : String(data.selected[0]);
}

type TreeProps = {
  data: CallTree;
  search: string;
  selected: number | null;
  onSelect: (f: number) => void;
  jobId: number;
  query: CallTreeQuery;
};

function Tree({ data, search, selected, onSelect, jobId, query }: TreeProps) {
  const frames = data.tree;
  const matches = useMemo(() => matching(frames, data.names, search), [frames, data.names, search]);
  if (frames.parent.length === 0) {
    return (
      <Panel
        title="Call tree"
        size="wide"
        emptyReason="no host events (operators, annotations, Python frames) that the profiler recorded here"
      >
        {null}
      </Panel>
    );
  }
  return (
    <>
      <Panel
        title={
          query.inverted
            ? "Flame graph (bottom-up: frames with self time on top, callers below)"
            : "Flame graph"
        }
        size="wide"
      >
        <FlameGraph
          key={`${data.part}-${data.selected.join()}-${query.inverted}-${query.min_ns}`}
          frames={frames}
          names={data.names}
          matches={matches}
          selected={selected}
          onSelect={onSelect}
        />
      </Panel>
      {selected !== null && (
        <Occurrences data={data} frame={selected} jobId={jobId} query={query} />
      )}
      <Panel title="Call tree" size="wide">
        <TreeTable data={data} matches={matches} selected={selected} onSelect={onSelect} />
      </Panel>
    </>
  );
}

function TreeTable({
  data,
  matches,
  selected,
  onSelect,
}: {
  data: CallTree;
  matches: Set<number>;
  selected: number | null;
  onSelect: (f: number) => void;
}) {
  const frames = data.tree;
  const children = useMemo(() => childrenOf(frames), [frames]);
  const [open, setOpen] = useState<Set<number>>(() => new Set(rootsOf(frames).slice(0, 1)));
  const rows: { frame: number; depth: number }[] = [];
  const walk = (list: number[], depth: number) => {
    for (const f of list) {
      rows.push({ frame: f, depth });
      if (open.has(f) && rows.length < 2000) walk(children[f]!, depth + 1);
    }
  };
  walk(rootsOf(frames), 0);
  const total = data.total_ns || 1;
  const toggle = (f: number) => {
    const next = new Set(open);
    if (next.has(f)) next.delete(f);
    else next.add(f);
    setOpen(next);
  };
  return (
    <div className="calltree-scroll">
      <table className="calltree-table" aria-label="Call tree">
        <thead>
          <tr>
            <th>Frame</th>
            <th>Total</th>
            <th>Total %</th>
            <th>Self</th>
            <th>Self %</th>
            <th>Calls</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ frame, depth }) => (
            <tr
              key={frame}
              className={frame === selected ? "selected" : undefined}
              onClick={() => onSelect(frame)}
            >
              <td
                style={{
                  paddingLeft: depth * 14 + 4,
                  fontWeight: matches.has(frame) ? 700 : undefined,
                }}
              >
                <button
                  type="button"
                  className="twisty"
                  aria-label={open.has(frame) ? "Collapse" : "Expand"}
                  disabled={children[frame]!.length === 0}
                  onClick={(e) => {
                    e.stopPropagation();
                    toggle(frame);
                  }}
                >
                  {children[frame]!.length === 0 ? "" : open.has(frame) ? "▾" : "▸"}
                </button>
                {data.names[frames.name[frame]!]!}
              </td>
              <td>{formatDuration(frames.total_ns[frame]!)}</td>
              <td>{((100 * frames.total_ns[frame]!) / total).toFixed(1)}</td>
              <td>{formatDuration(frames.self_ns[frame]!)}</td>
              <td>{((100 * frames.self_ns[frame]!) / total).toFixed(1)}</td>
              <td>{frames.count[frame]!}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const OCCURRENCE_COLUMNS: DataColumn<CallTreeOccurrences["results"][number]>[] = [
  { key: "offset_ns", label: "At", format: (ns) => `${(ns / 1e6).toFixed(3)} ms` },
  { key: "dur_ns", label: "Duration", format: formatDuration },
  { key: "self_ns", label: "Self", format: formatDuration },
  { key: "thread", label: "Thread" },
  {
    key: "timeline_url",
    label: "Timeline",
    unsortable: true,
    cell: (o) => <Link to={o.timeline_url}>Show in timeline</Link>,
  },
];

function Occurrences({
  data,
  frame,
  jobId,
  query,
}: {
  data: CallTree;
  frame: number;
  jobId: number;
  query: CallTreeQuery;
}) {
  const other =
    data.names[data.tree.name[frame]!]! === "(other)" && data.name_ids[data.tree.name[frame]!]! < 0;
  const path = other ? null : pathIds(data.tree, data.name_ids, frame);
  const found = useOccurrences(
    jobId,
    { ...query, part: data.part, rank: data.rank, node: data.node },
    path,
  );
  const name = data.names[data.tree.name[frame]!]!;
  return (
    <Panel title={`Occurrences of ${name}`} size="wide">
      {other && <p>“(other)” merges several small frames.</p>}
      {found.isError && <ErrorAlert error={found.error} />}
      {found.data && (
        <>
          <p>{`${found.data.count} occurrences${found.data.count > found.data.results.length ? `, the first ${found.data.results.length} listed` : ""}`}</p>
          <Table
            label="Occurrences"
            className="calltree-table"
            rows={found.data.results}
            columns={OCCURRENCE_COLUMNS}
            // Sorting the first occurrences listed would pass for sorting them all.
            unsorted={found.data.count > found.data.results.length}
            rowKey={(o) => o.event}
          />
        </>
      )}
    </Panel>
  );
}
