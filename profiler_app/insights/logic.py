"""Workflows of the insights: queue a (debounced, merged) computation, compute and store it, and
read and change a job's rule overrides. What the computation reads of a job is ``inputs``.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, JSONField, Max, OuterRef, Q
from django.db.models.expressions import CombinedExpression, RawSQL
from django.utils import timezone
from kombu.exceptions import OperationalError

from profiler_app.cluster.logic import save_collective_waits
from profiler_app.core.heartbeat import Heartbeat
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.core.text import storable, storable_json
from profiler_app.insights import rank_results
from profiler_app.insights.inputs import job_data, rank_parts
from profiler_app.insights.models import InsightsStatus, JobInsights, RuleOverrides
from profiler_app.insights.pure.by_rank import judge_job
from profiler_app.insights.pure.report import profiler_report, report_json
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.lib.memory import freed_memory_kept, hand_back_freed
from profiler_app.profiles.figures import window_info
from profiler_app.traces.window import WINDOWS

log = logging.getLogger(__name__)

TASK_NAME = "profiler_app.insights.tasks.run_insights"
PREPARE_TASK = "profiler_app.insights.tasks.prepare_rank"
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
    for window in _windows(job_id):
        request_run(job_id, delay_s, window)


def _windows(job_id: int) -> list[str]:
    """The job's own window and every other that has insights."""
    windows = set(JobInsights.objects.filter(job_id=job_id).values_list("window", flat=True))
    return sorted(windows | {_own_window(job_id)})


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
    """The ingest stored a part: recompute its job's insights in each window (debounced), and
    have a worker of the parses read the part's rank for them now (``prepare_rank``)."""
    done = ProfilePart.objects.filter(id=part_id, state=PartState.DONE)
    part = done.only("job_id", "rank").first()
    if part is not None:
        request_all(part.job_id)
        _send_prepare(part.job_id, part.rank)


def _send_prepare(job_id: int, rank: int) -> None:
    """Queue ``prepare_rank``, unless another part of the rank is still to be parsed (its own
    parse asks then)."""
    if ProfilePart.objects.filter(
        job_id=job_id, rank=rank, state__in=(PartState.PENDING, PartState.PROCESSING)
    ).exists():
        return
    try:
        current_app.send_task(PREPARE_TASK, (job_id, rank))
    except OperationalError as exc:  # the insights run reads the rank itself
        log.warning("Could not queue rank %s of job %s for its insights: %s", rank, job_id, exc)


def prepare_rank(job_id: int, rank: int, window: str | None = None) -> None:
    """Read the rank's facts (``rank_results``) now, in ``window`` (None: both), with the
    job's analysis parameters, so that the job's ranks are read in parallel by the workers of
    its parses and an insights run, in either window and with any recommendation parameters,
    only judges and combines them. Best effort: on any failure the run reads the rank itself."""
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is None:
        return
    windows = WINDOWS if window is None else (window,)
    started = time.perf_counter()
    try:
        params = params_from_overrides(overrides_of(job))
        for _, parts in rank_parts(job_id, rank):
            rank_results.kept_or_read(job_id, rank, parts, params, windows)
        log.info(
            "Rank %s of job %s read for its insights (%s) in %.1f s",
            rank,
            job_id,
            ", ".join(windows),
            time.perf_counter() - started,
        )
    except Exception:
        log.exception(
            "Reading rank %s of job %s (%s) for its insights failed", rank, job_id, windows
        )
    finally:
        # What the rank's columns took goes back to the system: the worker held 630 MB after
        # a 2.8M-event rank, idle.
        hand_back_freed()


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
        overrides = overrides_of(job)
        params = params_from_overrides(overrides)
        # Each rank's columns are freed and the next rank's, as large, allocated: kept, not
        # handed back to the system and faulted in again.
        with freed_memory_kept():
            # A rank at a time (a job's ranks are never all in memory), each rank read again
            # only when it changed since a run kept its result; the job's combination too.
            kept = rank_results.job_facts(job.pk, params, window)
            # What this combination gave is stored already (a rule's parameter changed):
            # not written again (25 MB of analyses for 1,024 ranks: 0.9 s).
            held = JobInsights.objects.filter(
                job=job, window=window, analyses_key=kept.key
            ).exists()
            if not held:
                save_collective_waits(job, kept.facts.collective_waits)
            data = job_data(job, kept.facts.framework, window)
            found = judge_job(kept.facts, params)
            report = profiler_report(data, overrides, job.name, found, job.pk)
        # Names from traces may hold what Postgres refuses in text (NUL): the report quotes them.
        return {
            "status": InsightsStatus.DONE,
            "report": _json(storable_json(report_json(report))),
            **_analyses(job, window, kept, held),
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


def _analyses(
    job: TrainingJob, window: str, kept: rank_results.KeptJob, held: bool
) -> dict[str, Any]:
    """The fields that store the job's analyses, and which window they cover (as every page
    names it): written as the kept JSON text, or left as they are where the row ``held``
    them."""
    caption = storable_json(window_info(job, window))
    if held:  # unchanged where the window's caption is (the same value: not written again)
        same = RawSQL(
            "CASE WHEN analyses->'window' = %s::jsonb THEN analyses "
            "ELSE analyses || jsonb_build_object('window', %s::jsonb) END",
            (caption, caption),
            output_field=JSONField(),
        )
        return {"analyses": same}
    covers = RawSQL("jsonb_build_object('window', %s::jsonb)", (caption,), output_field=JSONField())
    return {
        "analyses": CombinedExpression(_json(kept.analyses), "||", covers, JSONField()),
        "analyses_key": kept.key,
    }


def _json(text: str) -> RawSQL:
    """JSON text written to a jsonb column as it is (Django would parse it and write it
    again)."""
    return RawSQL("%s::jsonb", (text,), output_field=JSONField())


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
