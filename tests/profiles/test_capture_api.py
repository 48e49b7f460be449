"""``GET /api/jobs/<id>/capture/``: the collector's report of what profiling cost the training
and what it captured, per process and for the job.

The jobs are built of chunks as the collector writes them (format 3: the collector's steps in
the columns, each Kineto window as torch.profiler wrote it), stored and parsed through the
server's path. Every expected figure is worked out here from the reports the chunks carry.
"""

from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pytest

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import TrainingJob
from tests.timeline.jobs import parse_job, parse_stored
from tests.traces.synthetic import chunk_meta, complete_event
from tracefmt.chunk import KinetoWindow, chunk_bytes, empty_events, empty_samples
from tracefmt.kinds import EventKind

pytestmark = pytest.mark.django_db

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
) -> dict:
    return {
        "schedule": "budget",
        "budget_pct": budget_pct,
        "elapsed_ns": elapsed_ns,
        "cost_ns": cost_ns,
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


# Rank 0 sends its second chunk first: its latest figures are those of the higher seq.
RANK0_FIRST = report(1_000 * MS, 4 * MS, 10, 2, 1, [window(3, 4, "full", 4 * MS)])
RANK0_LATER = report(2_000 * MS, 30 * MS, 20, 4, 2, [window(13, 14, "gpu", 26 * MS)])
RANK1 = report(1_500 * MS, 3 * MS, 10, 2, 1, [window(5, 6, "gpu", 3 * MS)])


@pytest.fixture
def job(user, parsed_by_hand):
    job = TrainingJob.objects.create(name="capture", owner=user)
    send(job, "algo-1", 0, 100, 1, range(10, 20), range(13, 15), RANK0_LATER)
    send(job, "algo-1", 0, 100, 0, range(0, 10), range(3, 5), RANK0_FIRST)
    send(job, "algo-2", 1, 200, 0, range(0, 10), range(5, 7), RANK1)
    return job


def test_it_totals_the_processes_latest_reports(api, job):
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    cost_ns = RANK0_LATER["cost_ns"] + RANK1["cost_ns"]
    elapsed_ns = RANK0_LATER["elapsed_ns"] + RANK1["elapsed_ns"]
    assert {k: v for k, v in body.items() if k != "processes"} == {
        "job": job.id,
        "reported": True,
        # Rank 0 recorded steps 3–4 and 13–14, rank 1 steps 5–6; the job has steps 0–19.
        "captured_steps": "captured steps 3–6, 13–14 (6 of 20)",
        "budget_pct": 1.0,
        "schedule": "budget",
        "elapsed_ns": 3_500 * MS,
        "cost_ns": 33 * MS,
        "overhead_pct": pytest.approx(100 * cost_ns / elapsed_ns),
        "steps_run": 30,
        "steps_captured": 6,
        "captured_pct": pytest.approx(20.0),
        "windows_total": 3,
        "windows_by_kind": {"gpu": 2, "full": 1, "cpu": 0},
        "exceeded": True,  # rank 0's 1.5 % is over its 1 %
    }
    assert 100 * cost_ns / elapsed_ns == pytest.approx(0.942857142857)


def test_it_gives_each_process_its_latest_figures_and_all_its_windows(api, job):
    rank0, rank1 = api.get(f"/api/jobs/{job.id}/capture/").json()["processes"]
    latest = {k: v for k, v in RANK0_LATER.items() if k != "windows"}
    assert rank0 == {
        "node": "algo-1",
        "rank": 0,
        "pid": 100,
        **latest,
        "captured_pct": pytest.approx(20.0),
        "windows": [window(3, 4, "full", 4 * MS), window(13, 14, "gpu", 26 * MS)],
        "windows_count": 2,
    }
    assert rank0["overhead_pct"] == pytest.approx(1.5) and rank0["exceeded"] is True
    assert (rank1["node"], rank1["rank"], rank1["pid"]) == ("algo-2", 1, 200)
    assert rank1["windows"] == RANK1["windows"] and rank1["exceeded"] is False


def test_it_names_no_budget_when_the_processes_differ(api, user, parsed_by_hand):
    job = TrainingJob.objects.create(name="two-budgets", owner=user)
    send(job, "algo-1", 0, 100, 0, range(0, 10), range(3, 5), RANK0_FIRST)
    other = report(1_000 * MS, 4 * MS, 10, 2, 1, [window(5, 6, "cpu", 4 * MS)], budget_pct=2.0)
    send(job, "algo-2", 1, 200, 0, range(0, 10), range(5, 7), other)
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    assert (body["budget_pct"], body["schedule"]) == (None, "budget")
    assert body["windows_by_kind"] == {"gpu": 0, "full": 1, "cpu": 1}
    assert body["exceeded"] is False


def test_it_says_when_the_collector_reported_nothing(api, user, parsed_by_hand):
    job = TrainingJob.objects.create(name="older-collector", owner=user)
    send(job, "algo-1", 0, 100, 0, range(0, 10), range(3, 7), None)
    assert api.get(f"/api/jobs/{job.id}/capture/").json() == {
        "job": job.id,
        "reported": False,
        "captured_steps": "captured steps 3–6 (4 of 10)",
        **dict.fromkeys(
            ("budget_pct", "schedule", "elapsed_ns", "cost_ns", "overhead_pct", "steps_run"),
        ),
        **dict.fromkeys(("steps_captured", "captured_pct", "windows_total", "windows_by_kind")),
        "exceeded": None,
        "processes": [],
    }


def test_it_names_no_captured_steps_for_an_imported_trace(api, user, parsed_by_hand):
    job = parse_job(user, "imported", [("algo-1", 0, "cpu_only_rank34.pt.trace.json.gz")])
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    assert (body["reported"], body["captured_steps"], body["processes"]) == (False, None, [])


def test_it_requires_authentication(client_for, job):
    assert client_for(None).get(f"/api/jobs/{job.id}/capture/").status_code == 401


def test_it_shows_the_report_to_teammates(client_for, teammate, job):
    found = client_for(teammate).get(f"/api/jobs/{job.id}/capture/")
    assert found.status_code == 200 and found.json()["reported"] is True
    assert client_for(teammate).get("/api/jobs/999999/capture/").status_code == 404
