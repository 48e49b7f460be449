"""Repeated insights requests for one job merge: a burst of them while a run is queued costs
one run, one while it runs one follow-up, and the stored report reflects the last request."""

import io
import re
import time
from datetime import timedelta

import pytest
from celery import current_app
from django.conf import settings
from django.utils import timezone

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.insights import logic
from profiler_app.insights.models import InsightsStatus, JobInsights
from tests.conftest import DATA_DIR, wait_for
from tests.ingest.helpers import upload, wait_parsed

TRACE = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"
REQUESTS = 20


def runs_of(job_id: int, log_text: str) -> int:
    return len(re.findall(rf"Insights of job {job_id} \(\w+\) \w+ \(generation", log_text))


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_burst_of_requests_while_a_run_is_queued_costs_one_run(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="burst", owner=user)
    [part] = wait_parsed(upload(api, job, TRACE)["id"])
    assert part.state == PartState.DONE, part.error
    wait_for(lambda: JobInsights.objects.filter(job=job, status=InsightsStatus.DONE).exists(), 120)
    windows = set(JobInsights.objects.filter(job=job).values_list("window", flat=True))
    log = celery_worker_process.log_path
    before = runs_of(job.id, log.read_text())

    # Each request changes what the report says (a rule parameter) and wants it now, as a
    # teammate editing the parameters does. The worker takes no task meanwhile, so however
    # fast a run is (a run that reads no rank again takes a tenth of a second), they all
    # arrive while the first is queued.
    queue = f"{settings.CELERY_QUEUE_PREFIX}default"
    worker = [celery_worker_process.hostname]
    assert current_app.control.cancel_consumer(queue, destination=worker, reply=True)
    try:
        for stddev in range(1, REQUESTS + 1):
            logic.set_overrides(job, {"StepOutlier_stddev": stddev}, user)
    finally:
        assert current_app.control.add_consumer(queue, destination=worker, reply=True)
    last = JobInsights.objects.get(job=job).generation

    def settled() -> list[JobInsights] | None:
        rows = list(JobInsights.objects.filter(job=job))
        done = all(r.status == InsightsStatus.DONE and r.generation == last for r in rows)
        return rows if done else None

    rows = wait_for(settled, timeout=120, interval=0.3)
    time.sleep(logic.debounce_s() + 1)  # another run would have started by now
    assert runs_of(job.id, log.read_text()) - before == len(windows), log.read_text()[-3000:]
    for row in rows:
        outlier = next(r for r in row.report["rules"] if r["rule"] == "StepOutlier")
        assert outlier["params"]["stddev"] == REQUESTS


@pytest.mark.django_db
def test_it_queues_one_task_per_pending_run(user, monkeypatch, django_capture_on_commit_callbacks):
    """Requests while a run is queued send nothing more, whatever their delay; one while it
    runs makes its end queue exactly one follow-up."""
    sent: list[tuple[int, float]] = []
    monkeypatch.setattr(
        logic, "send_run", lambda job_id, window, countdown=0: sent.append((job_id, countdown))
    )
    monkeypatch.setattr(logic, "_compute", lambda job_id, window: {"status": InsightsStatus.DONE})
    job = TrainingJob.objects.create(name="one-task", owner=user)

    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id, delay_s=3)
        for _ in range(6):
            logic.request_run(job.id, delay_s=0)
    assert sent == [(job.id, 3)]

    claim = logic._claim(job.id, job.window)
    assert claim is not None
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            logic.request_run(job.id, delay_s=0)  # while it runs
    assert len(sent) == 1
    assert logic._claim(job.id, job.window) is None  # no second run while one runs
    with django_capture_on_commit_callbacks(execute=True):
        assert logic._finish(job.id, job.window, *claim, {"status": InsightsStatus.DONE})
    assert len(sent) == 2
    row = JobInsights.objects.get(job=job)
    assert (row.status, row.generation, row.attempts) == (InsightsStatus.QUEUED, 12, 0)

    with django_capture_on_commit_callbacks(execute=True):
        logic.compute(job.id)  # the follow-up: nothing asked for meanwhile
    assert len(sent) == 2
    assert JobInsights.objects.get(job=job).status == InsightsStatus.DONE


def pending_part(job: TrainingJob, content: bytes) -> ProfilePart:
    """A part stored and not parsed (its parse is queued only when the test commits)."""
    source = PartSource("algo-1", 0, "kineto", f"{len(content)}.json")
    return store_part(job, source, io.BytesIO(content))[0]


@pytest.mark.django_db
def test_it_waits_for_the_parts_uploaded_before_it_was_asked_for(
    user, monkeypatch, django_capture_on_commit_callbacks
):
    """A run asked for while parts of its job are pending waits with no task (each part would
    ask for another run, and a backlog of parses holds them for minutes); the request of the
    last of them sends it. A part uploaded after the request does not hold it."""
    sent: list[float] = []
    monkeypatch.setattr(
        logic, "send_run", lambda job_id, window, countdown=0: sent.append(countdown)
    )
    monkeypatch.setattr(logic, "_compute", lambda job_id, window: {"status": InsightsStatus.DONE})
    job = TrainingJob.objects.create(name="parts-coming", owner=user)
    first, second = pending_part(job, b"{}"), pending_part(job, b"{ }")

    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id)  # an earlier part parsed
    row = JobInsights.objects.get(job=job)
    assert (row.status, row.waiting_for_parts, sent) == (InsightsStatus.QUEUED, True, [])
    later = pending_part(job, b"{  }")
    ProfilePart.objects.filter(pk=later.pk).update(
        created_at=row.requested_at + timedelta(seconds=1)
    )

    ProfilePart.objects.filter(pk=first.pk).update(state=PartState.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id)  # the first parsed: the second is still to come
    assert sent == []
    ProfilePart.objects.filter(pk=second.pk).update(state=PartState.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id)
    assert sent == [logic.debounce_s()]
    assert not JobInsights.objects.get(job=job).waiting_for_parts

    with django_capture_on_commit_callbacks(execute=True):
        logic.compute(job.id)
    row = JobInsights.objects.get(job=job)
    assert (row.status, row.generation, len(sent)) == (InsightsStatus.DONE, 3, 1)


@pytest.mark.django_db
def test_a_task_finds_its_run_waiting_for_parts(
    user, monkeypatch, django_capture_on_commit_callbacks
):
    """A part reprocessed between a run's send and its start: the run waits again, with no
    task, rather than compute what that part's parse will change."""
    sent: list[float] = []
    monkeypatch.setattr(
        logic, "send_run", lambda job_id, window, countdown=0: sent.append(countdown)
    )
    monkeypatch.setattr(logic, "_compute", lambda job_id, window: {"status": InsightsStatus.DONE})
    job = TrainingJob.objects.create(name="reprocessed", owner=user)
    part = pending_part(job, b"{}")
    ProfilePart.objects.filter(pk=part.pk).update(state=PartState.DONE)
    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id, delay_s=0)
    assert sent == [0]

    ProfilePart.objects.filter(pk=part.pk).update(state=PartState.PENDING)
    with django_capture_on_commit_callbacks(execute=True):
        logic.compute(job.id)
    row = JobInsights.objects.get(job=job)
    assert (row.status, row.waiting_for_parts, sent) == (InsightsStatus.QUEUED, True, [0])


@pytest.mark.django_db
def test_the_sweep_sends_a_waiting_run_once_nothing_is_left_to_wait_for(
    user, monkeypatch, django_capture_on_commit_callbacks
):
    """A run waiting for parts is not taken for lost while they are parsed, however long; once
    none is left (here the last failed: a failed part asks for no run) the sweep sends it."""
    sent: list[int] = []
    monkeypatch.setattr(logic, "send_run", lambda job_id, window, countdown=0: sent.append(job_id))
    job = TrainingJob.objects.create(name="part-fails", owner=user)
    part = pending_part(job, b"{}")
    with django_capture_on_commit_callbacks(execute=True):
        logic.request_run(job.id)
    long_ago = timezone.now() - timedelta(seconds=settings.INGEST_STALL_SECONDS + 1)
    JobInsights.objects.filter(job=job).update(heartbeat_at=long_ago)

    assert logic.requeue_lost() == [] and sent == []
    ProfilePart.objects.filter(pk=part.pk).update(state=PartState.FAILED)
    assert logic.requeue_lost() == [job.id] and sent == [job.id]
    row = JobInsights.objects.get(job=job)
    assert (row.status, row.waiting_for_parts) == (InsightsStatus.QUEUED, False)
