"""Independent figures for the trace recommendations, computed from a Kineto trace's raw JSON
events with plain Python (no product code): the scope each is judged in, and what it covers.

Times are the raw µs as nanoseconds (``round(ts * 1000)``), without ``baseTimeNanoseconds``:
shares and durations do not depend on it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from tests.traces.expected import raw_trace

HOST_CATS = {
    "cpu_op",
    "user_annotation",
    "cuda_runtime",
    "cuda_driver",
    "python_function",
    "operator",
    "runtime",
}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
TOP_LEVEL_CATS = {"cpu_op", "user_annotation", "python_function", "operator"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
STEP = re.compile(r"^ProfilerStep#(\d+)$")
SYNC_NAMES = {
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
    "hipStreamSynchronize",
    "hipDeviceSynchronize",
    "hipEventSynchronize",
    "aten::item",
    "aten::_local_scalar_dense",
}


def load(source: str | Path | list[dict]) -> list[dict]:
    """The complete ("X") events of a trace file, or of a list of events."""
    if isinstance(source, list):
        events = source
    elif str(source).endswith(".gz"):
        events = raw_trace(Path(source).resolve(), exact=False)["traceEvents"]
    else:
        with open(source) as f:
            events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def ns(value: float) -> int:
    return round(float(value) * 1000)


def cat(event: dict) -> str:
    return str(event.get("cat", "")).lower()


def is_host(event: dict) -> bool:
    return cat(event) in HOST_CATS


def is_gpu(event: dict) -> bool:
    return cat(event) in GPU_CATS


def union_ns(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


class Scope:
    """Where a rank is judged: inside its steps (the last one left out, as the complete-steps
    window does, when ``complete``), or, without steps, the steady state: iterations 2..n of
    the loop found on the main thread's top-level events."""

    def __init__(self, source, complete: bool = True) -> None:
        self.events = load(source)
        self.launch_ns = self._launch_times()
        steps = [e for e in self.events if is_host(e) and STEP.match(e["name"])]
        steps.sort(key=lambda e: e["ts"])
        if complete and len({e["name"] for e in steps}) >= 2:
            last = max(ns(e["ts"]) for e in steps)
            steps = [e for e in steps if ns(e["ts"]) < last]
        self.steps = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in steps]
        if self.steps:
            self.bounds = None
            self.scope_ns = sum(end - start for start, end in self.steps)
        else:
            self.bounds = self._steady_state()
            self.scope_ns = self.bounds[1] - self.bounds[0]

    def _launch_times(self) -> dict[int, int]:
        calls = {}
        for e in self.events:
            if cat(e) in RUNTIME_CATS and "correlation" in e.get("args", {}):
                calls[e["args"]["correlation"]] = ns(e["ts"])
        return calls

    def when(self, event: dict) -> int:
        """When the event happened for the host: GPU work by the call that launched it."""
        if is_gpu(event):
            correlation = event.get("args", {}).get("correlation")
            if correlation in self.launch_ns:
                return self.launch_ns[correlation]
        return ns(event["ts"])

    def holds(self, event: dict) -> bool:
        at = self.when(event)
        if self.bounds is None:
            return any(start <= at < end for start, end in self.steps)
        return self.bounds[0] <= at < self.bounds[1]

    def _steady_state(self) -> tuple[int, int]:
        by_thread: dict = defaultdict(list)
        for e in self.events:
            if is_host(e):
                by_thread[(e["pid"], e["tid"])].append(e)
        tops: dict = {}
        for thread, events in by_thread.items():
            events.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
            top, reach = [], -1
            for e in events:
                if ns(e["ts"]) >= reach:  # not inside an earlier event of the thread
                    reach = ns(e["ts"]) + ns(e["dur"])
                    if cat(e) in TOP_LEVEL_CATS:
                        top.append(e)
                else:
                    reach = max(reach, ns(e["ts"]) + ns(e["dur"]))
            tops[thread] = [e for e in top if cat(e) in TOP_LEVEL_CATS]
        main = max(tops, key=lambda t: sum(ns(e["dur"]) for e in tops[t]))
        top = tops[main]
        counts = Counter(e["name"] for e in top)
        recurring = Counter(c for c in counts.values() if c >= 2)
        n = min(c for c, k in recurring.items() if k == max(recurring.values()))
        opener = next(e["name"] for e in top if counts[e["name"]] == n)
        start = [ns(e["ts"]) for e in top if e["name"] == opener][1]
        end = max(ns(e["ts"]) + ns(e["dur"]) for e in top if counts[e["name"]] == n)
        return start, end

    def host_named(self, wanted) -> list[dict]:
        return [e for e in self.events if is_host(e) and wanted(e["name"]) and self.holds(e)]

    def covered_ns(self, wanted) -> int:
        return union_ns(
            [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in self.host_named(wanted)]
        )

    def gpu(self, kind: str) -> list[dict]:
        """The GPU work of ``kind`` ("kernel", "memcpy") launched in the scope."""
        return [e for e in self.events if is_gpu(e) and kind in cat(e) and self.holds(e)]

    def share_pct(self, part_ns: int) -> float:
        return 100.0 * part_ns / self.scope_ns


def is_data_loading(name: str) -> bool:
    return name.startswith("enumerate(DataLoader)") or "DataLoaderIter" in name
