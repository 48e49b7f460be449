"""Cluster numbers computed straight from a trace's raw JSON, independently of the parser, and
synthetic multi-rank traces made by replicating a real one."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from tests.traces.expected import DATA, load_json, ns

# HTA's computation kernels: every kernel except NCCL ones and names with Memcpy/Memset/Sync.
NOT_COMPUTE = re.compile(r"^(nccl|rccl).*Kernel|.*Memcpy|Memset|.*Sync")
DTYPE_BYTES = {"Float": 4, "Half": 2, "BFloat16": 2, "Byte": 1, "Char": 1, "Long": 8, "Int": 4}


def load(trace: str | Path) -> dict:
    return load_json(trace if isinstance(trace, Path) else DATA / trace)


def step_breakdown(trace: str) -> dict[int, tuple[int, int, int, int]]:
    """step → (step_ns, gap_ns, compute_ns, tail_ns) over the compute kernels starting in it."""
    events = [e for e in load(trace)["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    kernels = [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("cat") == "kernel" and not NOT_COMPUTE.match(e["name"])
    ]
    out = {}
    for step in steps:
        start, dur = ns(step["ts"]), ns(step["dur"])
        inside = [k for k in kernels if start <= k[0] < start + dur]
        first = min(k[0] for k in inside)
        last = min(max(k[1] for k in inside), start + dur)
        gap, compute = first - start, last - first
        out[int(step["name"].split("#")[1])] = (dur, gap, compute, dur - gap - compute)
    return out


def collectives(trace: str) -> dict[str, tuple[int, int, int]]:
    """Collective name → (count, total_ns, bytes) of the NCCL kernels."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for e in load(trace)["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"].startswith("nccl"):
            args = e["args"]
            row = found[args["Collective name"]]
            row[0] += 1
            row[1] += ns(e["dur"])
            nelems = max(args["In msg nelems"], args["Out msg nelems"])
            row[2] += nelems * DTYPE_BYTES[args["dtype"]]
    return {k: tuple(v) for k, v in found.items()}


def write_scaled(trace: str, target: Path, scale: Decimal, rank: int) -> Path:
    """A copy of ``trace`` as another rank whose every time, measured from the trace's first
    event, is ``scale`` times longer (1.3: a rank 30% slower in everything it does)."""
    doc = load(trace)
    events = doc["traceEvents"]
    origin = min(Decimal(e["ts"]) for e in events if "ts" in e)
    for e in events:
        if "ts" in e:
            e["ts"] = origin + (Decimal(e["ts"]) - origin) * scale
        if "dur" in e:
            e["dur"] = Decimal(e["dur"]) * scale
    doc.setdefault("distributedInfo", {})["rank"] = rank
    with gzip.open(target, "wt") as f:
        json.dump(doc, f, default=float)
    return target


def collective_waits(
    traces: list[str | Path], complete_steps: bool = False
) -> dict[int, tuple[int, int, int]]:
    """rank → (calls, wait_ns, max_wait_ns): the i-th NCCL kernel of every rank is one call, and
    each rank's kernel waits from its own start to the latest start of that call, at most for as
    long as it runs. ``complete_steps``: only the kernels launched (by a runtime call) before the
    rank's last ProfilerStep starts."""
    kernels = [sorted(_nccl_kernels(load(trace), complete_steps)) for trace in traces]
    latest = [max(start for start, _ in call) for call in zip(*kernels, strict=True)]
    waits = [
        [min(last - start, dur) for (start, dur), last in zip(mine, latest, strict=True)]
        for mine in kernels
    ]
    return {rank: (len(w), sum(w), max(w)) for rank, w in enumerate(waits)}


def _nccl_kernels(doc: dict, complete_steps: bool) -> list[tuple[int, int]]:
    nccl = [
        e
        for e in _gpu_ops(doc, complete_steps)
        if e["cat"] == "kernel" and e["name"].startswith("nccl")
    ]
    return [(ns(e["ts"]), ns(e["dur"])) for e in nccl]


def _gpu_ops(doc: dict, complete_steps: bool) -> list[dict]:
    """Kernels, copies and sets; ``complete_steps``: those a runtime call launched before the
    trace's last ProfilerStep starts."""
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    ops = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if complete_steps:
        cut = max(ns(e["ts"]) for e in events if e["name"].startswith("ProfilerStep#"))
        launched = {
            e["args"]["correlation"]
            for e in events
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and ns(e["ts"]) < cut
        }
        ops = [e for e in ops if e["args"]["correlation"] in launched]
    return ops


def gpu_times(trace: str | Path, complete_steps: bool = False) -> dict[str, int]:
    """Kernel time and its computation and communication parts, and copy and set time."""
    out = dict.fromkeys(["kernel_ns", "compute_ns", "comm_ns", "memory_ns"], 0)
    for e in _gpu_ops(load(trace), complete_steps):
        dur = ns(e["dur"])
        if e["cat"] != "kernel":
            out["memory_ns"] += dur
            continue
        out["kernel_ns"] += dur
        if e["name"].startswith(("nccl", "rccl")):
            out["comm_ns"] += dur
        elif not NOT_COMPUTE.match(e["name"]):
            out["compute_ns"] += dur
    return out


def step_times(trace: str | Path, complete_steps: bool = False) -> list[int]:
    """Durations of the ProfilerStep annotations (without the last in complete steps)."""
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"]))
        for e in load(trace)["traceEvents"]
        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")
    )
    return [dur for _, dur in (steps[:-1] if complete_steps else steps)]
