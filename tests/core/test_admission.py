"""Ingest admission: while the workers are far behind, a new part is refused with 429 and
Retry-After, before its body is stored, and sent again later loses nothing; a short queue, or a
queue with no pace to judge it by, is always admitted."""

from datetime import timedelta

import pytest
from django.utils import timezone

from collector.api import ApiClient, ApiError
from profiler_app.core import admission
from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob, Upload
from tests.traces.expected import DATA
from tests.uploads import post_part

pytestmark = pytest.mark.django_db

TRACE = DATA / "cpu_only_rank34.pt.trace.json.gz"
BOUND_S = 120


@pytest.fixture
def bound(settings):
    settings.INGEST_MAX_BACKLOG_SECONDS = BOUND_S


@pytest.fixture
def job(user):
    return TrainingJob.objects.create(name="busy", owner=user)


def queue(job, waiting: int, finished: int = 0, took_s: float = 10.0, now=None) -> None:
    """``waiting`` parts pending, and ``finished`` parts that finished at ``now`` (default:
    now) after starting ``took_s`` earlier."""
    now = now or timezone.now()
    node, _ = Node.objects.get_or_create(job=job, name="algo-1")
    rows = [dict(state=PartState.PENDING) for _ in range(waiting)] + [
        dict(state=PartState.DONE, started_at=now - timedelta(seconds=took_s), finished_at=now)
        for _ in range(finished)
    ]
    start = ProfilePart.objects.count()
    ProfilePart.objects.bulk_create(
        ProfilePart(
            job=job,
            node=node,
            rank=0,
            kind="kineto",
            original_name=f"p{start + i}.json",
            size_bytes=100,
            sha256=f"queued-{start + i}",
            **fields,
        )
        for i, fields in enumerate(rows)
    )


def test_the_backlog_is_the_queue_over_the_recent_pace(job):
    now = timezone.now()
    queue(job, waiting=30, finished=4, took_s=20, now=now)
    backlog = admission.measure_backlog(now)
    assert (backlog.waiting, backlog.pace) == (30, 4 / 20)
    assert backlog.seconds == 150
    # Parts finished more than a minute ago set no pace.
    assert admission.measure_backlog(now + timedelta(seconds=61)).seconds is None


def test_a_part_finished_in_a_blink_is_not_a_pace(job):
    now = timezone.now()
    queue(job, waiting=20, finished=1, took_s=0.01, now=now)
    assert admission.measure_backlog(now).pace == 1 / admission.MIN_PACE_SPAN_S


@pytest.mark.parametrize(("backlog_s", "wait_s"), [(121, 5), (150, 30), (179.9, 59), (1000, 60)])
def test_a_refused_sender_waits_until_the_backlog_is_under_the_bound(backlog_s, wait_s):
    assert admission.retry_after_s(backlog_s, BOUND_S) == wait_s


def test_a_part_is_refused_while_the_workers_are_far_behind(api, bound, job):
    # 200 waiting at 2 parts in 10 s: 1,000 s of parsing, far over the bound.
    queue(job, waiting=200, finished=2, took_s=10)
    before = ProfilePart.objects.count()
    response = post_part(api, job, TRACE)
    assert response.status_code == 429
    assert response.json()["code"] == "ingest_busy"
    assert "busy parsing 200 parts" in response.json()["detail"]
    assert response["Retry-After"] == "60"
    assert ProfilePart.objects.count() == before  # nothing of it was stored

    started = api.post(
        f"/api/jobs/{job.id}/uploads/",
        {"node": "algo-1", "rank": 0, "kind": "kineto", "filename": "t.json", "size_bytes": 10},
        format="json",
    )
    assert (started.status_code, started.json()["code"]) == (429, "ingest_busy")
    assert not Upload.objects.exists()

    # Once the queue has drained, the same part is taken.
    ProfilePart.objects.filter(state=PartState.PENDING).update(state=PartState.DONE)
    assert post_part(api, job, TRACE).status_code == 202


@pytest.mark.parametrize(
    ("waiting", "finished"),
    [
        (20, 30),  # 20 waiting at 3 parts a second: 7 s of parsing
        (admission.ALWAYS_ADMITTED - 1, 1),  # a short queue, however slow
        (500, 0),  # nothing finished lately: no pace to judge by (idle, or no worker)
    ],
)
def test_a_part_is_taken_when_the_backlog_is_short_or_cannot_be_judged(
    api, bound, job, waiting, finished
):
    queue(job, waiting=waiting, finished=finished, took_s=10)
    assert post_part(api, job, TRACE).status_code == 202


def test_no_bound_takes_everything(api, settings, job):
    settings.INGEST_MAX_BACKLOG_SECONDS = 0
    queue(job, waiting=200, finished=2, took_s=10)
    assert post_part(api, job, TRACE).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_the_collector_is_told_to_send_again_later(live_server, api_token, bound, job):
    """The collector reads a 429 as 'try again' (its chunk stays spooled)."""
    queue(job, waiting=200, finished=2, took_s=10)
    client = ApiClient(live_server.url, api_token)
    with pytest.raises(ApiError) as refused:
        client.upload_part(job.id, TRACE.read_bytes(), TRACE.name, {"node": "algo-1", "rank": 0})
    assert (refused.value.status, refused.value.retryable) == (429, True)
    assert "try again in 60 s" in str(refused.value)
