"""The track tree of a job: node → CPU / GPUs → process → GPU-<i> utilisation, device (one
lane per CUDA stream), host, and the CPU threads.

Collector uploads arrive as many parts per process (one per chunk), so tree lanes are keyed by
what they show (node, process, GPU, stream or thread), not by part: a lane gathers the part
lanes of every chunk. Keys are plain strings, stable across reloads, so a shared link can name
them.

One module on purpose (over 500 lines): the tree's nodes, the collapsed thread groups and the
per-process builder all decide what a key means, and a shared link depends on them agreeing.
"""

from __future__ import annotations

import re
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any, overload

import numpy as np

from profiler_app.timeline.pure.index import Lane, LaneColumns, PartIndex
from profiler_app.timeline.pure.lanes import HOST, OTHER, STREAM, THREAD
from profiler_app.timeline.pure.series import (
    COUNTER_METRIC,
    CPU_METRICS,
    GPU_METRICS,
    PER_CORE_METRIC,
    PROCESS_METRICS,
    Series,
    combine,
    mean_of,
)
from profiler_app.traces.arrays import run_starts


@dataclass(frozen=True)
class Part:
    """One processed part of the job and where it came from."""

    id: int
    node: str
    rank: int
    pid: int | None
    index: PartIndex


# A group of more children than this is answered collapsed: its count and what is below it,
# its children a page at a time (``JobTimeline.children``). Whole, the tree of a process of
# 200,000 threads answered 23.7 MB in 17 s.
COLLAPSE_OVER = 200


@dataclass(slots=True)
class TreeNode:
    id: str
    label: str
    kind: str
    data: str | None = None  # what its own row draws: "events", "counter" or None (a heading)
    children: list[TreeNode] = field(default_factory=list)
    members: list[tuple[Part, int]] = field(default_factory=list)  # (part, lane) drawn here
    info: dict = field(default_factory=dict)
    series: Series | None = None  # a sampled counter's data
    lazy: LazyGroup | None = None  # a large group's children (threads, processes), made when read
    _below: tuple[int, int] | None = None  # (event lanes, events) below it, once counted

    def as_dict(self) -> dict:
        """The node as the tree answers it: a group of more than ``COLLAPSE_OVER`` children
        collapsed (``children_count``, with the lanes and events below it, no ``children``)."""
        out: dict[str, Any] = {
            "id": self.id,
            "label": self.label,
            "kind": self.kind,
            "data": self.data,
        }
        if self.data == "events":
            out["rows"] = max(len(p.index.lanes[lane].rows) for p, lane in self.members)
            out["events"] = self._events()
        if self.info:
            out["info"] = self.info
        count = self.child_count()
        if count > COLLAPSE_OVER:
            out["children_count"] = count
            out["lanes"], out["events"] = self.below()
        elif self.children:
            out["children"] = [c.as_dict() for c in self.children]
        return out

    def _events(self) -> int:
        return sum(p.index.lanes[lane].n_events for p, lane in self.members)

    def child_count(self) -> int:
        return len(self.lazy) if self.lazy is not None else len(self.children)

    def child_nodes(self) -> Sequence[TreeNode]:
        """Its children, in tree order (a large group makes them as they are read)."""
        return self.lazy if self.lazy is not None else self.children

    def below(self) -> tuple[int, int]:
        """(event lanes, events) of the node and every node below it; counted once (the tree
        of a job stays open between requests)."""
        if self._below is None:
            lanes = events = 0
            for node in self.walk_made():
                if node.data == "events":
                    lanes, events = lanes + 1, events + node._events()
                if node.lazy is not None:
                    lanes, events = lanes + node.lazy.lanes, events + node.lazy.events
            self._below = (lanes, events)
        return self._below

    def event_members(self) -> Iterator[tuple[Part, int]]:
        """(part, lane) of every event lane of the node and below it, without making the
        nodes of a large group."""
        for node in self.walk_made():
            if node.data == "events":
                yield from node.members
            if node.lazy is not None:
                yield from node.lazy.members()

    def walk(self) -> Iterator[TreeNode]:
        """The node and every node below it, in tree order (the threads of a large group
        made one by one). With a stack, not nested generators: each node passed up through
        one generator per level (0.5 s of a 200,000-thread job's opening)."""
        return self._walk(made_only=False)

    def walk_made(self) -> Iterator[TreeNode]:
        """As ``walk``, less the children of large groups (``lazy``): the nodes the tree
        keeps."""
        return self._walk(made_only=True)

    def _walk(self, made_only: bool) -> Iterator[TreeNode]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children if made_only else node.child_nodes()))

    def descendant(self, track_id: str) -> TreeNode | None:
        """The node of the id at or below this one, found by the id's path (a child's id
        starts with its parent's, below a process), making no more of a large group than
        the node asked for."""
        node: TreeNode | None = self
        while node is not None and node.id != track_id:
            if node.lazy is not None:
                return node.lazy.find(track_id)
            node = next(
                (c for c in node.children if track_id == c.id or track_id.startswith(f"{c.id}/")),
                None,
            )
        return node


class LazyGroup(Sequence[TreeNode]):
    """The children of a group of more than ``COLLAPSE_OVER``, kept as arrays: a child's node
    is made when read (a page of the group, a track a view names). ``lanes`` and ``events``:
    the event lanes and events below the group."""

    lanes: int
    events: int
    # Each event lane below the group, as (``parts[source]``, ``lane``), in the group's order.
    parts: list[Part]
    source: np.ndarray
    lane: np.ndarray

    def __len__(self) -> int:
        raise NotImplementedError

    def _nodes(self, first: int, stop: int) -> list[TreeNode]:
        """The nodes of children ``first`` to ``stop``."""
        raise NotImplementedError

    def find(self, track_id: str) -> TreeNode | None:
        """The node of the id, if it is one of these children or below one."""
        raise NotImplementedError

    def track_of(self, part_id: int, lane: int) -> str | None:
        """The id of the track that draws the part's lane, if it is below this group."""
        raise NotImplementedError

    def members(self) -> Iterator[tuple[Part, int]]:
        """(part, lane) of every event lane below the group."""
        for source, lane in zip(self.source.tolist(), self.lane.tolist(), strict=True):
            yield self.parts[source], lane

    def _member_at(self, part_id: int, lane: int) -> int | None:
        """Where the part's lane is among the members, if it is one."""
        key = _member_key(part_id, lane)
        at = int(np.searchsorted(self._member_keys, key))
        if at == len(self._member_keys) or self._member_keys[at] != key:
            return None
        return int(self._member_order[at])

    @cached_property
    def _member_order(self) -> np.ndarray:
        part_ids = np.array([part.id for part in self.parts], dtype=np.int64)
        return np.argsort(_member_key(part_ids[self.source], self.lane), kind="stable")

    @cached_property
    def _member_keys(self) -> np.ndarray:
        part_ids = np.array([part.id for part in self.parts], dtype=np.int64)
        return _member_key(part_ids[self.source], self.lane)[self._member_order]

    @overload
    def __getitem__(self, at: int) -> TreeNode: ...

    @overload
    def __getitem__(self, at: slice) -> list[TreeNode]: ...

    def __getitem__(self, at: int | slice) -> TreeNode | list[TreeNode]:
        if isinstance(at, slice):
            first, stop, step = at.indices(len(self))
            if step == 1:
                return self._nodes(first, max(first, stop))
            return [self._node(i) for i in range(first, stop, step)]
        if not -len(self) <= at < len(self):
            raise IndexError(at)
        return self._node(at % len(self))

    def __iter__(self) -> Iterator[TreeNode]:
        return iter(self._nodes(0, len(self)))

    def __reversed__(self) -> Iterator[TreeNode]:
        return reversed(self._nodes(0, len(self)))

    def _node(self, at: int) -> TreeNode:
        return self._nodes(at, at + 1)[0]


class Threads(LazyGroup):
    """The CPU threads of a process of more than ``COLLAPSE_OVER``, as arrays. Made at opening, the
    200,000 nodes of a job of as many threads were most of its first reader's second and a
    half of CPU, and 325 MB kept while it stayed open."""

    def __init__(self, group_id: str, chunks: list[tuple[Part, list[int]]]) -> None:
        """``chunks``: (part, its thread lanes) in the order they were gathered."""
        self.group_id = group_id
        self.parts = [part for part, _ in chunks]
        source = np.concatenate([np.full(len(lanes), i) for i, (_, lanes) in enumerate(chunks)])
        lane = np.concatenate([np.asarray(lanes, dtype=np.int64) for _, lanes in chunks])
        tid = np.concatenate([part.index.lane_columns.tid[lanes] for part, lanes in chunks])
        # By thread, each thread's lanes in the order gathered (its label is its latest's).
        order = np.argsort(tid, kind="stable")
        self.source, self.lane, self.member_tid = source[order], lane[order], tid[order]
        first = run_starts(self.member_tid)
        self.tids = self.member_tid[first]
        self.off = np.r_[first, len(order)]
        self.events = sum(
            int(part.index.lane_columns.n_events[lanes].sum()) for part, lanes in chunks
        )
        self.lanes = len(self.tids)

    def __len__(self) -> int:
        return len(self.tids)

    def find(self, track_id: str) -> TreeNode | None:
        """The thread the id names (``<group>/<tid>``), if it is one of these."""
        group, _, tid = track_id.rpartition("/")
        if group != self.group_id or not tid.lstrip("-").isdigit():
            return None
        at = int(np.searchsorted(self.tids, int(tid)))
        if at == len(self.tids) or self.tids[at] != int(tid):
            return None
        node = self._node(at)
        return node if node.id == track_id else None

    def track_of(self, part_id: int, lane: int) -> str | None:
        member = self._member_at(part_id, lane)
        return None if member is None else f"{self.group_id}/{int(self.member_tid[member])}"

    def _nodes(self, first: int, stop: int) -> list[TreeNode]:
        """The nodes of threads ``first`` to ``stop`` (the arrays read once for all of them)."""
        lo, hi = int(self.off[first]), int(self.off[stop])
        members = [
            (self.parts[source], lane)
            for source, lane in zip(
                self.source[lo:hi].tolist(), self.lane[lo:hi].tolist(), strict=True
            )
        ]
        bounds = (self.off[first : stop + 1] - lo).tolist()
        out = []
        for tid, a, b in zip(self.tids[first:stop].tolist(), bounds, bounds[1:], strict=False):
            part, lane = members[b - 1]
            out.append(
                TreeNode(
                    f"{self.group_id}/{tid}",
                    _thread_label(part.index.lanes[lane].label, tid),
                    THREAD,
                    "events",
                    members=members[a:b],
                    info={"tid": tid},
                )
            )
        return out


class Processes(LazyGroup):
    """The processes of a host's CPU heading when there are more than ``COLLAPSE_OVER`` and
    every one of them has CPU threads only (a process with other lanes makes the host's
    processes at opening, as a small host's are), as arrays: a process's node is made when
    read. Made at opening, the three nodes of each of a job's 200,000 processes took its first
    reader 4 s of CPU. Processes come in tree order: by lowest rank, then pid."""

    def __init__(
        self,
        host: str,
        node_index: int,
        head: list[TreeNode],
        chunks: list[tuple[Part, np.ndarray, np.ndarray]],
    ) -> None:
        """``head``: the heading's own children (its counters), first; ``chunks``: (part, the
        pid of each of its thread lanes, those lanes), in the order the parts were read."""
        self.host, self.node_index, self.head = host, node_index, head
        self.parts = [part for part, _, _ in chunks]
        source = np.concatenate([np.full(len(lanes), i) for i, (_, _, lanes) in enumerate(chunks)])
        lane = np.concatenate([np.asarray(lanes, dtype=np.int64) for _, _, lanes in chunks])
        pid = np.concatenate([np.asarray(pids, dtype=np.int64) for _, pids, _ in chunks])
        # By process, then by part as read, then by lane: as ``_Process.add_threads`` takes them.
        order = np.lexsort((lane, source, pid))
        self.source, self.lane, self.member_pid = source[order], lane[order], pid[order]
        first = run_starts(self.member_pid)
        self.pids = self.member_pid[first]
        self.off = np.r_[first, len(order)]
        rank = np.array([part.rank for part in self.parts], dtype=np.int64)[self.source]
        lowest_rank = np.minimum.reduceat(rank, first) if len(first) else rank[:0]
        self.tree_order = np.lexsort((self.pids, lowest_rank))
        self.member_tid = np.concatenate(
            [part.index.lane_columns.tid[lanes] for part, _, lanes in chunks]
        )[order]
        self.events = sum(
            int(part.index.lane_columns.n_events[lanes].sum()) for part, _, lanes in chunks
        )
        # A thread node per (pid, tid): pairs counted by sorting, not ``np.unique(axis=1)``,
        # which took 0.17 s of a 200,000-process job's opening.
        by_pair = np.lexsort((self.member_tid, self.member_pid))
        pid_sorted, tid_sorted = self.member_pid[by_pair], self.member_tid[by_pair]
        changes = (pid_sorted[1:] != pid_sorted[:-1]) | (tid_sorted[1:] != tid_sorted[:-1])
        self.lanes = int(changes.sum()) + (1 if len(by_pair) else 0)

    def __len__(self) -> int:
        return len(self.head) + len(self.pids)

    def _nodes(self, first: int, stop: int) -> list[TreeNode]:
        heads = self.head[first:stop]
        at = self.tree_order[max(first - len(self.head), 0) : max(stop - len(self.head), 0)]
        return heads + [self._process(int(i)).node({}) for i in at.tolist()]

    def _process(self, at: int) -> _Process:
        """The process of ``self.pids[at]``, its threads added a part at a time."""
        pid = int(self.pids[at])
        proc = _Process(f"{self.host}/{pid}", self.node_index, pid)
        lo, hi = int(self.off[at]), int(self.off[at + 1])
        sources, lanes = self.source[lo:hi].tolist(), self.lane[lo:hi].tolist()
        cuts = [i for i in range(len(sources)) if i == 0 or sources[i] != sources[i - 1]]
        for a, b in pairwise([*cuts, len(sources)]):
            part = self.parts[sources[a]]
            proc.ranks.add(part.rank)
            proc.add_threads(part, lanes[a:b])
        return proc

    def find(self, track_id: str) -> TreeNode | None:
        """The node the id names: a heading's counter, a process (``<host>/<pid>``) or a node
        below one."""
        for node in self.head:
            if node.id == track_id:
                return node
        if not track_id.startswith(f"{self.host}/"):
            return None
        pid = track_id[len(self.host) + 1 :].split("/", 1)[0]
        if not pid.lstrip("-").isdigit():
            return None
        at = int(np.searchsorted(self.pids, int(pid)))
        if at == len(self.pids) or self.pids[at] != int(pid):
            return None
        return self._process(at).node({}).descendant(track_id)

    def track_of(self, part_id: int, lane: int) -> str | None:
        member = self._member_at(part_id, lane)
        if member is None:
            return None
        return f"{self.host}/{self.member_pid[member]}/cpu/{self.member_tid[member]}"


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values of sorted ``values`` starts, then ``len(values)``: what
    ``np.unique`` gives of 200,000 pids in 0.1 s (hashing them), from a sort of 0.01 s."""
    return (
        np.flatnonzero(np.r_[True, values[1:] != values[:-1], True])
        if len(values)
        else np.zeros(1, np.int64)
    )


def _member_key(part_id, lane):
    """One integer for (part, lane): a part has fewer than 2**32 lanes."""
    return (np.asarray(part_id, dtype=np.int64) << 32) | lane


def _natural(text: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _on_cpu(lanes: LaneColumns) -> np.ndarray:
    """Lanes of a known CPU process (host or thread lanes with a pid)."""
    return lanes.of_kind(HOST, THREAD) & (lanes.pid >= 0)


def _busiest_pid(lanes: LaneColumns) -> int:
    """The trace's main process: the pid with the most CPU events, the lowest of a tie (-1
    when it has none)."""
    on_cpu = _on_cpu(lanes)
    if not on_cpu.any():
        return -1
    pids, at = np.unique(lanes.pid[on_cpu], return_inverse=True)
    return int(pids[np.argmax(np.bincount(at, weights=lanes.n_events[on_cpu]))])


def _thread_label(label: str, tid: int) -> str:
    """Kineto labels read "process / thread 123 (name)"; the tree only needs the thread part."""
    return label.split(" / ", 1)[-1] if " / " in label else f"thread {tid}"


class _Process:
    # Slots and plain dicts: a job of 200,000 processes makes as many, and what they held
    # stayed in the web process's memory between the tree's nodes.
    __slots__ = ("key", "node_index", "pid", "ranks", "streams", "hosts", "threads", "other")
    # ``threads``: (part, its thread lanes of this process), a part at a time

    def __init__(self, key: str, node_index: int, pid: int) -> None:
        self.key, self.node_index, self.pid = key, node_index, pid
        self.ranks: set[int] = set()
        self.streams: dict[tuple[int, int], list] = {}
        self.hosts: dict[tuple[int, int], tuple[str, list]] = {}  # label, members
        self.threads: list[tuple[Part, list[int]]] = []
        self.other: dict[str, list] = {}

    def add(self, part: Part, lane: Lane) -> None:
        """A lane other than a thread's (``add_threads``)."""
        member = (part, lane.lane)
        if lane.kind == STREAM:
            self.streams.setdefault((lane.device, lane.stream), []).append(member)
        elif lane.kind == HOST:
            self._thread(self.hosts, (lane.device, lane.tid), lane).append(member)
        else:
            self.other.setdefault(lane.label, []).append(member)

    def add_threads(self, part: Part, lanes: list[int]) -> None:
        self.threads.append((part, lanes))

    @staticmethod
    def _thread(threads: dict, key, lane: Lane) -> list:
        """The thread's members; its label is its latest lane's."""
        label = _thread_label(lane.label, lane.tid)
        found = threads.get(key)
        if found is None or found[0] != label:
            found = threads[key] = (label, found[1] if found else [])
        return found[1]

    @property
    def devices(self) -> list[int]:
        return sorted({d for d, _ in self.streams} | {d for d, _ in self.hosts})

    def node(self, samples: dict[tuple[str, int], Series]) -> TreeNode:
        ranks = sorted(self.ranks)
        label = (
            f"HOST-{self.node_index} PID-{self.pid}" if self.pid >= 0 else f"HOST-{self.node_index}"
        )
        proc = TreeNode(self.key, label, "process", info={"ranks": ranks, "pid": self.pid})
        for device in self.devices:
            proc.children.extend(self._gpu(device, samples))
        if self.threads:
            proc.children.append(self._cpu_threads())
        for label, members in sorted(self.other.items()):
            key = f"{self.key}/other/{zlib.crc32(label.encode()):08x}"
            proc.children.append(TreeNode(key, label, OTHER, "events", members=members))
        return proc

    def _cpu_threads(self) -> TreeNode:
        """The process's CPU threads: a node per thread, its lanes gathered from every part;
        over ``COLLAPSE_OVER`` threads, kept as arrays (``Threads``)."""
        cpu = TreeNode(f"{self.key}/cpu", "CPU threads", "threads")
        if sum(len(lanes) for _, lanes in self.threads) > COLLAPSE_OVER:
            threads = Threads(cpu.id, self.threads)
            if len(threads) > COLLAPSE_OVER:
                cpu.lazy = threads
            else:
                cpu.children = list(threads)
            return cpu
        by_tid: dict[int, tuple[str, list]] = {}
        for part, lanes in self.threads:
            for number in lanes:
                lane = part.index.lanes[number]
                self._thread(by_tid, lane.tid, lane).append((part, number))
        for tid in sorted(by_tid):
            label, members = by_tid[tid]
            cpu.children.append(
                TreeNode(
                    f"{cpu.id}/{tid}", label, THREAD, "events", members=members, info={"tid": tid}
                )
            )
        return cpu

    def _gpu(self, device: int, samples: dict[tuple[str, int], Series]) -> list[TreeNode]:
        base = f"{self.key}/gpu{device}"
        # Measured (NVML) utilisation when the collector sampled it, else derived from kernels.
        util = TreeNode(
            f"{base}/util",
            f"GPU-{device} utilisation",
            "gpu_util",
            "counter",
            info={"device": device, "unit": "%"},
            series=samples.get(("gpu_util_pct", device)),
        )
        util.members = [m for (d, _), ms in self.streams.items() if d == device for m in ms]
        out = [util]
        for metric, (label, unit) in GPU_METRICS.items():
            found = samples.get((metric, device))
            if found is not None and metric != "gpu_util_pct":
                out.append(
                    TreeNode(
                        f"{base}/{metric}",
                        f"GPU-{device} {label}",
                        "counter",
                        "counter",
                        info={"device": device, "unit": unit},
                        series=found,
                    )
                )
        streams = sorted(s for d, s in self.streams if d == device)
        if streams:
            dev = TreeNode(
                f"{base}/device", f"GPU-{device} device", "device", info={"device": device}
            )
            for stream in streams:
                dev.children.append(
                    TreeNode(
                        f"{base}/s{stream}",
                        f"stream {stream}",
                        STREAM,
                        "events",
                        members=self.streams[(device, stream)],
                        info={"device": device, "stream": stream},
                    )
                )
            out.append(dev)
        tids = sorted(t for d, t in self.hosts if d == device)
        if len(tids) == 1:
            tid = tids[0]
            out.append(
                TreeNode(
                    f"{base}/host/{tid}",
                    f"GPU-{device} host",
                    HOST,
                    "events",
                    members=self.hosts[(device, tid)][1],
                    info={"device": device, "tid": tid, "thread": self.hosts[(device, tid)][0]},
                )
            )
        elif tids:
            host = TreeNode(f"{base}/host", f"GPU-{device} host", "hosts", info={"device": device})
            for tid in tids:
                label, members = self.hosts[(device, tid)]
                host.children.append(
                    TreeNode(
                        f"{base}/host/{tid}",
                        label,
                        HOST,
                        "events",
                        members=members,
                        info={"device": device, "tid": tid},
                    )
                )
            out.append(host)
        return out


def _node_samples(series: Sequence[Series]) -> dict[str, dict[tuple[str, int], Series]]:
    """Node → (metric, device or counter name) → the series, chunks combined."""
    pieces: dict[tuple[str, str, int, str], list[Series]] = defaultdict(list)
    for s in series:
        pieces[(s.node, s.metric, s.device, s.name)].append(s)
    out: dict[str, dict] = defaultdict(dict)
    for (node, metric, device, name), found in pieces.items():
        out[node][(metric, name or device)] = combine(found)
    return out


def _cpu(name: str, samples: dict) -> TreeNode:
    """The node's CPU heading: utilisation (total, else the mean of the cores), I/O wait,
    host memory and performance counters."""
    cpu = TreeNode(f"{name}/cpu", "CPU", "cpu", info={"unit": "%"})
    total = samples.get(("cpu_util_total_pct", -1))
    cores = [s for (metric, _), s in samples.items() if metric == PER_CORE_METRIC]
    if total is None and cores:
        total = mean_of(cores)
    if total is not None:
        cpu.data, cpu.series = "counter", total
    for metric, (label, unit) in CPU_METRICS.items():
        found = samples.get((metric, -1))
        if found is not None and metric != "cpu_util_total_pct":
            cpu.children.append(
                TreeNode(
                    f"{name}/cpu/{metric}",
                    label,
                    "counter",
                    "counter",
                    info={"unit": unit},
                    series=found,
                )
            )
    for (metric, process), found in sorted(samples.items(), key=lambda kv: str(kv[0][1])):
        if metric in PROCESS_METRICS:
            label, unit = PROCESS_METRICS[metric]
            cpu.children.append(
                TreeNode(
                    f"{name}/cpu/{metric}/{zlib.crc32(str(process).encode()):08x}",
                    f"{label}, {process}",
                    "counter",
                    "counter",
                    info={"unit": unit},
                    series=found,
                )
            )
    for (metric, counter), found in sorted(samples.items(), key=lambda kv: str(kv[0][1])):
        if metric == COUNTER_METRIC:
            key = f"{name}/cpu/counter/{zlib.crc32(str(counter).encode()):08x}"
            cpu.children.append(
                TreeNode(key, str(counter), "counter", "counter", info={"unit": ""}, series=found)
            )
    return cpu


def nodes_made_at_once(parts: list[Part]) -> int:
    """About how many nodes ``build_tree`` makes: one per lane other than a thread's, and per
    process of threads three and one per thread of at most ``COLLAPSE_OVER``; a part of more
    than ``COLLAPSE_OVER`` such processes, or a process of more threads, makes theirs when read."""
    made = 0
    for part in parts:
        lanes = part.index.lane_columns
        is_thread = lanes.of_kind(THREAD)
        threads = np.diff(_run_starts(np.sort(lanes.pid[is_thread])))
        made += int((~is_thread).sum())
        if len(threads) <= COLLAPSE_OVER:
            made += 3 * len(threads) + int(threads[threads <= COLLAPSE_OVER].sum())
    return made


def build_tree(parts: list[Part], series: Sequence[Series] = ()) -> list[TreeNode]:
    """The job's tree, nodes in natural order (algo-2 before algo-10)."""
    samples = _node_samples(series)
    node_names = sorted({p.node for p in parts} | set(samples), key=_natural)
    processes: dict[str, _Process] = {}
    # Per host: (part, the pid of each thread lane, those lanes), added once every part's
    # other lanes have made the processes that have them.
    thread_chunks: dict[str, list[tuple[Part, np.ndarray, np.ndarray]]] = defaultdict(list)
    for part in parts:
        node_index = node_names.index(part.node)

        def process(pid: int, part: Part = part, node_index: int = node_index) -> _Process:
            key = f"{part.node}/{pid}"
            proc = processes.get(key)
            if proc is None:
                proc = processes[key] = _Process(key, node_index, pid)
            proc.ranks.add(part.rank)
            return proc

        lanes = part.index.lane_columns
        busiest = _busiest_pid(lanes)
        # The pid the part was uploaded with names its main process (a container may see
        # another pid than the trace recorded); GPU streams belong to that process too.
        main = part.pid if part.pid is not None else busiest
        pid = np.where(_on_cpu(lanes), lanes.pid, busiest)
        pid = np.where(pid == busiest, main, pid)
        is_thread = lanes.of_kind(THREAD)
        for number in np.flatnonzero(~is_thread).tolist():
            process(int(pid[number])).add(part, part.index.lanes[number])
        threads = np.flatnonzero(is_thread)
        thread_chunks[part.node].append((part, pid[threads], threads))
    out = []
    for name in node_names:
        node_samples = samples.get(name, {})
        cpu = _cpu(name, node_samples)
        _add_threads(name, node_names.index(name), thread_chunks[name], processes, cpu)
        mine = sorted(
            (p for p in processes.values() if p.key.startswith(f"{name}/")),
            key=lambda p: (min(p.ranks), p.pid),
        )
        node = TreeNode(name, name, "node")
        gpus = TreeNode(f"{name}/gpus", "GPUs", "gpus", info={"unit": "%"})
        for proc in mine:
            (gpus if proc.devices else cpu).children.append(proc.node(node_samples))
        if any(n.kind == "gpu_util" for n in gpus.walk()):
            gpus.data = "counter"  # the mean of the node's GPUs
        node.children = [n for n in (cpu, gpus) if n.children or n.lazy or n.data]
        out.append(node)
    return out


def _add_threads(
    host: str,
    node_index: int,
    chunks: list[tuple[Part, np.ndarray, np.ndarray]],
    processes: dict[str, _Process],
    cpu: TreeNode,
) -> None:
    """Gives each process of ``host`` its thread lanes, a part at a time, by arrays (a trace
    may hold 200,000). More than ``COLLAPSE_OVER`` processes of threads alone, and no other
    process on the host's CPU heading: they are kept as arrays, the heading's ``lazy``
    (``Processes``); otherwise each is made here, beside the others."""
    mine = [p for p in processes.values() if p.key.startswith(f"{host}/")]
    made = np.array(sorted(p.pid for p in mine), dtype=np.int64)
    split = [(part, pids, lanes, np.isin(pids, made)) for part, pids, lanes in chunks]
    alone = np.sort(np.concatenate([pids[~known] for _, pids, _, known in split] or [made]))
    alone = alone[_run_starts(alone)[:-1]]
    if len(alone) > COLLAPSE_OVER and not any(not p.devices for p in mine):
        alone_chunks = [(part, pids[~known], lanes[~known]) for part, pids, lanes, known in split]
        cpu.lazy = Processes(host, node_index, cpu.children, alone_chunks)
        split = [
            (part, pids[known], lanes[known], known[known]) for part, pids, lanes, known in split
        ]
    for part, pids, lanes, _ in split:
        order = np.argsort(pids, kind="stable")
        owners, numbers = pids[order], lanes[order].tolist()
        cuts = run_starts(owners).tolist()
        for lo, hi in pairwise([*cuts, len(numbers)]):
            key = f"{host}/{int(owners[lo])}"
            proc = processes.get(key)
            if proc is None:  # made once per process, not per lane (3.6 s of 200,000 threads)
                proc = processes[key] = _Process(key, node_index, int(owners[lo]))
            proc.ranks.add(part.rank)
            proc.add_threads(part, numbers[lo:hi])
