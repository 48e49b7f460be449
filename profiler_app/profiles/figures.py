"""The figures the pages show, each defined once, and the window a job's pages cover.

Every endpoint reads the aggregates through ``in_window`` (the job's rows in its window) and takes
its GPU totals from ``gpu_totals``, so the Dashboard, Kernels, Cluster, Compare and Insights
pages give one number for one figure. ``FIGURES`` is the glossary the API serves and the UI
shows in tooltips; docs/glossary.md says the same for readers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Count, Max, Min, QuerySet, Sum
from django.db.models.functions import Coalesce

from profiler_app.core.models import TrainingJob
from profiler_app.profiles.models import GpuActivity, KernelStat, PartSummary, Step
from profiler_app.traces.figures import gpu_figures, median_step_ns
from profiler_app.traces.window import (
    COMPLETE_STEPS,
    WINDOW_LABELS,
    WINDOWS,
    captured_label,
    rows_in,
)


@dataclass(frozen=True)
class Figure:
    label: str
    definition: str


FIGURES: dict[str, Figure] = {
    "kernel_runs": Figure(
        "Kernel runs",
        "Runs of GPU kernels (computation, communication and other kernels), with the waits a "
        "device stream runs (a Stream Wait Event is a computation kernel, an Event Sync an "
        "other kernel, as HTA types them); memory copies and sets are not kernels.",
    ),
    "kernel_ns": Figure(
        "Kernel time",
        "Sum of the kernels' durations; kernels running at the same time on several streams "
        "all count.",
    ),
    "gpu_op_runs": Figure(
        "GPU operations",
        "Runs of kernels, memory copies, memory sets and device-side waits (as HTA counts GPU "
        "work: everything a device stream runs).",
    ),
    "gpu_op_ns": Figure("GPU operation time", "Sum of the GPU operations' durations."),
    "compute_ns": Figure(
        "Computation kernel time",
        "Sum of the durations of computation kernels (HTA's COMP type: every kernel that is "
        "not NCCL/RCCL communication and not named as a copy, set or sync).",
    ),
    "comm_ns": Figure(
        "Communication kernel time", "Sum of the durations of NCCL/RCCL kernels (COMM)."
    ),
    "memory_ns": Figure("Memory operation time", "Sum of the durations of copies and sets."),
    "other_ns": Figure(
        "Other kernel time", "Sum of the durations of kernels named as copies or syncs (OTHER)."
    ),
    "sync_ns": Figure(
        "Synchronisation time",
        "Sum of the durations of stream and context synchronisations (cudaStreamSynchronize…); "
        "the device-side ones are GPU operations and kernels too, typed by name.",
    ),
    "gpu_active": Figure(
        "GPU active",
        "Share of the utilisation points above 0 %: measured (NVML) where the collector "
        "sampled, else derived per time bucket from the time any kernel ran.",
    ),
    "compute_busy": Figure(
        "Computation (union)",
        "Share of a rank's GPU span during which at least one computation kernel runs: "
        "overlapping kernels count once (HTA's temporal breakdown).",
    ),
    "step_time": Figure(
        "Step time",
        "The median duration of the steps the window's trace figures cover: a collector job's "
        "captured steps (those Kineto recorded), an imported trace's profiler steps in the "
        "window; all ranks' steps together. A collector job that captured no step (no Kineto "
        "window) has its annotated steps taken instead. A step is a ProfilerStep#n or step_n "
        "annotation.",
    ),
    "mean_step_ns": Figure(
        "Mean captured step",
        "The mean duration of a rank's captured steps in the window (the Cluster page's "
        "per-rank breakdown), not the step time.",
    ),
    "annotated_steps": Figure(
        "Annotated steps",
        "Every step annotation of the job in the window, captured or not: a collector times "
        "every step, Kineto records only some; the step-time distribution shows them all.",
    ),
    "over": Figure(
        "Taken over",
        "What a share of time is a share of: a collector job's captured steps (their summed "
        "duration, per GPU), else the profile's span in the window (per GPU). NVML "
        "utilisation is over the whole run, and says so.",
    ),
}

WINDOW_DEFINITIONS = {
    "whole_trace": "Every event of every part of the job.",
    COMPLETE_STEPS: "Each trace without its last profiler step, which the profiler cuts "
    "short: host events from its start on are left out, and so is every GPU operation they "
    "launched (or whose launch is not in the trace), as Holistic Trace Analysis reads traces. "
    "What the trace holds before its first step stays in. A trace with fewer than two "
    "profiler steps is whole in both windows. Events, copies, sets, launches, steps, samples "
    "and the rules' inputs are all cut at that same start. A collector job's trace figures "
    "cover the steps Kineto recorded (its captured steps) in either window: each capture is "
    "whole steps already, so the switch changes nothing; its samples cover the whole job.",
}


def in_window(model, job: TrainingJob, window: str | None = None) -> QuerySet:
    """The job's aggregate rows of ``model`` that count in ``window``: a page's is the window
    its viewer sees the job in (``TrainingJob.window_for``); None, the owner's (the insights
    run's)."""
    return model.objects.filter(job=job, windows__in=rows_in(window or job.window))


def window_info(job: TrainingJob, window: str | None = None) -> dict:
    """``window`` (None: the owner's) and how a caption names it, saying exactly what it
    holds ("complete steps: from the trace's start to step #6's start (#1–#5, 5 of 6 steps)"; a
    collector job's "captured steps 3–6, 53–56 (8 of 160)")."""
    window = window or job.window
    all_steps = Step.objects.filter(job=job).aggregate(n=Count("step", distinct=True))["n"]
    kept = in_window(Step, job, COMPLETE_STEPS).aggregate(
        n=Count("step", distinct=True), first=Min("step"), last=Max("step")
    )
    has_cut = PartSummary.objects.filter(job=job, last_step_start_ns__isnull=False).exists()
    steps_kept = kept["n"] if window == COMPLETE_STEPS else all_steps
    if is_sampled(job):
        # A collector job: its trace figures cover the steps Kineto recorded, whatever the
        # window (its parts have no profiler steps to cut); its samples, the whole job.
        numbers = _captured_steps(job)
        label, steps_kept = captured_label(numbers, all_steps), len(numbers)
    elif window != COMPLETE_STEPS:
        label = WINDOW_LABELS[window]
    elif not has_cut:
        label = "complete steps: the whole trace (fewer than two profiler steps)"
    else:
        dropped = Step.objects.filter(job=job).aggregate(last=Max("step"))["last"]
        label = (
            f"complete steps: from the trace's start to step #{dropped}'s start "
            f"(#{kept['first']}–#{kept['last']}, {kept['n']} of {all_steps} steps)"
        )
    return {
        "window": window,
        "label": label,
        "steps_total": all_steps,
        "steps_kept": steps_kept,
        "steps_dropped": (all_steps - kept["n"]) if window == COMPLETE_STEPS else 0,
        "last_step_dropped": window == COMPLETE_STEPS and has_cut,
        "switch_note": _switch_note(job, has_cut),
    }


def _switch_note(job: TrainingJob, has_cut: bool) -> str | None:
    """Why the window switch changes nothing for ``job``, or None where it does."""
    if is_sampled(job):
        return (
            "The switch changes nothing here: the profiler recorded whole steps (the captured "
            "steps), so there is no cut-short last step to leave out."
        )
    if not has_cut:
        return "The switch changes nothing here: the trace has fewer than two profiler steps."
    return None


def is_sampled(job: TrainingJob) -> bool:
    """Whether the profiler (Kineto, jax.profiler, …) recorded only some of the job's steps
    (a collector job)."""
    return Step.objects.filter(job=job, captured=False).exists()


def taken_over(job: TrainingJob, window: str) -> dict:
    """What the job's shares of GPU time are shares of (``FIGURES["over"]``): ``ns`` per GPU,
    the captured steps' summed duration (the mean over ranks) on a sampled job, else the
    profile's span in ``window``."""
    if is_sampled(job):
        captured = in_window(Step, job, window).filter(captured=True)
        per_rank = [r["ns"] for r in captured.values("rank").annotate(ns=Sum("dur_ns"))]
        steps = captured.aggregate(n=Count("step", distinct=True))["n"]
        return {
            "what": "captured steps",
            "ns": round(sum(per_rank) / len(per_rank)) if per_rank else 0,
            "steps": steps,
            "label": f"the {steps} captured steps' time",
        }
    start_ns, end_ns = span(job, window)
    steps = in_window(Step, job, window).aggregate(n=Count("step", distinct=True))["n"]
    return {
        "what": "profile span",
        "ns": (end_ns - start_ns) if start_ns is not None and end_ns is not None else 0,
        "steps": steps,
        "label": f"the profile's span ({WINDOW_LABELS[window]})",
    }


def timed_steps(job: TrainingJob, window: str) -> QuerySet:
    """The steps a job's step time is taken over (``FIGURES["step_time"]``): its captured steps
    in ``window``, or its annotated steps where it captured none (a collector job without a
    Kineto window has nothing else to time)."""
    steps = in_window(Step, job, window)
    captured = steps.filter(captured=True)
    return captured if captured.exists() else steps


def step_time(job: TrainingJob, window: str) -> dict:
    """The job's one step time (``FIGURES["step_time"]``): the median of its ``timed_steps``,
    all ranks together."""
    steps = timed_steps(job, window)
    durations = np.fromiter(steps.values_list("dur_ns", flat=True), np.int64)
    if not steps.filter(captured=True).exists():
        captured = "annotated " if durations.size else ""
    else:
        captured = "captured " if is_sampled(job) else ""
    return {
        "median_ns": median_step_ns(durations),
        "steps": len(durations),
        "label": f"median of {len(durations)} {captured}steps",
    }


@dataclass(frozen=True)
class CapturedSteps:
    """The steps Kineto recorded of a job among the steps it ran, each step number counted once
    however many processes ran or recorded it."""

    run: int
    captured: int
    # As ``window_info`` names a collector job's window: "captured steps 3–6, 53–56 (8 of 160)".
    label: str


def captured_steps(job: TrainingJob) -> CapturedSteps | None:
    """The job's ``CapturedSteps``; None for a job without steps."""
    all_steps = Step.objects.filter(job=job).aggregate(n=Count("step", distinct=True))["n"]
    if not all_steps:
        return None
    numbers = _captured_steps(job)
    return CapturedSteps(all_steps, len(numbers), captured_label(numbers, all_steps))


def _captured_steps(job: TrainingJob) -> np.ndarray:
    captured = Step.objects.filter(job=job, captured=True).values_list("step", flat=True)
    return np.fromiter(captured.distinct(), np.int64)


def span(job: TrainingJob, window: str) -> tuple[int | None, int | None]:
    """First and last nanosecond of the job's events in ``window``: complete steps end where
    each part's last profiler step starts."""
    summaries = PartSummary.objects.filter(job=job)
    end: str | Coalesce = "end_ns"
    if window == COMPLETE_STEPS:
        end = Coalesce("last_step_start_ns", "end_ns")
    found = summaries.aggregate(start=Min("start_ns"), end=Max(end))
    return found["start"], found["end"]


def gpu_totals(job: TrainingJob, window: str) -> dict[str, int]:
    """The job's GPU figures (``FIGURES``) in ``window``."""
    by_type = (
        in_window(KernelStat, job, window)
        .values("category")
        .annotate(n=Sum("count"), ns=Sum("total_ns"))
    )
    sync = in_window(GpuActivity, job, window).filter(activity="sync").aggregate(ns=Sum("total_ns"))
    return {
        **gpu_figures(
            {row["category"]: row["n"] for row in by_type},
            {row["category"]: row["ns"] for row in by_type},
        ),
        "sync_ns": int(sync["ns"] or 0),
    }


def glossary() -> dict:
    return {
        "figures": [
            {"key": k, "label": f.label, "definition": f.definition} for k, f in FIGURES.items()
        ],
        "windows": [
            {"window": w, "label": WINDOW_LABELS[w], "definition": WINDOW_DEFINITIONS[w]}
            for w in WINDOWS
        ],
    }
