"""The app's own metrics, read from PostgreSQL and Redis at each scrape (prometheus_client's
custom-collector interface): whichever web process answers, the numbers are the same."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import redis
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, DurationField, ExpressionWrapper, F, Min, Q, Sum
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from profiler_app.core import health
from profiler_app.core.models import PartState, ProfilePart
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.metrics.reasons import failure_reason

log = logging.getLogger(__name__)

# Parse durations, seconds: a small trace takes about a second, a large rank's minutes.
PARSE_BUCKETS_S = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600)


class AppCollector:
    def collect(self) -> Iterator[Metric]:
        report = health.check()
        up = GaugeMetricFamily(
            "profiler_service_up", "1 when the service answers this web process", labels=["service"]
        )
        up.add_metric(["database"], 1 if report.database == "ok" else 0)
        up.add_metric(["redis"], 1 if report.redis == "ok" else 0)
        yield up
        yield GaugeMetricFamily(
            "profiler_workers",
            "Celery workers that answered beat's last count (HEALTH_WORKERS_SECONDS)",
            value=report.workers,
        )
        yield from _restarts()
        if report.redis == "ok":
            yield from _broker_queues()
        if report.database == "ok":
            try:
                yield from _parts()
                yield _parse_durations()
                yield _failures()
                yield _insights()
            except DatabaseError as exc:  # it went away since the ping: the up gauge says so
                log.warning("Metrics: the database failed a query: %s", exc)


def _restarts() -> Iterator[Metric]:
    """What the launcher (`profiler-app up`) started again since it started, from its run file;
    nothing where no launcher runs (a container deployment restarts its own processes)."""
    try:
        restarts = json.loads((settings.DATA_DIR / "run.json").read_text())["restarts"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    embedded = CounterMetricFamily(
        "profiler_embedded_restarts",
        "Embedded servers (PostgreSQL, Redis) the launcher started again after they stopped",
        labels=["server"],
    )
    for server in ("PostgreSQL", "Redis"):
        embedded.add_metric([server], restarts.get("embedded", {}).get(server, 0))
    yield embedded
    processes = CounterMetricFamily(
        "profiler_process_restarts",
        "The launcher's processes (web, worker, sweeper, beat) started again after they exited",
        labels=["role"],
    )
    for role, count in sorted(restarts.get("processes", {}).items()):
        processes.add_metric([role], count)
    yield processes


def _broker_queues() -> Iterator[Metric]:
    queues = GaugeMetricFamily(
        "profiler_broker_queue_messages",
        "Tasks waiting in the broker for a worker, by queue",
        labels=["queue"],
    )
    client = health.redis_client()
    try:
        for name in settings.WORKER_QUEUE_NAMES:
            queues.add_metric([name], client.llen(f"{settings.CELERY_QUEUE_PREFIX}{name}"))
    except redis.RedisError as exc:
        log.warning("Metrics: Redis failed a query: %s", exc)
        return
    finally:
        client.close()
    yield queues


def _parts() -> Iterator[Metric]:
    by_state = dict(ProfilePart.objects.order_by().values_list("state").annotate(n=Count("id")))
    parts = GaugeMetricFamily("profiler_parts", "Uploaded parts by state", labels=["state"])
    for state in PartState:
        parts.add_metric([state.value], by_state.get(state.value, 0))
    yield parts
    # A pending part's updated_at is when it started waiting: its upload, its reprocessing, or
    # its requeueing after an outage (the ingest sweep's index covers the query).
    oldest = ProfilePart.objects.filter(state=PartState.PENDING).aggregate(
        oldest=Min("updated_at")
    )["oldest"]
    yield GaugeMetricFamily(
        "profiler_parts_waiting",
        "Parts uploaded and waiting for a worker to parse them",
        value=by_state.get(PartState.PENDING.value, 0),
    )
    yield GaugeMetricFamily(
        "profiler_parts_waiting_oldest_age_seconds",
        "How long the part that has waited longest for a worker has waited (0: none waits)",
        value=0.0 if oldest is None else (timezone.now() - oldest).total_seconds(),
    )


def _parse_durations() -> Metric:
    """Parse seconds of the parsed parts the server keeps (the last parse of each)."""
    took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    within = {
        f"le_{limit}": Count("id", filter=Q(took__lte=timedelta(seconds=limit)))
        for limit in PARSE_BUCKETS_S
    }
    row = (
        ProfilePart.objects.filter(
            state=PartState.DONE, started_at__isnull=False, finished_at__isnull=False
        )
        .annotate(took=took)
        .aggregate(count=Count("id"), total=Sum("took"), **within)
    )
    buckets = [(str(float(limit)), row[f"le_{limit}"]) for limit in PARSE_BUCKETS_S]
    buckets.append(("+Inf", row["count"]))
    total = row["total"] or timedelta(0)
    return HistogramMetricFamily(
        "profiler_parse_duration_seconds",
        "Seconds each parsed part's parse took",
        buckets=buckets,
        sum_value=total.total_seconds(),
    )


def _failures() -> Metric:
    reasons: Counter[str] = Counter()
    failed = (
        ProfilePart.objects.filter(state=PartState.FAILED)
        .order_by()
        .values_list("error")
        .annotate(n=Count("id"))
    )
    for message, n in failed:
        reasons[failure_reason(message)] += n
    metric = GaugeMetricFamily(
        "profiler_parts_failed", "Parts whose parse failed, by reason", labels=["reason"]
    )
    for reason, n in sorted(reasons.items()):
        metric.add_metric([reason], n)
    return metric


def _insights() -> Metric:
    by_status = dict(
        JobInsights.objects.filter(status__in=[InsightsStatus.QUEUED, InsightsStatus.RUNNING])
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
    )
    metric = GaugeMetricFamily(
        "profiler_insights_runs", "Insights runs waiting or running, by status", labels=["status"]
    )
    for status in (InsightsStatus.QUEUED, InsightsStatus.RUNNING):
        metric.add_metric([status.value], by_status.get(status.value, 0))
    return metric
