"""Workflows of the run history: series membership, a run's figures, its verdict, the webhook.

A job joins a series when it is named (the collector's ``PROFILER_SERIES``, ``profiler-collect
upload --series``, its owner on the History page) or, when nobody named one, the series named
after the job without its run suffix. Once it has ended and its parts are parsed, each run is
judged against its baseline: the series' chosen baseline, else the previous run that passed.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
import requests
from celery import current_app
from django.db import IntegrityError, transaction
from django.db.models import (
    Avg,
    Count,
    DateTimeField,
    F,
    Func,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import OperationalError

from profiler_app.analysis.part_figures import combine_part_figures
from profiler_app.cluster.compare import job_ref
from profiler_app.core.models import JobStatus, PartState, ProfilePart, TrainingJob
from profiler_app.core.text import clean_json
from profiler_app.history.models import (
    DeliveryState,
    RunVerdict,
    Series,
    SeriesRun,
    WebhookDelivery,
)
from profiler_app.history.pure.regression import (
    REGRESSION,
    RunFigures,
    Thresholds,
    Verdict,
    default_series_name,
    judge,
    unjudged,
)
from profiler_app.profiles import part_analyses
from profiler_app.profiles.figures import in_window, step_time, timed_steps
from profiler_app.profiles.models import (
    KernelStat,
    PartSummary,
    RankOverlap,
    UtilizationPoint,
)
from profiler_app.traces.figures import KERNEL_TYPES, median_step_ns
from profiler_app.traces.kineto_part import WALL_CLOCKS
from profiler_app.traces.model import DERIVED_SOURCE

log = logging.getLogger(__name__)

JUDGE_TASK = "profiler_app.history.tasks.judge_run"
JUDGE_SERIES_TASK = "profiler_app.history.tasks.judge_series"
DELIVER_TASK = "profiler_app.history.tasks.deliver_webhook"
UNFINISHED = (PartState.PENDING, PartState.PROCESSING)
# A run is judged once it has ended: a collector job in progress parses a chunk every 30 s.
ENDED = (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.STOPPED)
TOP_ROWS = 5
SWEEP_LIMIT = 100  # judged per sweep: a server upgraded with many jobs catches up over minutes
WEBHOOK_ATTEMPTS = 6
WEBHOOK_BACKOFF_S = 10  # doubled after each failed attempt: 10 s … 5 min 20 s
WEBHOOK_TIMEOUT_S = 10


class NotReady(Exception):
    """A job cannot be judged yet: its parts are being parsed, or none was parsed."""


# Membership


def assign(job: TrainingJob, name: str, chosen: bool = True) -> SeriesRun:
    """Puts ``job`` in the series ``name`` (created, owned by the job's owner, if new); the
    series it leaves goes when this was its last run."""
    with transaction.atomic():
        series, _ = Series.objects.get_or_create(name=name, defaults={"owner": job.owner})
        left = SeriesRun.objects.filter(job=job).values_list("series_id", flat=True).first()
        run, _ = SeriesRun.objects.update_or_create(
            job=job, defaults={"series": series, "chosen": chosen}
        )
        if left is not None and left != series.pk:
            remove_if_empty(left)
    return run


def remove_if_empty(series_id: int) -> None:
    """Removes the series when it has no run left: History lists only series that have runs."""
    Series.objects.filter(pk=series_id, runs__isnull=True).delete()


def on_run_deleted(sender, instance: SeriesRun, **kwargs) -> None:
    """A run went with its job (deleted by its owner, the admin or retention): in the same
    transaction, its series goes too when it was the last."""
    remove_if_empty(instance.series_id)


def membership(job: TrainingJob) -> SeriesRun:
    """The job's series run; a job nobody put in a series joins the one named after it."""
    run = SeriesRun.objects.filter(job=job).select_related("series").first()
    return run or assign(job, default_series_name(job.name), chosen=False)


# What a run is made of


def parts_ready(job: TrainingJob) -> bool:
    parts = ProfilePart.objects.filter(job=job)
    return (
        parts.filter(state=PartState.DONE).exists()
        and not parts.filter(state__in=UNFINISHED).exists()
    )


def run_figures(job: TrainingJob, window: str, keep_missing: bool = False) -> RunFigures:
    """The aggregates and the parts' operators and host waits of ``job`` in ``window`` (those
    of a part not kept yet kept when ``keep_missing``: a task, not a web request)."""
    ref = job_ref(job, window)
    steps = np.array(
        list(timed_steps(job, window).values_list("rank", "dur_ns")),
        dtype=np.int64,
    ).reshape(-1, 2)
    kernels = pd.DataFrame.from_records(
        list(
            in_window(KernelStat, job, window)
            .filter(category__in=KERNEL_TYPES)
            .values("name", "category", "precision")
            .annotate(count=Sum("count"), total_ns=Sum("total_ns"))
        ),
        columns=["name", "category", "precision", "count", "total_ns"],
    )
    overlap = in_window(RankOverlap, job, window).aggregate(
        comm=Sum("comm_ns"), overlap=Sum("overlap_ns")
    )
    operators, host_wait = _from_parts(job, window, keep_missing)
    return RunFigures(
        job_id=job.pk,
        name=job.name,
        ranks=ref["ranks"] or 0,
        rank_steps=ref["rank_steps"],
        step_ns=steps[:, 1],
        step_rank=steps[:, 0],
        step_label=step_time(job, window)["label"],
        kernels=kernels,
        operators=operators,
        comm_ns=int(overlap["comm"] or 0),
        overlap_ns=int(overlap["overlap"] or 0),
        host_wait_ns=host_wait,
    )


def _from_parts(job: TrainingJob, window: str, keep_missing: bool) -> tuple[pd.DataFrame, int]:
    """Host operators' self time and the GPU streams' host-wait idle time of the job's parts in
    ``window``, as the worker that parsed each kept them (``profiles.part_analyses``)."""
    summaries = PartSummary.objects.filter(job=job, part__state=PartState.DONE, n_events__gt=0)
    found = combine_part_figures(
        [
            part_analyses.of_part(summary, keep_missing=keep_missing)[window]
            for summary in summaries.order_by("rank", "part_id")
        ]
    )
    return found.operators, found.host_wait_ns


def summary_figures(job: TrainingJob, window: str, figures: RunFigures) -> dict[str, Any]:
    """What the History page plots for a run: step time, GPU utilisation, kernel time by type,
    top kernels and operators, each time per step per rank."""
    per = max(figures.rank_steps, 1)
    steps = figures.step_ns
    by_type = figures.kernels.groupby("category")["total_ns"].sum()
    # As int64: a run without kernels (a CPU-only job) has empty columns of no numeric dtype.
    kernel_ns = figures.kernels.groupby("name")["total_ns"].sum().astype(np.int64)
    top_kernels = kernel_ns.nlargest(TOP_ROWS)
    top_ops = figures.operators.set_index("name")["self_ns"].astype(np.int64).nlargest(TOP_ROWS)
    return {
        "window": window,
        "ranks": figures.ranks,
        "steps": len(steps),
        "rank_steps": figures.rank_steps,
        "step_p50_ns": median_step_ns(steps),
        "step_p95_ns": int(np.percentile(steps, 95)) if len(steps) else None,
        "step_per_rank": _per_rank_steps(figures),
        "gpu_util_pct": _gpu_util(job, window),
        "kernel_ns_per_step": {t: round(int(by_type.get(t, 0)) / per) for t in KERNEL_TYPES},
        "top_kernels": [{"name": n, "ns_per_step": round(v / per)} for n, v in top_kernels.items()],
        "top_operators": [{"name": n, "ns_per_step": round(v / per)} for n, v in top_ops.items()],
    }


def _per_rank_steps(figures: RunFigures) -> list[dict[str, int]]:
    """Each rank's step count, median and p95: a straggler shows here, not in the pooled ones."""
    found = []
    for rank in np.unique(figures.step_rank):
        steps = figures.step_ns[figures.step_rank == rank]
        found.append(
            {
                "rank": int(rank),
                "steps": len(steps),
                "p50_ns": int(np.median(steps)),
                "p95_ns": int(np.percentile(steps, 95)),
            }
        )
    return found


def _gpu_util(job: TrainingJob, window: str) -> float | None:
    """Mean GPU utilisation: measured (NVML) points where the job has any, else derived."""
    points = in_window(UtilizationPoint, job, window).filter(metric="gpu_util_pct")
    if points.exclude(source=DERIVED_SOURCE).exists():
        points = points.exclude(source=DERIVED_SOURCE)
    mean = points.aggregate(v=Avg("value"))["v"]
    return None if mean is None else round(mean, 2)


# Verdicts


def _ran_at(job: str):
    """When a run ran: its process's start where a collector said it, else its first event
    where its trace's clock says when (an imported trace), else its upload. A spool flushed
    days later, or last month's traces imported today, take their place among the runs they
    ran beside. ``job`` is the path to the job ("job__" from a ``SeriesRun``)."""
    first_ns = (
        PartSummary.objects.filter(job=OuterRef(f"{job}id"), metadata__clock__in=WALL_CLOCKS)
        .order_by()
        .values("job")
        .annotate(first=Min("start_ns"))
        .values("first")
    )
    # Whole microseconds, as Python's datetime keeps them.
    recorded = Func(
        Subquery(first_ns),
        template="(TIMESTAMPTZ 'epoch' + (%(expressions)s / 1000) * INTERVAL '1 microsecond')",
        output_field=DateTimeField(),
    )
    return Coalesce(f"{job}started_at", recorded, f"{job}created_at")


RAN_AT = _ran_at("job__")


def ran_at(job: TrainingJob):
    runs = TrainingJob.objects.filter(pk=job.pk).annotate(ran_at=_ran_at(""))
    return runs.values_list("ran_at", flat=True).get()


def ran_before(job: TrainingJob) -> Q:
    """The runs (annotated ``ran_at``) before ``job`` in a series' order: by when they ran, the
    first uploaded first among runs that ran at once (the same trace imported twice)."""
    at = ran_at(job)
    return Q(ran_at__lt=at) | Q(ran_at=at, job_id__lt=job.pk)


def default_baseline(job: TrainingJob, series: Series) -> TrainingJob | None:
    """The series' chosen baseline, else the latest run that ran before it and passed."""
    if series.baseline_id is not None and series.baseline_id != job.pk:
        return series.baseline
    earlier = (
        SeriesRun.objects.filter(series=series)
        .annotate(ran_at=RAN_AT)
        .filter(ran_before(job))
        .select_related("job__verdict")
        .order_by("-ran_at", "-job_id")
    )
    for run in earlier:
        verdict = getattr(run.job, "verdict", None)
        if verdict is not None and verdict.passed():
            return run.job
    return None


def verdict_of(
    job: TrainingJob,
    baseline: TrainingJob | None,
    thresholds: Thresholds,
    figures: RunFigures | None = None,
    keep_missing: bool = False,
) -> Verdict:
    """``job`` judged against ``baseline`` in the job's window (both in it); ``keep_missing``
    as ``run_figures``."""
    if not parts_ready(job):
        raise NotReady(f"Job {job.name!r} has parts still being parsed, or none parsed.")
    if baseline is None:
        return unjudged("No baseline: the series has no earlier run that passed.", thresholds)
    if not parts_ready(baseline):
        raise NotReady(f"Baseline {baseline.name!r} has parts still being parsed, or none parsed.")
    window = job.window
    run = figures or run_figures(job, window, keep_missing)
    return judge(run_figures(baseline, window, keep_missing), run, thresholds)


def judge_job(job_id: int, later_runs: bool = True) -> RunVerdict | None:
    """Stores the figures and verdict of a parsed job; announces a regression. Nothing while
    parts are still being parsed (the last one's ``part_parsed`` asks again). With
    ``later_runs``, the series' later runs whose verdict this one changes are judged again."""
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is None or not parts_ready(job):
        return None
    run = membership(job)
    series = run.series
    figures = run_figures(job, job.window, keep_missing=True)
    run.figures = clean_json(summary_figures(job, job.window, figures))
    run.save(update_fields=["figures"])
    baseline = default_baseline(job, series)
    verdict = verdict_of(job, baseline, series.thresholds(), figures, keep_missing=True)
    stored, _ = RunVerdict.objects.update_or_create(
        job=job,
        defaults={
            "baseline": baseline,
            "status": verdict.status,
            "window": job.window,
            "result": clean_json(verdict.as_dict()),
            "computed_at": timezone.now(),
        },
    )
    if verdict.status == REGRESSION and series.webhook_url and baseline is not None:
        announce(series, job, baseline, verdict)
    if later_runs:
        judge_later_runs(job, series)
    return stored


def judge_later_runs(job: TrainingJob, series: Series) -> int:
    """Judges again, oldest first, the series' later runs whose verdict ``job`` changed: those
    judged against it (its figures may be new) and those whose default baseline is now another
    run (``job`` arrived after them but ran before: a spool flushed days later). Returns how
    many."""
    later = (
        SeriesRun.objects.filter(series=series)
        .annotate(ran_at=RAN_AT)
        .exclude(ran_before(job))
        .exclude(job=job)
        .order_by("ran_at", "job_id")
        .values_list("job_id", flat=True)
    )
    judged = 0
    for run_id in later:
        run = TrainingJob.objects.select_related("verdict").filter(pk=run_id).first()
        verdict = getattr(run, "verdict", None)
        if run is None or verdict is None:
            continue  # not judged yet: it will be once parsed
        baseline = default_baseline(run, series)
        now_against = None if baseline is None else baseline.pk
        if verdict.baseline_id != job.pk and verdict.baseline_id == now_against:
            continue  # its verdict stands
        judge_job(run_id, later_runs=False)
        judged += 1
    return judged


def _needing_verdicts():
    """Ended jobs whose parts are all parsed but whose verdict is missing or older than their
    last part."""
    parsed = (
        TrainingJob.objects.filter(status__in=ENDED, parts__state=PartState.DONE)
        .exclude(parts__state__in=UNFINISHED)
        .annotate(last_part=Max("parts__finished_at"))
    )
    return parsed.filter(Q(verdict__isnull=True) | Q(verdict__computed_at__lt=F("last_part")))


def missing_verdicts(limit: int = SWEEP_LIMIT) -> list[int]:
    """Jobs the sweep judges: parsed before the run history existed, or their judging task was
    lost."""
    found = _needing_verdicts().order_by("-last_part").values_list("id", flat=True)
    return list(found.distinct()[:limit])


def rejudge_series(series: Series) -> None:
    """Queues the series' runs to be judged again (its baseline or settings changed)."""
    transaction.on_commit(lambda: current_app.send_task(JUDGE_SERIES_TASK, args=[series.pk]))


def judge_series(series_id: int) -> int:
    """Judges every run of the series again, oldest first: a run's default baseline is the
    latest earlier run that passed, so each verdict needs the earlier ones. Returns how many."""
    jobs = list(
        SeriesRun.objects.filter(series_id=series_id)
        .annotate(ran_at=RAN_AT)
        .order_by("ran_at", "job_id")
        .values_list("job_id", flat=True)
    )
    for job_id in jobs:
        judge_job(job_id, later_runs=False)
    return len(jobs)


def send_judge(job_id: int) -> None:
    """Queues the job's judging once the transaction commits. If the broker is down, the
    history sweep judges it later (it is parsed and has no verdict): the caller's work is done
    and must not fail for it."""

    def send() -> None:
        try:
            current_app.send_task(JUDGE_TASK, args=[job_id])
        except OperationalError as exc:
            log.warning(
                "Could not queue job %s to be judged (the history sweep will): %s", job_id, exc
            )

    transaction.on_commit(send)


def on_part_parsed(sender, part_id: int, **kwargs) -> None:
    """The ingest stored a part: once the run has ended and its last part is parsed, judge it."""
    part = ProfilePart.objects.filter(id=part_id).only("job_id").first()
    if part is not None and _needing_verdicts().filter(pk=part.job_id).exists():
        send_judge(part.job_id)


def on_job_saved(sender, instance: TrainingJob, created: bool, **kwargs) -> None:
    """A job's status became final after its parts were parsed (an upload's last step): judge
    it now rather than at the next sweep."""
    ended = not created and instance.status in ENDED
    if ended and _needing_verdicts().filter(pk=instance.pk).exists():
        send_judge(instance.pk)


def series_runs(series: Series):
    """A series' runs in the order they ran, with their jobs and verdicts (the History
    page)."""
    return (
        SeriesRun.objects.filter(series=series)
        .annotate(ran_at=RAN_AT)
        .select_related("job", "job__verdict", "job__verdict__baseline")
        .order_by("ran_at", "job_id")
    )


def series_with_counts():
    return (
        Series.objects.annotate(run_count=Count("runs"))
        .select_related("baseline", "owner")
        .order_by("name")
    )


# The webhook


def webhook_payload(series: Series, job: TrainingJob, baseline: TrainingJob, v: Verdict) -> dict:
    """Slack-compatible: ``text`` is what a Slack incoming webhook shows; the rest is for
    programs."""
    top = "; ".join(f"{c.name}: {c.detail}" for c in v.causes[:3]) or "no single cause found"
    text = (
        f":warning: Regression in series *{series.name}*: run *{job.name}* against "
        f"*{baseline.name}*. {v.reason} Top causes: {top}"
    )
    return clean_json(
        {
            "text": text,
            "series": series.name,
            "job": {"id": job.pk, "name": job.name},
            "baseline": {"id": baseline.pk, "name": baseline.name},
            "status": v.status,
            "change_pct": v.change_pct,
            "p_value": v.test.p_value if v.test else None,
            "causes": [
                {"kind": c.kind, "name": c.name, "delta_ns": c.delta_ns} for c in v.causes[:5]
            ],
        }
    )


def announce(series: Series, job: TrainingJob, baseline: TrainingJob, verdict: Verdict) -> None:
    """Records the delivery (once per run, baseline and URL) and queues its first attempt."""
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                series=series,
                job=job,
                baseline=baseline,
                url=series.webhook_url,
                payload=webhook_payload(series, job, baseline, verdict),
            )
    except IntegrityError:  # announced already: a verdict computed again
        return
    transaction.on_commit(lambda: current_app.send_task(DELIVER_TASK, args=[delivery.pk]))


def attempt_delivery(delivery_id: int) -> float | None:
    """One POST of a pending delivery, recorded. Returns the seconds to wait before the next
    attempt, or None when there is none (delivered, gone, or out of attempts)."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id, state=DeliveryState.PENDING).first()
    if delivery is None:
        return None
    status, error = None, ""
    try:
        response = requests.post(delivery.url, json=delivery.payload, timeout=WEBHOOK_TIMEOUT_S)
        status = response.status_code
        if status >= 300:
            error = f"HTTP {status}: {response.text[:200]}"
    except requests.RequestException as exc:
        error = f"{type(exc).__name__}: {str(exc)[:300]}"
    delivery.attempts += 1
    delivery.last_status, delivery.last_error = status, error
    # A refusal such as 404 or 403 stays a refusal: only errors that can pass are tried again.
    refused = status is not None and 400 <= status < 500 and status not in (408, 429)
    if not error:
        delivery.state, delivery.delivered_at = DeliveryState.DELIVERED, timezone.now()
    elif refused or delivery.attempts >= WEBHOOK_ATTEMPTS:
        delivery.state = DeliveryState.FAILED
    delivery.save()
    if delivery.state != DeliveryState.PENDING:
        return None
    return float(WEBHOOK_BACKOFF_S * 2 ** (delivery.attempts - 1))
