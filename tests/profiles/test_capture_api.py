"""``GET /api/jobs/<id>/capture/``: the collector's report of what profiling cost the training
and what it captured, per process and for the job.

The jobs are built of chunks as the collector writes them (format 3: the collector's steps in
the columns, each Kineto window as torch.profiler wrote it), stored and parsed through the
server's path. Every expected figure is worked out here from the reports the chunks carry.
"""

from __future__ import annotations

import pytest

from profiler_app.core.models import TrainingJob
from tests import h200
from tests.insights.converted import read_converted
from tests.profiles.chunks import MS, report, send, window
from tests.timeline.jobs import parse_job

pytestmark = pytest.mark.django_db


# Rank 0 sends its second chunk first: its latest figures are those of the higher seq.
RANK0_FIRST = report(1_000 * MS, 4 * MS, 10, 2, 1, [window(3, 4, "full", 4 * MS)])
RANK0_LATER = report(
    2_000 * MS, 30 * MS, 20, 4, 2, [window(13, 14, "gpu", 26 * MS)], background_ns=4 * MS
)
RANK1 = report(1_500 * MS, 3 * MS, 10, 2, 1, [window(5, 6, "gpu", 3 * MS)], background_ns=1 * MS)


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
        "distinct_steps_run": 20,
        "distinct_steps_captured": 6,
        "budget_pct": 1.0,
        "schedule": "budget",
        "elapsed_ns": 3_500 * MS,
        "cost_ns": 33 * MS,
        "background_ns": 5 * MS,
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


def test_it_counts_a_step_that_several_processes_ran_once(api, user, parsed_by_hand):
    # Two ranks in step: each runs steps 0–9 and records 3–6 in one window.
    job = TrainingJob.objects.create(name="in-step", owner=user)
    for node, rank, pid in (("algo-1", 0, 100), ("algo-2", 1, 200)):
        each = report(1_000 * MS, 4 * MS, 10, 4, 1, [window(3, 6, "gpu", 4 * MS)])
        send(job, node, rank, pid, 0, range(0, 10), range(3, 7), each)
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    job_steps = ("captured_steps", "distinct_steps_run", "distinct_steps_captured")
    process_sums = ("steps_run", "steps_captured", "captured_pct", "windows_total")
    assert {key: body[key] for key in job_steps} == {
        "captured_steps": "captured steps 3–6 (4 of 10)",
        "distinct_steps_run": 10,
        "distinct_steps_captured": 4,
    }
    assert {key: body[key] for key in process_sums} == {
        "steps_run": 20,
        "steps_captured": 8,
        "captured_pct": pytest.approx(40.0),
        "windows_total": 2,
    }


def test_it_counts_the_steps_of_the_h200_collector_job(api, user, parsed_by_hand, tmp_path):
    # The collector of that job wrote no report: its steps come from its chunks alone.
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-collector", chunks, "collector", owner=user)
    converted = read_converted(chunks)
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    assert (len(converted.steps), len(set(converted.captured))) == (160, 16)
    assert {key: body[key] for key in ("reported", "steps_run", "steps_captured")} == {
        "reported": False,
        "steps_run": None,
        "steps_captured": None,
    }
    assert {key: body[key] for key in ("distinct_steps_run", "distinct_steps_captured")} == {
        "distinct_steps_run": 160,
        "distinct_steps_captured": 16,
    }
    assert body["captured_steps"] == "captured steps 57–60, 177–180, 297–300, 417–420 (16 of 160)"


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
        "distinct_steps_run": 10,
        "distinct_steps_captured": 4,
        **dict.fromkeys(
            ("budget_pct", "schedule", "elapsed_ns", "cost_ns", "background_ns", "overhead_pct"),
        ),
        **dict.fromkeys(("steps_run", "steps_captured", "captured_pct", "windows_total")),
        "windows_by_kind": None,
        "exceeded": None,
        "processes": [],
    }


def test_it_names_no_captured_steps_for_an_imported_trace(api, user, parsed_by_hand):
    job = parse_job(user, "imported", [("algo-1", 0, "cpu_only_rank34.pt.trace.json.gz")])
    body = api.get(f"/api/jobs/{job.id}/capture/").json()
    assert (body["reported"], body["captured_steps"], body["processes"]) == (False, None, [])
    assert (body["distinct_steps_run"], body["distinct_steps_captured"]) == (None, None)


def test_it_requires_authentication(client_for, job):
    assert client_for(None).get(f"/api/jobs/{job.id}/capture/").status_code == 401


def test_it_shows_the_report_to_teammates(client_for, teammate, job):
    found = client_for(teammate).get(f"/api/jobs/{job.id}/capture/")
    assert found.status_code == 200 and found.json()["reported"] is True
    assert client_for(teammate).get("/api/jobs/999999/capture/").status_code == 404
