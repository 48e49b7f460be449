"""What the timeline must show, computed straight from a trace's raw JSON (standard library only,
no parser code): per lane, how many events and how much time; and the launch→run pairs.

Lanes follow the rule the timeline documents: a GPU event goes to its (device, stream); a CPU
thread that launches GPU work has its annotations and runtime calls on the GPU's host lane and
the rest on its thread lane; other threads keep everything on their thread lane.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tests.traces.expected import LEGACY_CATEGORIES, expected, ns, raw_trace

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync"}
RUN_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}
HOST_CATEGORIES = {"user_annotation", "cuda_runtime", "cuda_driver"}


@dataclass
class RawTimeline:
    count: Counter = field(default_factory=Counter)  # lane key -> events
    busy_ns: Counter = field(default_factory=Counter)  # lane key -> summed durations
    pairs: set = field(default_factory=set)  # (launch start, launch name, run start, run name)
    names: Counter = field(default_factory=Counter)  # event name -> events
    n_events: int = 0


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def raw_timeline(trace: str) -> RawTimeline:
    out = RawTimeline()
    for key, e, _start, dur in _lane_events(trace, out):
        out.count[key] += 1
        out.busy_ns[key] += dur
        out.names[e.get("name", "")] += 1
    return out


def raw_lane_events(trace: str) -> list[tuple[tuple, str, int, int]]:
    """(lane key, name, start ns, duration ns) of every timed event of the raw trace."""
    return [(k, e.get("name", ""), s, d) for k, e, s, d in _lane_events(trace, RawTimeline())]


def _lane_events(trace: str, out: RawTimeline):
    offset = expected(trace).offset_ns
    # Copies: the categories are renamed below, and the parsed file is shared.
    timed = [dict(e) for e in raw_trace(trace)["traceEvents"] if e.get("ph") in ("X", "i", "I")]
    for e in timed:  # PyTorch 1.8 names, and its steps recorded as operators
        e["cat"] = LEGACY_CATEGORIES.get(e.get("cat", ""), e.get("cat", ""))
        if e["cat"] == "cpu_op" and e.get("name", "").startswith("ProfilerStep#"):
            e["cat"] = "user_annotation"
    runs = {}
    for e in timed:
        correlation = e.get("args", {}).get("correlation")
        if e["ph"] == "X" and e.get("cat") in RUN_CATEGORIES and correlation is not None:
            runs.setdefault(int(correlation), e)
    launchers = set()
    out.n_events = len(timed)
    for e in timed:
        correlation = e.get("args", {}).get("correlation")
        if e["ph"] == "X" and e.get("cat") in LAUNCH_CATEGORIES and correlation is not None:
            run = runs.get(int(correlation))
            if run is not None:
                launchers.add((e["pid"], e["tid"]))
                out.pairs.add(
                    (ns(e["ts"]) + offset, e["name"], ns(run["ts"]) + offset, run["name"])
                )
    # A thread without a process (Kineto's own "overhead" events have pid -1) is drawn in the
    # trace's main process: the one with the most CPU-side events.
    cpu_events = Counter(
        _int(e.get("pid"))
        for e in timed
        if (e.get("cat", "") if e["ph"] == "X" else "instant") not in DEVICE_CATEGORIES
    )
    main_pid = max(
        (p for p in cpu_events if p is not None and p >= 0), key=cpu_events.get, default=-1
    )
    for e in timed:
        dur = ns(e.get("dur", 0)) if e["ph"] == "X" else 0
        category = e.get("cat", "") if e["ph"] == "X" else "instant"
        pid, tid = _int(e.get("pid")), _int(e.get("tid"))
        if category in DEVICE_CATEGORIES:
            args = e.get("args", {})
            device = _int(args.get("device"))
            stream = _int(args.get("stream"))
            key = ("stream", pid if device is None else device, tid if stream is None else stream)
        elif pid is None or tid is None:
            key = ("other",)
        elif (e["pid"], e["tid"]) in launchers and category in HOST_CATEGORIES:
            key = ("host", pid, tid)
        else:
            key = ("thread", pid if pid >= 0 else main_pid, tid)
        start = ns(e["ts"]) + offset
        yield key, e, start, dur
