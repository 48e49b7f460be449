"""Faults are recovered within a minute of their end: a worker killed mid-parse, an upload
finished while the broker was unreachable, an insights run lost to a broker outage, and a parse
whose bucket is unreachable (failed with the reason, its cleanup never in the way).

Real worker and beat processes run on queues of their own, with the sweep and stall periods
shortened (INGEST_SWEEP_SECONDS, INGEST_STALL_SECONDS) so the tests stay short; every wait is
for a condition, with a generous deadline."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from profiler_app.cli import WORKER_EVENTS_OFF
from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.ingest.tasks import ingest_part
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.profiles.models import KernelStat, PartSummary
from profiler_app.testing import database_url
from profiler_app.traces.window import WHOLE_TRACE, rows_in
from tests.conftest import wait_for
from tests.ingest.helpers import broker_down, upload, wait_parsed
from tests.ingest.test_robustness import GOOD, big_trace
from tests.storage.conftest import bucket, in_bucket, s3_endpoint  # noqa: F401
from tests.traces.expected import expected

PREFIX = f"recovery{os.getpid()}-"
# RECOVERY_STALL_S=30 RECOVERY_SWEEP_S=15 RECOVERY_HEARTBEAT_S=1 measure the production periods.
STALL_S = float(os.environ.get("RECOVERY_STALL_S", "3"))
SWEEP_S = os.environ.get("RECOVERY_SWEEP_S", "1")
HEARTBEAT_S = os.environ.get("RECOVERY_HEARTBEAT_S", "0.5")
DEADLINE_S = 60  # from the fault's end to the part parsed (or the run done)


def app_env() -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "PYTHONUNBUFFERED": "1",
        "CELERY_QUEUE_PREFIX": PREFIX,
        "INGEST_STALL_SECONDS": str(STALL_S),
        "INGEST_SWEEP_SECONDS": SWEEP_S,
        "INGEST_HEARTBEAT_SECONDS": HEARTBEAT_S,
        "INSIGHTS_DEBOUNCE_S": "0",
        # Beat's other entries stay out of the way.
        "IDLE_CHECK_SECONDS": "3600",
        "HEALTH_WORKERS_SECONDS": "3600",
    }


class Process:
    """A Celery worker or beat of this module's queues, in a process group of its own."""

    def __init__(self, folder: Path, role: str, name: str, ready: str) -> None:
        self.log_path = folder / f"{name}.log"
        options = {
            "worker": [
                "--queues", ",".join(PREFIX + q for q in settings.WORKER_QUEUE_NAMES),
                "--concurrency", "1",
                "--pool", "prefork",
                "--hostname", f"{name}-{os.getpid()}@%h",
                *WORKER_EVENTS_OFF,
            ],
            "beat": ["--schedule", str(folder / f"{name}-schedule")],
        }[role]  # fmt: skip
        celery = [sys.executable, "-m", "celery", "-A", "profiler_app.celery"]
        command = [*celery, role, "--loglevel", "INFO", *options]
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                command, env=app_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for(lambda: ready in self.log_path.read_text() or self.process.poll() is not None)
        assert self.process.poll() is None, self.log_path.read_text()

    def kill(self) -> None:
        """SIGKILL to the main process and its pool at once, as when a machine dies."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def start(tmp_path):
    started: list[Process] = []

    def run(role: str, name: str) -> Process:
        ready = "ready." if role == "worker" else "beat: Starting"
        started.append(Process(tmp_path, role, name, ready))
        return started[-1]

    yield run
    for process in reversed(started):
        process.stop()


def kernel_count(part_id: int) -> int:
    rows = KernelStat.objects.filter(part_id=part_id, windows__in=rows_in(WHOLE_TRACE))
    return sum(rows.values_list("count", flat=True))


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_redoes_once_a_part_whose_worker_was_killed(user, start, tmp_path):
    job = TrainingJob.objects.create(name="killed", owner=user)
    with broker_down(), big_trace(tmp_path, copies=8).open("rb") as f:  # the sweep queues it
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", "big.json.gz"), f)
    start("beat", "beat")
    first = start("worker", "first")
    wait_for(
        lambda: ProfilePart.objects.filter(id=part.id, state=PartState.PROCESSING).exists(),
        timeout=120,
        interval=0.05,
    )
    first.kill()
    killed_at = time.monotonic()
    start("worker", "second")
    (part,) = wait_parsed(part.id, timeout=120)
    recovered_s = time.monotonic() - killed_at
    print(f"worker killed: parsed {recovered_s:.1f} s after the kill")
    assert (part.state, part.error, part.parse_attempts) == (PartState.DONE, "", 2)
    assert recovered_s < DEADLINE_S
    assert PartSummary.objects.filter(part=part).count() == 1
    per_copy = sum(expected("gpu_training_rank0.pt.trace.json.gz").kernel_count.values())
    assert kernel_count(part.id) == 8 * per_copy


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_parses_an_upload_finished_while_the_broker_was_down(api, user, start):
    job = TrainingJob.objects.create(name="enqueue-lost", owner=user)
    start("beat", "beat")
    start("worker", "worker")
    with broker_down():
        part_id = upload(api, job, GOOD)["id"]
    broker_back = time.monotonic()
    (part,) = wait_parsed(part_id, timeout=120)
    recovered_s = time.monotonic() - broker_back
    print(f"enqueue lost: parsed {recovered_s:.1f} s after the broker was back")
    assert (part.state, part.error, part.parse_attempts) == (PartState.DONE, "", 1)
    assert recovered_s < DEADLINE_S
    assert kernel_count(part_id) == sum(expected(GOOD.name).kernel_count.values())


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_runs_again_insights_lost_to_a_broker_outage(user, start):
    """One job's run was never queued (the broker was down when its part was parsed); the
    other's worker died running it. Both are run again and done."""
    jobs = [TrainingJob.objects.create(name=name, owner=user) for name in ("unqueued", "dead")]
    for job in jobs:
        with broker_down(), GOOD.open("rb") as f:
            part, _ = store_part(job, PartSource("algo-1", 0, "kineto", GOOD.name), f)
            ingest_part.apply(args=[part.id])  # parsed here; its insights request is lost
    assert ProfilePart.objects.filter(job__in=jobs, state=PartState.DONE).count() == 2
    assert set(JobInsights.objects.values_list("status", flat=True)) == {InsightsStatus.QUEUED}
    long_ago = timezone.now() - timedelta(seconds=STALL_S + 1)
    JobInsights.objects.filter(job=jobs[1]).update(
        status=InsightsStatus.RUNNING, heartbeat_at=long_ago, attempts=1
    )
    start("beat", "beat")
    start("worker", "worker")
    broker_back = time.monotonic()

    def done() -> bool:
        statuses = JobInsights.objects.filter(job__in=jobs).values_list("status", flat=True)
        return set(statuses) == {InsightsStatus.DONE}

    wait_for(done, timeout=120, interval=0.3)
    recovered_s = time.monotonic() - broker_back
    print(f"insights lost: done {recovered_s:.1f} s after the broker was back")
    assert recovered_s < DEADLINE_S
    for insights in JobInsights.objects.filter(job__in=jobs):
        assert (insights.error, insights.generation) == ("", 1)
        assert insights.report


@pytest.mark.django_db
@pytest.mark.usefixtures("in_bucket")
def test_it_fails_a_part_whose_bucket_is_unreachable(user, monkeypatch, settings):
    """The raw file cannot be fetched and the parse's cleanup cannot reach the bucket either:
    the part is failed all the same, once its tries are over, with a message that says why."""
    settings.INGEST_BUCKET_RETRY_SECONDS = 2
    job = TrainingJob.objects.create(name="bucket-down", owner=user)
    with broker_down(), GOOD.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", GOOD.name), f)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # nothing listens there
    ingest_part.apply(args=[part.id])
    part.refresh_from_db()
    assert part.state == PartState.FAILED
    assert part.error.startswith(
        "This part could not be parsed: the storage bucket could not be reached (tried for 2 s; "
        f"The object store could not read {part.file.name} (Could not connect to the endpoint URL"
    ), part.error
    assert part.error.endswith(
        "Nothing of this part was changed; reprocess it once the bucket is back."
    )
