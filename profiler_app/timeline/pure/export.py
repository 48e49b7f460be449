"""Chrome-trace JSON of a job or a time range of it, as Perfetto and chrome://tracing read it.

Each process of the track tree becomes a trace process named like the tree ("algo-1 HOST-0
PID-1102"), each lane a thread named by its path ("GPU-0 device stream 7"); launch→run pairs
become flow arrows. Times are microseconds from the job's origin (``otherData.origin_ns``), so
a double keeps their nanoseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow.parquet as pq

from profiler_app.lib.memory import hand_back_freed
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import Part
from profiler_app.traces.store_layout import EVENTS_FILE
from tracefmt.kinds import KIND_NAMES, LAUNCH_KINDS

_ARG_COLUMNS = (
    "correlation",
    "external_id",
    "device",
    "stream",
    "bytes",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
)
_BATCH = 20000
# Kept free below the size bound for the end that says the export stopped there.
_TAIL_ROOM = 512
# The fewest bytes an exported event takes besides its name (one-digit ids, no args).
MIN_EVENT_BYTES = len(
    '{"ph":"X","name":,"cat":"","pid":1,"tid":1,"ts":0.000,"dur":0.000,"args":{}}'
)
_LAUNCH_TABLE = np.zeros(256, dtype=bool)
_LAUNCH_TABLE[list(LAUNCH_KINDS)] = True


def _threads(job: JobTimeline) -> tuple[list[dict], dict[tuple[int, int], tuple[int, int]]]:
    """Metadata events naming processes and threads, and (part, lane) → (pid, tid)."""
    meta: list[dict] = []
    where: dict[tuple[int, int], tuple[int, int]] = {}
    processes = [n for root in job.roots for n in root.walk() if n.kind == "process"]
    for pid, proc in enumerate(processes, start=1):
        name = f"{proc.id.split('/', 1)[0]} {proc.label}"
        meta.append(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
        )
        tid = 0
        for parent in proc.walk():
            for lane in (c for c in parent.child_nodes() if c.data == "events"):
                tid += 1
                label = lane.label if parent is proc else f"{parent.label} {lane.label}"
                meta.append(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": pid,
                        "tid": tid,
                        "args": {"name": label},
                    }
                )
                for part, lane_id in lane.members:
                    where[(part.id, lane_id)] = (pid, tid)
    return meta, where


def _range(job: JobTimeline, start_ns: int | None, end_ns: int | None) -> tuple[int, int]:
    lo = job.start_ns if start_ns is None else start_ns
    hi = job.end_ns + 1 if end_ns is None else end_ns
    return lo, hi


def least_bytes(
    job: JobTimeline, start_ns: int | None = None, end_ns: int | None = None
) -> tuple[int, int]:
    """(events, bytes): how many events the export of the range holds, and the fewest bytes
    they take (each its name and ``MIN_EVENT_BYTES``), read from the index alone."""
    lo, hi = _range(job, start_ns, end_ns)
    _, where = _threads(job)
    events = size = 0
    for part in job.parts.values():
        ix = part.index
        name_bytes = np.fromiter((len(json.dumps(s)) for s in ix.strings), np.int64)
        for _pid, _tid, idx in _selected(part, where, lo, hi):
            names = ix.name[idx]
            known = (names >= 0) & (names < len(name_bytes))
            events += len(idx)
            size += len(idx) * (MIN_EVENT_BYTES + 1) + int(name_bytes[names[known]].sum())  # ","
        part.index.release_pages()
    return events, size


def chrome_trace(
    job: JobTimeline,
    start_ns: int | None = None,
    end_ns: int | None = None,
    max_bytes: int | None = None,
) -> Iterator[bytes]:
    """The trace in pieces, for a streaming response. Past ``max_bytes`` it ends early, its
    last keys saying so (``truncated``, ``note``): the status went out with the first piece."""
    lo, hi = _range(job, start_ns, end_ns)
    other = {"origin_ns": str(job.origin_ns), "start_ns": str(lo), "end_ns": str(hi)}
    meta, where = _threads(job)
    head = json.dumps({"displayTimeUnit": "ns", "otherData": other})[:-1].encode()
    head += (
        b',"traceEvents":[' + ",".join(json.dumps(m, separators=(",", ":")) for m in meta).encode()
    )
    yield head
    sent = len(head)
    written = bool(meta)
    for part in job.parts.values():
        for piece in _part_events(job, part, where, lo, hi):
            if not piece:
                continue
            if max_bytes is not None and sent + 1 + len(piece) + _TAIL_ROOM > max_bytes:
                note = (
                    f"The export stopped at {sent:,} bytes: the next events would pass this "
                    f"server's limit of {max_bytes:,} bytes (EXPORT_MAX_MB). Export a shorter "
                    "range (start_ns, end_ns) for the rest."
                )
                yield f'],"truncated":true,"note":{json.dumps(note)}}}'.encode()
                return
            piece = (b"," if written else b"") + piece
            sent += len(piece)
            yield piece
            written = True
        part.index.release_pages()  # the whole job's index would otherwise stay resident
        hand_back_freed()
    yield b"]}"


class _ArgRows:
    """The args columns of store rows, read a row group at a time: memory stays a few row
    groups whatever the part's size (a lane's rows sit close together in the store)."""

    CACHED_GROUPS = 2

    def __init__(self, ix) -> None:
        # Plain reads, not the reader's memory map: mapped pages would stay resident.
        self.file = pq.ParquetFile(ix.reader.directory / EVENTS_FILE, memory_map=False)
        self.starts = ix.group_starts
        self.groups: dict[int, dict[str, np.ndarray]] = {}

    def _group(self, group: int) -> dict[str, np.ndarray]:
        found = self.groups.pop(group, None)
        if found is None:
            table = self.file.read_row_group(group, columns=list(_ARG_COLUMNS))
            found = {c: table.column(c).to_numpy() for c in _ARG_COLUMNS}
            if len(self.groups) >= self.CACHED_GROUPS:
                self.groups.pop(next(iter(self.groups)))
        self.groups[group] = found  # most recently used last
        return found

    def take(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        groups = np.searchsorted(self.starts, rows, side="right") - 1
        out = {c: np.empty(len(rows), dtype=np.int64) for c in _ARG_COLUMNS}
        for group in np.unique(groups).tolist():
            at = np.flatnonzero(groups == group)
            columns = self._group(group)
            local = rows[at] - int(self.starts[group])
            for c in _ARG_COLUMNS:
                out[c][at] = columns[c][local]
        return out


def _selected(part: Part, where: dict, lo: int, hi: int) -> Iterator[tuple[int, int, np.ndarray]]:
    """(pid, tid, the index's events) of each exported lane of ``part`` within [lo, hi)."""
    ix = part.index
    rows = np.arange(len(ix.row_off) - 1)
    lanes = ix.row_lane[rows]
    for row, lane in zip(rows.tolist(), lanes.tolist(), strict=True):
        if (part.id, lane) not in where:
            continue
        pid, tid = where[(part.id, lane)]
        a, b = int(ix.row_off[row]), int(ix.row_off[row + 1])
        start, end = ix.start[a:b], ix.start[a:b] + ix.dur[a:b]
        # Overlapping the range; an instant counts when it lies inside it.
        yield pid, tid, a + np.flatnonzero((start < hi) & ((end > lo) | (start >= lo)))


def _part_events(job: JobTimeline, part: Part, where: dict, lo: int, hi: int) -> Iterator[bytes]:
    ix = part.index
    args = _ArgRows(ix)
    names: dict[int, str] = {}
    for pid, tid, idx in _selected(part, where, lo, hi):
        for chunk in range(0, len(idx), _BATCH):
            yield _events(ix, idx[chunk : chunk + _BATCH], args, names, pid, tid, job.origin_ns)
    yield from _flows(job, part, where, lo, hi)


def _args(raw: dict[str, np.ndarray]) -> list[str]:
    """The "args" object of each row of ``raw``: ids, device, stream, bytes, grid and block."""
    cols = {c: raw[c].tolist() for c in _ARG_COLUMNS}
    rows = raw[_ARG_COLUMNS[0]]
    out = []
    for i in range(len(rows)):
        parts = [f'"{c}":{cols[c][i]}' for c in _ARG_COLUMNS[:5] if cols[c][i] >= 0]
        if cols["grid_x"][i]:
            grid = ",".join(str(cols[f"grid_{a}"][i]) for a in "xyz")
            block = ",".join(str(cols[f"block_{a}"][i]) for a in "xyz")
            parts.append(f'"grid":[{grid}],"block":[{block}]')
        out.append("{" + ",".join(parts) + "}")
    return out


def _events(
    ix, sel: np.ndarray, args_of: _ArgRows, names: dict[int, str], pid: int, tid: int, origin: int
) -> bytes:
    name_ids = ix.name[sel].tolist()
    for name_id in set(name_ids) - names.keys():
        names[name_id] = json.dumps(ix.strings[name_id] if 0 <= name_id < len(ix.strings) else "")
    kinds = [KIND_NAMES.get(k, "other") for k in ix.kind[sel].tolist()]
    ts = ((ix.start[sel] - origin) / 1000).tolist()
    dur = (ix.dur[sel] / 1000).tolist()
    args = _args(args_of.take(ix.store_row[sel].astype(np.int64)))
    return ",".join(
        f'{{"ph":"X","name":{names[n]},"cat":"{k}","pid":{pid},"tid":{tid},"ts":{t:.3f},'
        f'"dur":{d:.3f},"args":{a}}}'
        for n, k, t, d, a in zip(name_ids, kinds, ts, dur, args, strict=True)
    ).encode()


def _flows(job: JobTimeline, part: Part, where: dict, lo: int, hi: int) -> Iterator[bytes]:
    """An arrow from each exported launch to its exported run (Chrome's "s"/"f" events), in
    pieces of at most ``_BATCH`` arrows."""
    ix = part.index
    launch = np.flatnonzero(_LAUNCH_TABLE[ix.kind] & (ix.partner >= 0))
    run = ix.partner[launch].astype(np.int64)
    inside = np.ones(len(launch), dtype=bool)
    for ends in (launch, run):
        start, end = ix.start[ends], ix.start[ends] + ix.dur[ends]
        inside &= (start < hi) & ((end > lo) | (start >= lo))
    launch, run = launch[inside], run[inside]
    lanes = ix.row_lane[np.searchsorted(ix.row_off, np.r_[launch, run], side="right") - 1]
    lines = []
    for i, j, lane_i, lane_j in zip(
        launch.tolist(),
        run.tolist(),
        lanes[: len(launch)].tolist(),
        lanes[len(launch) :].tolist(),
        strict=True,
    ):
        if (part.id, lane_i) not in where or (part.id, lane_j) not in where:
            continue
        flow_id = (part.id << 32) | i  # unique across the job's parts
        for phase, event, lane in (("s", i, lane_i), ("f", j, lane_j)):
            pid, tid = where[(part.id, lane)]
            extra = ',"bp":"e"' if phase == "f" else ""
            lines.append(
                f'{{"ph":"{phase}","id":{flow_id},"name":"launch","cat":"ac2g","pid":{pid},'
                f'"tid":{tid},"ts":{(int(ix.start[event]) - job.origin_ns) / 1000:.3f}{extra}}}'
            )
        if len(lines) >= 2 * _BATCH:
            yield ",".join(lines).encode()
            lines = []
    yield ",".join(lines).encode()
