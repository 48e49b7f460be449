"""A slower run of a real trace, and figures of both computed straight from their raw JSON.

``write_slower`` stretches time at chosen instants: every event starting at or after an instant
moves later by the stretch, and every event running across it lasts that much longer, so the
trace stays a valid nesting of the same work. Stretching inside each AllReduce kernel makes the
collective take ``allreduce_factor`` times as long (and everything waiting on it later);
stretching right after a computation kernel opens a gap on its stream, where a kernel the
baseline never ran is put.
"""

from __future__ import annotations

import bisect
import gzip
import json
import statistics
from decimal import Decimal
from pathlib import Path

from tests.cluster.raw import load
from tests.traces.expected import ns

NCCL = "nccl_rank0.json.gz"
NEW_KERNEL = "volta_sgemm_128x32_nt"
ALLREDUCE = "ncclKernel_AllReduce"


def _kernels(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]


def _steps(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]


def write_slower(
    target: Path,
    allreduce_factor: Decimal = Decimal("2.8"),
    new_per_step: int = 40,
    new_dur_us: Decimal = Decimal(150),
) -> Path:
    doc = load(NCCL)
    events = doc["traceEvents"]
    kernels = _kernels(events)
    stretches: list[tuple[Decimal, Decimal]] = []
    for k in kernels:
        if k["name"].startswith(ALLREDUCE):
            stretches.append((k["ts"] + k["dur"] / 2, k["dur"] * (allreduce_factor - 1)))
    added = []
    compute = sorted(
        (k for k in kernels if not k["name"].startswith("nccl")), key=lambda k: k["ts"]
    )
    for step in _steps(events):
        inside = [k for k in compute if step["ts"] <= k["ts"] < step["ts"] + step["dur"]]
        for k in inside[:new_per_step]:
            at = k["ts"] + k["dur"]
            stretches.append((at, new_dur_us))
            new = json.loads(json.dumps(k, default=str))
            new["name"] = NEW_KERNEL
            new["args"]["correlation"] = 10_000_000 + len(added)
            added.append((at, new))
    stretches.sort()
    instants = [t for t, _ in stretches]
    before = [Decimal(0)]
    for _, d in stretches:
        before.append(before[-1] + d)

    def start(t: Decimal) -> Decimal:  # stretches at or before t
        return t + before[bisect.bisect_right(instants, t)]

    def end(t: Decimal) -> Decimal:  # stretches strictly before t
        return t + before[bisect.bisect_left(instants, t)]

    for e in events:
        if "ts" not in e:
            continue
        ts = Decimal(e["ts"])
        if "dur" in e:
            e["dur"] = end(ts + Decimal(e["dur"])) - start(ts)
        e["ts"] = start(ts)
    for at, new in added:
        # Its gap opens at ``at``: the kernel fills it, starting where the stretch begins.
        new["ts"] = end(at)
        new["dur"] = new_dur_us
        events.append(new)
    with gzip.open(target, "wt") as f:
        json.dump(doc, f, default=float)
    return target


def raw_figures(path: str | Path) -> dict:
    """Step times, AllReduce time and the new kernel's runs and time, from the raw JSON."""
    events = load(path)["traceEvents"]
    kernels = _kernels(events)
    steps = [ns(e["dur"]) for e in _steps(events)]
    allreduce = [ns(k["dur"]) for k in kernels if k["name"].startswith(ALLREDUCE)]
    new = [ns(k["dur"]) for k in kernels if k["name"] == NEW_KERNEL]
    return {
        "steps_ns": sorted(steps),
        "median_ns": statistics.median(steps),
        "allreduce_ns": sum(allreduce),
        "allreduce_runs": len(allreduce),
        "new_runs": len(new),
        "new_ns": sum(new),
    }


def raw_steps_ns(path: str | Path) -> list[int]:
    """The trace's step durations (ProfilerStep#n) in ns, in trace order."""
    return [ns(e["dur"]) for e in _steps(load(path)["traceEvents"])]
