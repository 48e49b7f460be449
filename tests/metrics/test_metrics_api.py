"""GET /metrics: the app's gauges for a known state, scraped with the token or from an allowed
address, and refused without them."""

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from profiler_app.core.health import redis_client
from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE

pytestmark = pytest.mark.django_db

TOKEN = "scrape-me-0123456789"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_IPS = ""


def scrape(client: Client, **headers) -> dict[tuple[str, tuple], float]:
    """{(sample name, its labels sorted): value} of one scrape."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def add_part(job, name: str, state: str, **fields) -> ProfilePart:
    node, _ = Node.objects.get_or_create(job=job, name="algo-1")
    part = ProfilePart.objects.create(
        job=job, node=node, kind="trace", original_name=name, size_bytes=1000, sha256=name,
        file=f"raw/{job.pk}/{name}", state=state, **fields,
    )  # fmt: skip
    return part


@pytest.fixture
def known_state(user, parsed_by_hand):
    """2 parts waiting (the older since 10 minutes), 1 parsing, 3 parsed (2 s, 40 s, 2 hours),
    3 failed (the bucket twice, one unreadable file), 1 insights run queued and 1 running."""
    job = TrainingJob.objects.create(name="metrics", owner=user)
    now = timezone.now()
    for name in ("waiting-1", "waiting-2"):
        add_part(job, name, PartState.PENDING)
    ProfilePart.objects.filter(original_name="waiting-1").update(
        updated_at=now - timedelta(minutes=10)
    )
    add_part(job, "parsing", PartState.PROCESSING, started_at=now)
    for name, took in (("quick", 2), ("slow", 40), ("huge", 7200)):
        add_part(
            job, name, PartState.DONE,
            started_at=now - timedelta(seconds=took), finished_at=now,
        )  # fmt: skip
    bucket = (
        "This part could not be parsed: the storage bucket could not be reached (tried for 30 s; "
        "The object store could not read raw/1/x (Read timeout on endpoint URL)) Nothing of this "
        "part was changed; reprocess it once the bucket is back."
    )
    add_part(job, "bucket-a", PartState.FAILED, error=bucket)
    add_part(job, "bucket-b", PartState.FAILED, error=bucket.replace("raw/1/x", "raw/1/y"))
    add_part(job, "bad", PartState.FAILED, error="This file could not be read: not gzip")
    JobInsights.objects.create(job=job, window=WHOLE_TRACE, status=InsightsStatus.QUEUED)
    other = TrainingJob.objects.create(name="metrics-2", owner=user)
    JobInsights.objects.create(job=other, window=WHOLE_TRACE, status=InsightsStatus.RUNNING)
    JobInsights.objects.create(job=other, window=COMPLETE_STEPS, status=InsightsStatus.DONE)


@pytest.mark.usefixtures("metrics_on", "known_state")
def test_it_answers_the_apps_gauges_to_a_scraper_with_the_token():
    got = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert got[("profiler_parts_waiting", ())] == 2
    assert 600 <= got[("profiler_parts_waiting_oldest_age_seconds", ())] < 660
    assert {
        state: got[("profiler_parts", (("state", state),))]
        for state in ("pending", "processing", "done", "failed")
    } == {"pending": 2, "processing": 1, "done": 3, "failed": 3}
    assert {
        labels[0][1]: value
        for (name, labels), value in got.items()
        if name == "profiler_parts_failed"
    } == {"bucket_unreachable": 2, "unreadable_file": 1}
    buckets = {
        dict(labels)["le"]: value
        for (name, labels), value in got.items()
        if name == "profiler_parse_duration_seconds_bucket"
    }
    assert buckets == {
        "1.0": 0, "5.0": 1, "15.0": 1, "30.0": 1, "60.0": 2, "120.0": 2, "300.0": 2,
        "600.0": 2, "1800.0": 2, "3600.0": 2, "+Inf": 3,
    }  # fmt: skip
    assert got[("profiler_parse_duration_seconds_count", ())] == 3
    assert got[("profiler_parse_duration_seconds_sum", ())] == 7242
    assert got[("profiler_insights_runs", (("status", "queued"),))] == 1
    assert got[("profiler_insights_runs", (("status", "running"),))] == 1
    assert got[("profiler_service_up", (("service", "database"),))] == 1
    assert got[("profiler_service_up", (("service", "redis"),))] == 1
    # Tasks earlier tests of this run left in its queues count too: read them as the broker has them.
    client = redis_client()
    waiting = client.llen(f"{django_settings.CELERY_QUEUE_PREFIX}ingest")
    client.close()
    assert got[("profiler_broker_queue_messages", (("queue", "ingest"),))] == waiting


@pytest.mark.usefixtures("metrics_on")
def test_it_counts_requests_by_view_and_status():
    Client().get("/api/auth/me/")  # 401
    got = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    statuses = {
        dict(labels)["status"]
        for (name, labels), _ in got.items()
        if name == "django_http_responses_total_by_status_total"
    }
    assert "401" in statuses


@pytest.mark.usefixtures("metrics_on")
def test_it_refuses_a_scraper_without_the_token():
    refused = Client().get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert refused.content.decode() == (
        "Send the metrics token: Authorization: Bearer <METRICS_TOKEN>."
    )
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer guessed")
    assert wrong.status_code == 403
    assert wrong.content.decode() == "This token or address may not read the metrics."
    # Another scheme's header is no key either.
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Token {TOKEN}").status_code == 403


def test_it_answers_an_allowed_address_without_a_token(settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_IPS = "10.1.0.0/16, ::1"
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.2.0.1").get("/metrics").status_code == 403


def test_it_is_off_until_a_token_or_an_address_is_set(settings, staff):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_IPS = ""
    admin = Client()
    admin.force_login(staff)
    refused = admin.get("/metrics")
    assert refused.status_code == 403
    assert refused.content.decode() == (
        "Metrics are off: set METRICS_TOKEN or METRICS_ALLOWED_IPS to read them."
    )


@pytest.mark.usefixtures("metrics_on")
def test_it_counts_what_the_launcher_started_again(settings, tmp_path):
    from profiler_app.cli import Child, DependencyWatch, write_run_file

    settings.DATA_DIR = tmp_path  # no launcher runs here: nothing to count
    got = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert not any(name.startswith("profiler_embedded_restarts") for name, _ in got)

    watch = DependencyWatch()
    watch.restarts["PostgreSQL"] += 1
    worker, web = Child("worker", []), Child("web", [])
    worker.restarts = 2
    write_run_file(tmp_path / "run.json", {}, "http://x", [worker, web], watch)
    got = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert got[("profiler_embedded_restarts_total", (("server", "PostgreSQL"),))] == 1
    assert got[("profiler_embedded_restarts_total", (("server", "Redis"),))] == 0
    assert got[("profiler_process_restarts_total", (("role", "worker"),))] == 2
    assert got[("profiler_process_restarts_total", (("role", "web"),))] == 0
