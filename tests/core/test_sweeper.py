"""The recovery sweeps run on a queue of their own, which `profiler-app sweeper` consumes: a
part whose worker died is queued again even when no worker is free (here: none runs at all),
and the health check does not count the sweeper as a worker."""

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from profiler_app.celery import app as celery_app
from profiler_app.cli import role_command
from profiler_app.core.health import record_workers
from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob
from profiler_app.ingest.tasks import sweep_unfinished_parts
from profiler_app.testing import database_url
from tests.conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def sweeper(tmp_path):
    """`profiler-app sweeper`'s command, on this run's database and queues."""
    env = {**os.environ, "DATABASE_URL": database_url(settings.DATABASES["default"])}
    log_path = Path(tmp_path) / "sweeper.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            role_command("sweeper", "127.0.0.1", 0), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_for(lambda: "ready." in log_path.read_text() or process.poll() is not None)
            assert process.poll() is None, log_path.read_text()
            yield process
        finally:
            process.terminate()
            process.wait(30)


def test_the_sweeper_queues_a_dead_workers_part_again_with_no_worker_free(user, sweeper):
    job = TrainingJob.objects.create(name="worker-died", owner=user)
    node = Node.objects.create(job=job, name="algo-1")
    part = ProfilePart.objects.create(
        job=job,
        node=node,
        rank=0,
        kind="kineto",
        original_name="rank0.json",
        size_bytes=100,
        sha256="worker-died",
        state=PartState.PROCESSING,
    )
    long_ago = timezone.now() - timedelta(seconds=2 * settings.INGEST_STALL_SECONDS)
    ProfilePart.objects.filter(pk=part.pk).update(updated_at=long_ago)

    sweep_unfinished_parts.delay()  # as beat sends it: to the sweep queue
    wait_for(lambda: ProfilePart.objects.get(pk=part.pk).state == PartState.PENDING)

    # The sweeper answers the broker's ping but parses nothing: it is not counted as a worker.
    # Other tests' workers answer too, and come and go meanwhile (a busy one may also miss a
    # ping's second): the count is judged when a ping before it and one after it agree.
    def pinged() -> list[str]:
        return sorted(name for reply in celery_app.control.ping(timeout=1.0) for name in reply)

    names = pinged()
    assert sum(name.startswith(f"{settings.SWEEPER_NAME}@") for name in names) == 1, names

    def counted_without_the_sweeper():
        before, counted, after = pinged(), record_workers(), pinged()
        return before == after and counted == len(before) - 1

    wait_for(counted_without_the_sweeper, timeout=120)


def test_the_sweeps_are_routed_to_their_own_queue():
    routes = settings.CELERY_TASK_ROUTES
    for task in (
        "profiler_app.ingest.tasks.sweep_unfinished_parts",
        "profiler_app.insights.tasks.queue_missing_insights",
        "profiler_app.core.tasks.record_workers",
    ):
        assert routes[task] == {"queue": settings.CELERY_SWEEP_QUEUE}, task
    assert settings.CELERY_SWEEP_QUEUE in settings.CELERY_WORKER_QUEUES  # a lone worker too
