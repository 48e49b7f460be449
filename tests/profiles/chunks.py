"""Collector jobs whose chunks carry a capture report, built as the collector writes them (format
3: the collector's steps in the columns, each Kineto window as torch.profiler wrote it) and
stored and parsed through the server's path."""

from __future__ import annotations

import gzip
import io
import json

import numpy as np

from profiler_app.core.logic import PartSource, store_part
from tests.timeline.jobs import parse_stored
from tests.traces.synthetic import chunk_meta, complete_event
from tracefmt.chunk import KinetoWindow, chunk_bytes, empty_events, empty_samples
from tracefmt.kinds import EventKind

T0 = 1_700_000_000_000_000_000
STEP_NS = 10_000_000
MS = 1_000_000


def step_start(step: int) -> int:
    return T0 + step * STEP_NS


def kineto_window(steps: range, pid: int) -> KinetoWindow:
    """torch.profiler's trace of ``steps``: each step with a launch and its kernel."""
    events = []
    for step in steps:
        at = (step_start(step) - T0) / 1000  # µs after baseTimeNanoseconds
        events += [
            complete_event("user_annotation", f"ProfilerStep#{step}", at + 5, 9_990, pid, pid),
            complete_event(
                "cuda_runtime", "cudaLaunchKernel", at + 100, 10, pid, pid, correlation=step
            ),
            complete_event(
                "kernel", "gemm", at + 120, 1_000, 0, 7, device=0, stream=7, correlation=step
            ),
        ]
    trace = {"traceEvents": events, "baseTimeNanoseconds": T0}
    return KinetoWindow(gzip.compress(json.dumps(trace).encode()))


def window(first: int, last: int, kind: str, cost_ns: int) -> dict:
    return {"first_step": first, "last_step": last, "kind": kind, "cost_ns": cost_ns}


def report(
    elapsed_ns: int,
    cost_ns: int,
    steps_run: int,
    steps_captured: int,
    windows_total: int,
    windows: list[dict],
    budget_pct: float = 1.0,
    background_ns: int = 0,
) -> dict:
    return {
        "schedule": "budget",
        "budget_pct": budget_pct,
        "elapsed_ns": elapsed_ns,
        "cost_ns": cost_ns,
        "background_ns": background_ns,
        "overhead_pct": 100 * cost_ns / elapsed_ns,
        "steps_run": steps_run,
        "steps_captured": steps_captured,
        "windows_total": windows_total,
        "exceeded": 100 * cost_ns / elapsed_ns > budget_pct,
        "windows": windows,
    }


def send(job, node: str, rank: int, pid: int, seq: int, steps: range, recorded: range, capture):
    """One chunk of the process: its steps, Kineto's window over ``recorded``, and its report
    (None: a collector that writes none)."""
    events = empty_events(len(steps))
    events["ev_kind"][:] = EventKind.STEP
    events["ev_name"][:] = np.arange(1, len(steps) + 1)
    events["ev_start_ns"][:] = [step_start(s) for s in steps]
    events["ev_dur_ns"][:] = STEP_NS
    events["ev_pid"][:], events["ev_tid"][:] = pid, pid
    meta = chunk_meta(node=node, rank=rank, world_size=2, pid=pid, seq=seq, final=False)
    if capture is not None:
        meta["capture"] = capture
    data = chunk_bytes(
        meta,
        ["", *(f"step_{s}" for s in steps)],
        events,
        empty_samples(),
        [kineto_window(recorded, pid)],
    )
    name = f"capture-{node}-r{rank}-p{pid}-{seq:06d}.pcol"
    source = PartSource(node, rank, "collector", name, pid=pid)
    part, _ = store_part(job, source, io.BytesIO(data))
    parse_stored(part.id)
