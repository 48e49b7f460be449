"""Expected numbers computed straight from a trace's raw JSON, independently of the parser.

Uses only the standard library: ``json`` with ``Decimal`` floats, so microsecond timestamps
convert to nanoseconds exactly (no float rounding anywhere).
"""

from __future__ import annotations

import functools
import gzip
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

from profiler_app.traces.process_memory import collector_paused

DATA = Path(__file__).resolve().parent.parent / "data"
TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "multirank_sampled/rank-1.json.gz",
    "amd_mi250_small.json.gz",
    "cpu_only_rank34.pt.trace.json.gz",
    "h100_cnn_kineto.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]
# PyTorch 1.8–1.9 category names, and what later versions call them.
LEGACY_CATEGORIES = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}
GPU_OP_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
_EPOCH_2000_NS = 946_684_800 * 10**9


def raw_trace(trace: str | Path, exact: bool = True) -> dict:
    """A trace file's JSON (a name under ``DATA`` or a path), parsed once per test session:
    floats as ``Decimal`` when ``exact``. Every caller shares it: read it, never change it."""
    return _parsed((DATA / trace).resolve(), exact)


@functools.cache
def _parsed(path: Path, exact: bool) -> dict:
    """Keyed by the resolved path: a name and a path to the same file are parsed once.

    Kept for the session, so frozen out of the garbage collector's generations: a test process
    holding a few traces' millions of dicts and lists spent a tenth of its time walking them in
    full collections (20 s of 174 s in tests/timeline and tests/insights)."""
    with collector_paused(keep=True):
        return load_json(path, exact)


def load_json(path: Path, exact: bool = True) -> dict:
    """A gzipped JSON trace, read with the garbage collector paused (its millions of
    containers hold no cycles)."""
    with collector_paused(), gzip.open(path) as f:
        return json.load(f, parse_float=Decimal) if exact else json.load(f)


def ns(value) -> int:
    return int((Decimal(value) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


@dataclass
class Expected:
    offset_ns: int
    x_count_by_category: Counter = field(default_factory=Counter)
    instant_count: int = 0
    kernel_count: Counter = field(default_factory=Counter)
    kernel_total_ns: Counter = field(default_factory=Counter)
    kernel_min_ns: dict = field(default_factory=dict)
    kernel_max_ns: dict = field(default_factory=dict)
    memcpy_bytes: Counter = field(default_factory=Counter)  # "Memcpy HtoD" / "Memset" -> bytes
    steps: list = field(default_factory=list)  # (step, start_ns, dur_ns)
    events: list = field(default_factory=list)  # (start_ns, dur_ns, name) of every X/i event
    start_ns: int = 0
    end_ns: int = 0


@functools.cache
def expected(trace: str) -> Expected:
    doc = raw_trace(trace)
    rows = []
    for event in doc["traceEvents"]:
        if event.get("ph") in ("X", "i", "I"):
            rows.append(event)
    starts = [ns(e["ts"]) for e in rows]
    base = doc.get("baseTimeNanoseconds")
    if base:
        offset = int(base)
    elif min(starts) >= _EPOCH_2000_NS:
        offset = 0
    else:
        offset = -min(starts)
    out = Expected(offset_ns=offset)
    # ROCm states a copy's size only on the runtime call that launched it (args.size).
    launch_size = {
        e["args"]["correlation"]: int(e["args"]["size"])
        for e in rows
        if e.get("cat") == "cuda_runtime" and "size" in e.get("args", {})
    }
    ends = []
    for event, start in zip(rows, starts, strict=True):
        dur = ns(event.get("dur", 0)) if event["ph"] == "X" else 0
        name = event.get("name", "")
        out.events.append((start + offset, dur, name))
        ends.append(start + offset + dur)
        if event["ph"] != "X":
            out.instant_count += 1
            continue
        category = LEGACY_CATEGORIES.get(event.get("cat", ""), event.get("cat", ""))
        if category == "cpu_op" and name.startswith("ProfilerStep#"):
            category = "user_annotation"  # PyTorch 1.8 recorded steps as operators
        out.x_count_by_category[category] += 1
        if category in GPU_OP_CATEGORIES:
            out.kernel_count[name] += 1
            out.kernel_total_ns[name] += dur
            out.kernel_min_ns[name] = min(out.kernel_min_ns.get(name, dur), dur)
            out.kernel_max_ns[name] = max(out.kernel_max_ns.get(name, dur), dur)
            args = event.get("args", {})
            nbytes = args.get("bytes", launch_size.get(args.get("correlation"), 0))
            if category == "gpu_memset":
                out.memcpy_bytes["Memset"] += nbytes
            elif category == "gpu_memcpy":
                out.memcpy_bytes[name[:11]] += nbytes
        if category == "user_annotation" and name.startswith("ProfilerStep#"):
            out.steps.append((int(name.split("#")[1]), start + offset, dur))
    out.start_ns = min(e[0] for e in out.events)
    out.end_ns = max(ends)
    out.steps.sort(key=lambda s: (s[1], s[0]))
    return out


def launched_before_last_step(events: list[dict]) -> tuple[int, set[int]]:
    """Where the trace's last host ProfilerStep starts (ns), and the correlation ids of the CUDA
    calls launched before it: the complete steps window keeps the GPU work of those."""
    last_step_ns = max(
        ns(e["ts"])
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and ns(e["ts"]) < last_step_ns
        and "correlation" in e.get("args", {})
    }
    return last_step_ns, launched


def kernel_names_by_category(trace: str) -> dict[str, set[str]]:
    doc = raw_trace(trace, exact=False)
    names: dict[str, set[str]] = defaultdict(set)
    for event in doc["traceEvents"]:
        category = LEGACY_CATEGORIES.get(event.get("cat", ""), event.get("cat"))
        if event.get("ph") == "X" and category in GPU_OP_CATEGORIES:
            names[category].add(event["name"])
    return names
