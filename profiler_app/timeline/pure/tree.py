"""The track tree of a job: node → CPU / GPUs → process → GPU-<i> utilisation, device (one
lane per CUDA stream), host, and the CPU threads.

Collector uploads arrive as many parts per process (one per chunk), so tree lanes are keyed by
what they show (node, process, GPU, stream or thread), not by part: a lane gathers the part
lanes of every chunk. Keys are plain strings, stable across reloads, so a shared link can name
them.
"""

from __future__ import annotations

import re
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from profiler_app.timeline.pure.index import Lane, PartIndex
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
        if len(self.children) > COLLAPSE_OVER:
            out["children_count"] = len(self.children)
            out["lanes"], out["events"] = self.below()
        elif self.children:
            out["children"] = [c.as_dict() for c in self.children]
        return out

    def _events(self) -> int:
        return sum(p.index.lanes[lane].n_events for p, lane in self.members)

    def below(self) -> tuple[int, int]:
        """(event lanes, events) of the node and every node below it; counted once (the tree
        of a job stays open between requests)."""
        if self._below is None:
            lanes = [n for n in self.walk() if n.data == "events"]
            self._below = (len(lanes), sum(n._events() for n in lanes))
        return self._below

    def walk(self) -> Iterator[TreeNode]:
        """The node and every node below it, in tree order. With a stack, not nested
        generators: each node passed up through one generator per level (0.5 s of a
        200,000-thread job's opening)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


def _natural(text: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def _busiest_pid(part: Part) -> int:
    """The trace's main process: the pid with the most CPU events (-1 when it has none)."""
    counts: dict[int, int] = defaultdict(int)
    for lane in part.index.lanes:
        if lane.kind in (HOST, THREAD) and lane.pid >= 0:
            counts[lane.pid] += lane.n_events
    return max(counts, key=lambda p: (counts[p], -p)) if counts else -1


def _thread_label(label: str, tid: int) -> str:
    """Kineto labels read "process / thread 123 (name)"; the tree only needs the thread part."""
    return label.split(" / ", 1)[-1] if " / " in label else f"thread {tid}"


class _Process:
    # Slots and plain dicts: a job of 200,000 processes makes as many, and what they held
    # stayed in the web process's memory between the tree's nodes.
    __slots__ = ("key", "node_index", "pid", "ranks", "streams", "hosts", "threads", "other")

    def __init__(self, key: str, node_index: int, pid: int) -> None:
        self.key, self.node_index, self.pid = key, node_index, pid
        self.ranks: set[int] = set()
        self.streams: dict[tuple[int, int], list] = {}
        self.hosts: dict[tuple[int, int], tuple[str, list]] = {}  # label, members
        self.threads: dict[int, tuple[str, list]] = {}
        self.other: dict[str, list] = {}

    def add(self, part: Part, lane: Lane) -> None:
        member = (part, lane.lane)
        if lane.kind == STREAM:
            self.streams.setdefault((lane.device, lane.stream), []).append(member)
        elif lane.kind == HOST:
            self._thread(self.hosts, (lane.device, lane.tid), lane).append(member)
        elif lane.kind == THREAD:
            self._thread(self.threads, lane.tid, lane).append(member)
        else:
            self.other.setdefault(lane.label, []).append(member)

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
            cpu = TreeNode(f"{self.key}/cpu", "CPU threads", "threads")
            for tid in sorted(self.threads):
                label, members = self.threads[tid]
                cpu.children.append(
                    TreeNode(
                        f"{self.key}/cpu/{tid}",
                        label,
                        THREAD,
                        "events",
                        members=members,
                        info={"tid": tid},
                    )
                )
            proc.children.append(cpu)
        for label, members in sorted(self.other.items()):
            key = f"{self.key}/other/{zlib.crc32(label.encode()):08x}"
            proc.children.append(TreeNode(key, label, OTHER, "events", members=members))
        return proc

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


def build_tree(parts: list[Part], series: Sequence[Series] = ()) -> list[TreeNode]:
    """The job's tree, nodes in natural order (algo-2 before algo-10)."""
    samples = _node_samples(series)
    node_names = sorted({p.node for p in parts} | set(samples), key=_natural)
    processes: dict[str, _Process] = {}
    for part in parts:
        node_index = node_names.index(part.node)
        busiest = _busiest_pid(part)
        # The pid the part was uploaded with names its main process (a container may see
        # another pid than the trace recorded); GPU streams belong to that process too.
        main = part.pid if part.pid is not None else busiest
        for lane in part.index.lanes:
            pid = lane.pid if lane.kind in (HOST, THREAD) and lane.pid >= 0 else busiest
            pid = main if pid == busiest else pid
            key = f"{part.node}/{pid}"
            proc = processes.get(key)
            if proc is None:  # made once per process, not per lane (3.6 s of 200,000 threads)
                proc = processes[key] = _Process(key, node_index, pid)
            proc.ranks.add(part.rank)
            proc.add(part, lane)
    out = []
    for name in node_names:
        mine = sorted(
            (p for p in processes.values() if p.key.startswith(f"{name}/")),
            key=lambda p: (min(p.ranks), p.pid),
        )
        node_samples = samples.get(name, {})
        node = TreeNode(name, name, "node")
        cpu = _cpu(name, node_samples)
        gpus = TreeNode(f"{name}/gpus", "GPUs", "gpus", info={"unit": "%"})
        for proc in mine:
            (gpus if proc.devices else cpu).children.append(proc.node(node_samples))
        if any(n.kind == "gpu_util" for n in gpus.walk()):
            gpus.data = "counter"  # the mean of the node's GPUs
        node.children = [n for n in (cpu, gpus) if n.children or n.data]
        out.append(node)
    return out
