"""Uploads parsed by a real Celery worker into Postgres; the read API against raw-JSON totals."""

from collections import Counter

import pytest

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.models import KernelStat, Step
from profiler_app.traces.window import WHOLE_TRACE, rows_in
from tests.ingest.helpers import upload, wait_parsed
from tests.traces.expected import DATA, TRACES, expected

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# rank, node, trace
JOB_PARTS = [
    (0, "algo-1", "multirank_sampled/rank-0.json.gz"),
    (1, "algo-2", "multirank_sampled/rank-1.json.gz"),
]


@pytest.fixture
def parsed_job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="sampled", owner=user)
    ids = [upload(api, job, DATA / trace, rank, node)["id"] for rank, node, trace in JOB_PARTS]
    parts = wait_parsed(*ids)
    assert [p.state for p in parts] == [PartState.DONE] * len(ids), [p.error for p in parts]
    return job


def test_it_combines_ranks_in_the_kernels_api(api, parsed_job):
    want_count: Counter[str] = Counter()
    want_total: Counter[str] = Counter()
    for _, _, trace in JOB_PARTS:
        e = expected(trace)
        want_count.update(e.kernel_count)
        want_total.update(e.kernel_total_ns)
    body = api.get(f"/api/jobs/{parsed_job.id}/kernels/").json()["kernels"]
    assert {k["name"]: k["count"] for k in body} == dict(want_count)
    assert {k["name"]: k["total_ns"] for k in body} == dict(want_total)
    assert [k["total_ns"] for k in body] == sorted((k["total_ns"] for k in body), reverse=True)
    first = body[0]
    assert first["mean_ns"] == pytest.approx(first["total_ns"] / first["count"])
    assert first["min_ns"] <= first["mean_ns"] <= first["max_ns"]
    assert {k["category"] for k in body} <= {"COMP", "COMM", "MEM", "OTHER"}
    assert all(k["precision"] for k in body)


@pytest.mark.parametrize(("query", "index"), [("rank=1", 1), ("node=algo-1", 0)])
def test_it_narrows_kernels_to_a_rank_or_node(api, parsed_job, query, index):
    want = expected(JOB_PARTS[index][2])
    body = api.get(f"/api/jobs/{parsed_job.id}/kernels/?{query}&ordering=name").json()["kernels"]
    assert [k["name"] for k in body] == sorted(want.kernel_count)
    assert {k["name"]: k["total_ns"] for k in body} == dict(want.kernel_total_ns)


def test_it_refuses_an_unknown_ordering(api, parsed_job):
    response = api.get(f"/api/jobs/{parsed_job.id}/kernels/?ordering=colour")
    assert response.status_code == 400


def test_it_summarises_the_job(api, parsed_job):
    body = api.get(f"/api/jobs/{parsed_job.id}/summary/").json()
    wants = [expected(trace) for _, _, trace in JOB_PARTS]
    assert body["ranks"] == [0, 1]
    assert body["nodes"] == ["algo-1", "algo-2"]
    assert body["parts"] == {"pending": 0, "processing": 0, "done": 2, "failed": 0, "total": 2}
    assert body["start_ns"] == min(w.start_ns for w in wants)
    assert body["end_ns"] == max(w.end_ns for w in wants)
    assert body["span_ns"] == body["end_ns"] - body["start_ns"]
    assert body["event_counts"]["kernel"] == sum(w.x_count_by_category["kernel"] for w in wants)
    assert body["event_counts"]["cpu_op"] == sum(w.x_count_by_category["cpu_op"] for w in wants)
    assert body["n_events"] == sum(len(w.events) for w in wants)
    assert body["progress"] == 1.0


def test_it_stores_steps_per_rank(parsed_job):
    for rank, _, trace in JOB_PARTS:
        rows = Step.objects.filter(job=parsed_job, rank=rank).order_by("start_ns")
        assert [(s.step, s.start_ns, s.dur_ns) for s in rows] == expected(trace).steps


def test_it_requires_authentication(client_for, parsed_job):
    anonymous = client_for(None)
    assert anonymous.get(f"/api/jobs/{parsed_job.id}/summary/").status_code == 401
    assert anonymous.get(f"/api/jobs/{parsed_job.id}/kernels/").status_code == 401


def test_it_shows_jobs_to_teammates(client_for, teammate, parsed_job):
    assert client_for(teammate).get(f"/api/jobs/{parsed_job.id}/kernels/").status_code == 200
    assert client_for(teammate).get("/api/jobs/999999/summary/").status_code == 404


@pytest.mark.parametrize("trace", TRACES)
def test_it_parses_every_shared_trace(api, user, celery_worker_process, trace):
    job = TrainingJob.objects.create(name=f"one-{trace}", owner=user)
    (part,) = wait_parsed(upload(api, job, DATA / trace)["id"])
    assert part.state == PartState.DONE, part.error
    want = expected(trace)
    rows = KernelStat.objects.filter(part=part, windows__in=rows_in(WHOLE_TRACE))
    assert sum(r.count for r in rows) == sum(want.kernel_count.values())
    assert sum(r.total_ns for r in rows) == sum(want.kernel_total_ns.values())
    summary = api.get(f"/api/jobs/{job.id}/summary/").json()
    assert summary["n_events"] == len(want.events)
