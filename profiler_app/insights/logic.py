"""Workflows of the insights: queue a (debounced, merged) computation, compute and store it, and
read and change a job's rule overrides.

The rules read the collector's raw samples (never the ingest's down-sampled points), the
ingest's Step rows and the framework time of the parsed events; the analyses read the parts'
timeline stores.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from profiler_app.cluster.logic import save_collective_waits
from profiler_app.core import storage
from profiler_app.core.heartbeat import Heartbeat
from profiler_app.core.models import PartKind, PartState, ProfilePart, TrainingJob
from profiler_app.core.text import clean_json, storable
from profiler_app.insights.models import InsightsStatus, JobInsights, RuleOverrides
from profiler_app.insights.pure import frames
from profiler_app.insights.pure.analyses import RankTrace, analyze
from profiler_app.insights.pure.analyses.events import STRING_COLUMNS
from profiler_app.insights.pure.analyses.framework import (
    framework_from_events,
    metrics_from_samples,
)
from profiler_app.insights.pure.frames import JobData
from profiler_app.insights.pure.report import profiler_report, report_json
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.recommendations import recommend
from profiler_app.insights.summaries import analyses_json
from profiler_app.profiles.figures import in_window, window_info
from profiler_app.profiles.models import PartSummary, Step, UtilizationPoint
from profiler_app.traces.model import DERIVED_SOURCE
from tracefmt.chunk import read_chunk

log = logging.getLogger(__name__)

TASK_NAME = "profiler_app.insights.tasks.run_insights"
ERROR_CHARS = 2000
# Runs the insights sweep queues again at most per run (the rest wait for the next run).
SWEEP_BATCH = 500


def debounce_s() -> float:
    """How long a request waits for more parts before computing (they often come in bursts)."""
    return settings.INSIGHTS_DEBOUNCE_S


def request_run(job_id: int, delay_s: float | None = None, window: str | None = None) -> int:
    """Ask for the job's insights in ``window`` (None: the job's own) to be computed again, in
    ``delay_s`` (the debounce by default); returns the generation asked for.

    Requests merge into one pending run: while a run is queued, it computes the latest
    generation when it starts; while one runs, it queues exactly one follow-up, due a debounce
    after it ends. N requests in a burst cost at most two runs. A run waits, with no task,
    for the job's parts uploaded before it was asked for (each would ask for another run, and a
    backlog of parses can hold them for minutes): the request of the last of them, the part
    parsed, sends it."""
    countdown = debounce_s() if delay_s is None else delay_s
    window = window or _own_window(job_id)
    with transaction.atomic():
        insights, created = JobInsights.objects.select_for_update().get_or_create(
            job_id=job_id, window=window
        )
        now = timezone.now()
        # A window's first row goes on from the job's latest request: a generation names one
        # request whatever the window (a caller waits past it across a change of window).
        start = JobInsights.objects.filter(job_id=job_id).aggregate(last=Max("generation"))
        generation = (start["last"] if created else insights.generation) + 1
        changes: dict[str, Any] = {"generation": generation}
        idle = created or insights.status in (InsightsStatus.DONE, InsightsStatus.FAILED)
        waiting = insights.status == InsightsStatus.QUEUED and insights.waiting_for_parts
        if idle:
            changes.update(status=InsightsStatus.QUEUED, attempts=0, requested_at=now)
        if idle or waiting:
            asked_at = now if idle else insights.requested_at
            if _parts_being_parsed(job_id, asked_at):
                changes.update(waiting_for_parts=True, heartbeat_at=now)
            else:
                due = now + timedelta(seconds=countdown)
                changes.update(waiting_for_parts=False, heartbeat_at=due)
                transaction.on_commit(lambda: send_run(job_id, window, countdown))
        JobInsights.objects.filter(pk=insights.pk).update(**changes)
    return generation


def request_all(job_id: int, delay_s: float | None = None) -> None:
    """The job's figures changed: recompute its own window and every other that has
    insights."""
    windows = set(JobInsights.objects.filter(job_id=job_id).values_list("window", flat=True))
    for window in sorted(windows | {_own_window(job_id)}):
        request_run(job_id, delay_s, window)


def request_if_missing(job: TrainingJob, window: str) -> None:
    """A viewer reads the insights in ``window``: queue them now if it is not the job's own
    window and has none yet (the other window gets a row only when someone needs it; the
    job's own is queued when its parts are parsed, or by the sweep, ``queue_missing``)."""
    if window == job.window or JobInsights.objects.filter(job=job, window=window).exists():
        return
    if job.parts.filter(state=PartState.DONE).exists():
        request_run(job.pk, delay_s=0, window=window)


def _own_window(job_id: int) -> str:
    return TrainingJob.objects.values_list("window", flat=True).get(pk=job_id)


def send_run(job_id: int, window: str, countdown: float = 0) -> None:
    """Queue the run now; with the broker down the insights sweep queues it later."""
    try:
        # The task name, not its function: tasks.py imports this module.
        current_app.send_task(TASK_NAME, (job_id,), {"window": window}, countdown=countdown)
    except OperationalError as exc:
        log.warning(
            "Could not queue the insights of job %s (%s; the sweep will): %s", job_id, window, exc
        )


def requeue_lost() -> list[int]:
    """Queue again the runs whose task was lost (queued while the broker was down, or held
    by a worker that died): queued or running with no sign of life for INGEST_STALL_SECONDS,
    and the runs waiting for parts that no longer wait (a part they waited for failed, or
    their send was lost). A copy of the lost task that still arrives does nothing (one task
    claims a queued run). Returns the jobs."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.INGEST_STALL_SECONDS)
    waited_for = ProfilePart.objects.filter(
        job_id=OuterRef("job_id"),
        state__in=(PartState.PENDING, PartState.PROCESSING),
        created_at__lte=OuterRef("requested_at"),
    )
    with transaction.atomic():
        lost = list(
            JobInsights.objects.select_for_update(skip_locked=True)
            .filter(status__in=(InsightsStatus.QUEUED, InsightsStatus.RUNNING))
            .filter(heartbeat_at__lt=stale)
            .filter(Q(waiting_for_parts=False) | ~Exists(waited_for))
            .order_by("heartbeat_at")
            .values_list("pk", "job_id", "window", "status")[:SWEEP_BATCH]
        )
        JobInsights.objects.filter(pk__in=[row[0] for row in lost]).update(
            status=InsightsStatus.QUEUED, heartbeat_at=now, waiting_for_parts=False
        )
    for _, job_id, window, status in lost:
        log.warning(
            "Insights of job %s (%s, %s) showed no sign of life: queued again",
            job_id,
            window,
            status,
        )
        send_run(job_id, window)
    return [row[1] for row in lost]


def queue_missing() -> list[int]:
    """Queue the insights in their own window of jobs parsed before insights existed (beat
    runs this; reading a job's pages never queues its own window)."""
    own = JobInsights.objects.filter(job=OuterRef("pk"), window=OuterRef("window"))
    jobs = list(
        TrainingJob.objects.filter(~Exists(own), parts__state=PartState.DONE)
        .values_list("pk", flat=True)
        .distinct()
    )
    for job_id in jobs:
        request_run(job_id, delay_s=0)
    return jobs


def on_part_parsed(sender, part_id: int, **kwargs) -> None:
    """The ingest stored a part: recompute its job's insights in each window (debounced)."""
    part = ProfilePart.objects.filter(id=part_id, state=PartState.DONE).only("job_id").first()
    if part is not None:
        request_all(part.job_id)


def on_window_changed(sender, job: TrainingJob, **kwargs) -> None:
    """The owner changed the job's window, everyone's default: compute its insights now if
    that window has none yet."""
    if not JobInsights.objects.filter(job=job, window=job.window).exists():
        request_run(job.pk, delay_s=0, window=job.window)


def compute(job_id: int, generation: int | None = None, window: str | None = None) -> None:
    """Run the rules and analyses on the job as it is now, in ``window`` (None: the job's
    own), and store them, if a run is queued; queue one follow-up if more was asked for
    meanwhile. ``generation``, when given, is what the caller asked for (``request_run``'s
    answer): a run computes it or a later one."""
    window = window or _own_window(job_id)
    claim = _claim(job_id, window)
    if claim is None:
        return
    latest, attempt = claim
    assert generation is None or latest >= generation, (latest, generation)
    generation = latest
    started = time.perf_counter()
    if attempt - 1 >= settings.INGEST_MAX_PARSE_ATTEMPTS:
        fields: dict[str, Any] = {
            "status": InsightsStatus.FAILED,
            "error": f"The insights run was cut short {attempt - 1} times (its worker died: "
            "out of memory, or stopped), so it is not tried again; a new part or a change of "
            "the job's window or rule parameters runs it once more.",
        }
    else:
        stamp = partial(_stamp, job_id, window, attempt)
        with Heartbeat(stamp, f"insights of job {job_id} ({window})"):
            fields = _compute(job_id, window)
    follow_up = _finish(job_id, window, generation, attempt, fields)
    log.info(
        "Insights of job %s (%s) %s (generation %s) in %.1f s%s",
        job_id,
        window,
        fields["status"],
        generation,
        time.perf_counter() - started,
        "; more was asked for meanwhile: one follow-up queued" if follow_up else "",
    )


def _claim(job_id: int, window: str) -> tuple[int, int] | None:
    """(generation, attempt) of the queued run this task starts; None when there is none (a
    copy the sweep sent, a redelivery, or a task of a run already merged into another), or
    when the run waits for the job's parts (``request_run``)."""
    with transaction.atomic():
        row = (
            JobInsights.objects.select_for_update()
            .filter(job_id=job_id, window=window, status=InsightsStatus.QUEUED)
            .values_list("generation", "attempts", "requested_at")
            .first()
        )
        if row is None:
            return None
        generation, attempt, requested_at = row[0], row[1] + 1, row[2]
        now = timezone.now()
        if _parts_being_parsed(job_id, requested_at or now):
            JobInsights.objects.filter(job_id=job_id, window=window).update(
                waiting_for_parts=True, heartbeat_at=now
            )
            return None
        JobInsights.objects.filter(job_id=job_id, window=window).update(
            status=InsightsStatus.RUNNING, heartbeat_at=now, attempts=attempt
        )
    return generation, attempt


def _parts_being_parsed(job_id: int, requested_at: datetime | None) -> bool:
    """Whether a run asked for at ``requested_at`` waits: parts of the job uploaded by then are
    still pending or being parsed. Later parts ask for a run of their own; waiting for them
    too would hold a job streaming chunks for ever."""
    return ProfilePart.objects.filter(
        job_id=job_id,
        state__in=(PartState.PENDING, PartState.PROCESSING),
        created_at__lte=requested_at or timezone.now(),
    ).exists()


def _finish(
    job_id: int, window: str, generation: int, attempt: int, fields: dict[str, Any]
) -> bool:
    """Stores a run's results; when a newer generation was asked for while it ran, the row
    goes back to queued with one follow-up task. Returns whether one was queued."""
    with transaction.atomic():
        latest = (
            JobInsights.objects.select_for_update()
            .filter(job_id=job_id, window=window, status=InsightsStatus.RUNNING, attempts=attempt)
            .values_list("generation", flat=True)
            .first()
        )
        if latest is None:  # taken for dead by the sweep and queued again: that run stores
            return False
        follow_up = latest > generation
        if follow_up:
            countdown = debounce_s()
            fields = {
                **fields,
                "status": InsightsStatus.QUEUED,
                "heartbeat_at": timezone.now() + timedelta(seconds=countdown),
                "requested_at": timezone.now(),
                "attempts": 0,
                "waiting_for_parts": False,
            }
            transaction.on_commit(lambda: send_run(job_id, window, countdown))
        JobInsights.objects.filter(job_id=job_id, window=window).update(
            computed_at=timezone.now(), **fields
        )
    return follow_up


def _stamp(job_id: int, window: str, attempt: int) -> int:
    return JobInsights.objects.filter(
        job_id=job_id, window=window, status=InsightsStatus.RUNNING, attempts=attempt
    ).update(heartbeat_at=timezone.now())


def _compute(job_id: int, window: str) -> dict[str, Any]:
    """The fields a run in ``window`` stores: its results, or the failure."""
    job = TrainingJob.objects.get(pk=job_id)
    try:
        traces = rank_traces(job)
        save_collective_waits(job, traces)
        overrides = overrides_of(job)
        params = params_from_overrides(overrides)
        analyses = analyze(traces, params, window=window) if traces else None
        found = tuple(recommend(analyses, params)) if analyses is not None else ()
        data = job_data(job, traces, window)
        report = profiler_report(data, overrides, job.name, found, job.pk)
        summary = analyses_json(analyses) if analyses is not None else {}
        # Which window these results cover, as every page names it.
        summary["window"] = window_info(job, window)
        # Names from traces may hold what Postgres refuses in text (NUL): the report quotes them.
        return {
            "status": InsightsStatus.DONE,
            "report": clean_json(report_json(report)),
            "analyses": clean_json(summary),
            "error": "",
        }
    except Exception as exc:
        log.exception("Insights of job %s (%s) failed", job_id, window)
        return {
            "status": InsightsStatus.FAILED,
            "error": storable(f"The insights could not be computed ({type(exc).__name__}: {exc}).")[
                :ERROR_CHARS
            ],
        }


def _ns(moment) -> int | None:
    """Unix nanoseconds, exactly (a float of them is off by up to a microsecond)."""
    if moment is None:
        return None
    since = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (since.days * 86_400 + since.seconds) * 1_000_000_000 + since.microseconds * 1_000


def _chunk_samples(name: str) -> tuple[dict, dict[int, int]]:
    """A collector chunk's utilisation samples and each GPU's memory in bytes (device index →
    total), read from its raw file (fetched when it is kept in a bucket)."""
    with storage.raw_file_on_disk(name) as path:
        chunk = read_chunk(path)
    samples = {n.removeprefix("s_"): c for n, c in chunk.samples.items()}
    devices = chunk.meta.get("devices") or []
    return samples, {int(d["index"]): int(d["total_memory_bytes"]) for d in devices}


def job_data(job: TrainingJob, traces: list[RankTrace], window: str | None = None) -> JobData:
    collector_parts = list(
        ProfilePart.objects.filter(job=job, kind=PartKind.COLLECTOR, state=PartState.DONE)
        .select_related("node")
        .order_by("id")
    )
    metrics = []
    for part in collector_parts:
        if not part.file.name:  # a raw file removed by retention took its samples with it
            continue
        samples, gpu_memory_bytes = _chunk_samples(part.file.name)
        metrics.append(metrics_from_samples(samples, part.node.name, gpu_memory_bytes))
    measured = pd.concat(metrics, ignore_index=True) if metrics else JobData.empty().metrics
    derived = _kernel_busy_gpu_utilization(job, measured, window)
    steps = _steps(job, window)
    framework = [framework_from_events(t) for t in traces]
    return JobData(
        pd.concat([measured, derived], ignore_index=True) if len(derived) else measured,
        steps,
        pd.concat(framework, ignore_index=True) if framework else JobData.empty().framework,
        # Only the collector knows when the training started; an imported trace starts
        # wherever profiling did.
        job_start_ns=_ns(job.started_at) if collector_parts else None,
        job_end_ns=_ns(job.ended_at) if collector_parts else None,
        gpu_util_source=frames.KERNEL_BUSY if len(derived) and not len(measured) else frames.NVML,
    )


def _kernel_busy_gpu_utilization(
    job: TrainingJob, measured: pd.DataFrame, window: str | None
) -> pd.DataFrame:
    """GPU utilisation from kernel busy time (the dashboard's series) for the GPUs that have
    no NVML samples: the GPU rules then judge an imported trace too."""
    gpu = measured[measured["metric"] == frames.GPU_UTIL]
    have = set(zip(gpu["node"], gpu["device"].astype(int), strict=True))
    rows = [
        row
        for row in in_window(UtilizationPoint, job, window)
        .filter(metric=frames.GPU_UTIL, source=DERIVED_SOURCE, part__state=PartState.DONE)
        .order_by("node__name", "device", "time_ns")
        .values_list("time_ns", "node__name", "device", "value")
        if (row[1], row[2]) not in have
    ]
    if not rows:
        return JobData.empty().metrics
    time_ns, node, device, value = (list(c) for c in zip(*rows, strict=True))
    return frames.metrics_frame(time_ns, node, device, [frames.GPU_UTIL] * len(rows), value)


def _steps(job: TrainingJob, window: str | None) -> pd.DataFrame:
    rows = list(
        in_window(Step, job, window)
        .order_by("rank", "start_ns")
        .values_list("rank", "node__name", "step", "name", "start_ns", "dur_ns")
    )
    if not rows:
        return JobData.empty().steps
    rank, node, step, name, start_ns, dur_ns = (list(column) for column in zip(*rows, strict=True))
    mode = [frames.EVAL if "eval" in n.lower() else frames.TRAIN for n in name]
    return frames.steps_frame(rank, node, step, name, start_ns, dur_ns, mode)


def rank_traces(job: TrainingJob) -> list[RankTrace]:
    """One trace per rank, merging the rank's parts (several chunks, or trace files)."""
    by_rank: dict[int, list[RankTrace]] = defaultdict(list)
    summaries = PartSummary.objects.filter(job=job, part__state=PartState.DONE, n_events__gt=0)
    for summary in summaries.order_by("rank", "part_id"):
        trace = RankTrace.from_store(summary.rank, summary.store_dir, summary.part_id)
        by_rank[summary.rank].append(trace)
    return [merge(rank, parts) for rank, parts in sorted(by_rank.items())]


def merge(rank: int, parts: list[RankTrace]) -> RankTrace:
    """The parts' events in one trace, their string ids mapped into one strings table (each
    string once: the analyses label by it)."""
    if len(parts) == 1:
        return parts[0]
    table: dict[str, int] = {}
    frames_: list[pd.DataFrame] = []
    offset = 0
    for part in parts:
        new_id = np.array([table.setdefault(s, len(table)) for s in part.strings] or [-1])
        events = part.events.copy()
        for column in STRING_COLUMNS:
            ids = events[column].to_numpy()
            events[column] = np.where(ids >= 0, new_id[np.maximum(ids, 0)], ids).astype(ids.dtype)
        parent = events["parent"].to_numpy()  # a row of the part: a label of the merged trace
        events["parent"] = np.where(parent >= 0, parent + offset, -1)
        offset += len(events)
        frames_.append(events)
    parts_ = tuple(p for part in parts for p in part.parts)
    return RankTrace(rank, pd.concat(frames_, ignore_index=True), list(table), parts_)


def job_info(job: TrainingJob, window: str | None = None) -> dict[str, str]:
    framework = f"{job.framework} {job.framework_version}".strip()
    info = {
        "Instance type": job.instance_type,
        "Instances": str(job.instance_count),
        "Framework": framework,
        "Status": job.status,
        "Window": window_info(job, window)["label"],
        "Owner": job.owner.username if job.owner is not None else "",
    }
    return {k: v for k, v in info.items() if v}


def overrides_of(job: TrainingJob) -> dict[str, Any]:
    row = RuleOverrides.objects.filter(job=job).first()
    return dict(row.params) if row else {}


def set_overrides(job: TrainingJob, params: dict[str, Any], user) -> dict[str, Any]:
    """Replace the job's overrides (ValueError naming the bad key) and recompute every window
    now."""
    params_from_overrides(params)
    RuleOverrides.objects.update_or_create(job=job, defaults={"params": params, "updated_by": user})
    request_all(job.pk, delay_s=0)
    return params
