"""Kept page answers (``profiler_app.profiles.answers``) in the real Redis: the Dashboard's read
again without computing a panel, replaced as soon as a part is added or stored, the job's status
changes or the viewer's window does, and computed as before when the cache is unreachable; the
Cluster page's kept per step and replaced when the collective waits are. Figures come from the
traces' raw JSON (``tests.cluster.raw``)."""

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from profiler_app.analysis.cluster import collective_waits_by_window
from profiler_app.cluster.logic import save_collective_waits
from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import JobStatus, TrainingJob
from profiler_app.insights.inputs import rank_traces
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.cluster import raw
from tests.timeline.jobs import parse_job, parse_stored
from tests.traces.expected import DATA

FIRST = "gpu_training_rank0.pt.trace.json.gz"
SECOND = "nccl_rank0.json.gz"
NO_CACHE = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
# Nothing listens on port 1: every cache call fails to connect.
UNREACHABLE = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",
    }
}
# A kept answer costs the job, the viewer's window and the key's one aggregate over the parts.
KEPT_ANSWER_QUERIES = 3

pytestmark = pytest.mark.django_db(transaction=True)


def dashboard(client, job: TrainingJob) -> dict:
    response = client.get(f"/api/jobs/{job.id}/dashboard/")
    assert response.status_code == 200, response.content
    return response.json()


def uncached(client, job: TrainingJob) -> dict:
    with override_settings(CACHES=NO_CACHE):
        return dashboard(client, job)


def test_it_keeps_the_answer_until_a_part_is_added_or_stored(api, user):
    job = parse_job(user, "kept", [("algo-1", 0, FIRST)], window=WHOLE_TRACE, status="completed")
    first = dashboard(api, job)
    assert first["totals"]["kernel_ns"] == raw.gpu_times(FIRST)["kernel_ns"]
    with CaptureQueriesContext(connection) as queries:
        again = dashboard(api, job)
    assert len(queries) == KEPT_ANSWER_QUERIES
    assert again == first == uncached(api, job)

    with (DATA / SECOND).open("rb") as stream:
        part, _ = store_part(job, PartSource("algo-1", 1, "kineto", SECOND), stream)
    waiting = dashboard(api, job)
    assert waiting["partial"] is True and first["partial"] is False
    assert waiting["totals"] == first["totals"]

    parse_stored(part.id)
    both = dashboard(api, job)
    assert both["partial"] is False
    assert both["totals"]["kernel_ns"] == sum(
        raw.gpu_times(t)["kernel_ns"] for t in (FIRST, SECOND)
    )
    assert both == uncached(api, job)


def test_it_answers_each_viewer_in_their_window(api, user, teammate, client_for):
    job = parse_job(user, "windows", [("algo-1", 0, FIRST)], window=WHOLE_TRACE)
    whole, complete = raw.gpu_times(FIRST), raw.gpu_times(FIRST, complete_steps=True)
    assert whole["kernel_ns"] != complete["kernel_ns"]
    bob = client_for(teammate)
    assert dashboard(bob, job)["totals"]["kernel_ns"] == whole["kernel_ns"]

    bob.patch(f"/api/jobs/{job.id}/", {"window": COMPLETE_STEPS}, format="json")
    assert dashboard(bob, job)["totals"]["kernel_ns"] == complete["kernel_ns"]
    assert dashboard(api, job)["totals"]["kernel_ns"] == whole["kernel_ns"]


def test_it_follows_the_jobs_status(api, user):
    job = parse_job(user, "status", [("algo-1", 0, FIRST)], status=JobStatus.COMPLETED)
    assert dashboard(api, job)["partial"] is False
    TrainingJob.objects.filter(pk=job.pk).update(status=JobStatus.IN_PROGRESS)
    assert dashboard(api, job)["partial"] is True


def test_it_answers_with_the_cache_unreachable(api, user):
    job = parse_job(user, "no-redis", [("algo-1", 0, FIRST)], window=WHOLE_TRACE)
    with override_settings(CACHES=UNREACHABLE):
        body = dashboard(api, job)
    assert body["totals"]["kernel_ns"] == raw.gpu_times(FIRST)["kernel_ns"]
    assert body == uncached(api, job)


def test_it_keeps_the_cluster_answer_per_step_until_the_waits_are_replaced(api, user):
    ranks = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]
    job = parse_job(user, "cluster", [("algo-1", 0, ranks[0]), ("algo-2", 1, ranks[1])])
    url = f"/api/jobs/{job.id}/cluster/"
    first = api.get(url).json()
    assert [r["wait_ns"] for r in first["collective_ranks"]] == [None, None]
    with CaptureQueriesContext(connection) as queries:
        again = api.get(url).json()
    assert len(queries) == KEPT_ANSWER_QUERIES + 1  # and the collective waits' stamp
    assert again == first
    one = api.get(url, {"step": 552}).json()
    assert one["step"] == 552 and one["ranks"] != first["ranks"]

    save_collective_waits(
        job, collective_waits_by_window(rank_traces(job))
    )  # as the insights task does
    rows = api.get(url).json()["collective_ranks"]
    waits = raw.collective_waits(ranks)
    assert {r["rank"]: (r["count"], r["wait_ns"], r["max_wait_ns"]) for r in rows} == waits
    assert api.get(url, {"step": 552}).json()["collective_ranks"] == rows
    with override_settings(CACHES=NO_CACHE):
        assert api.get(url).json()["collective_ranks"] == rows
