"""Findings that explain others: one report, one story.

A GPU that waits on the host (pageable copies, the next batch, a synchronisation, kernel
launches, a busy CPU or disk) is under-used, and a larger batch would not change that: the
rules that see the under-use (LowGPUUtilization, BatchSize) then name the wait as their
``caused_by`` and point at its fix instead of at the batch size. Each wait is stated with the
figure of the rule that found it, so the two rules never quote two numbers for one thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from profiler_app.insights.pure.rules.base import RuleResult, largest_rank, of_ranks
from profiler_app.insights.pure.rules.overview import OVERALL_FRAMEWORK_METRICS, with_trace_figures


@dataclass(frozen=True)
class Wait:
    """A rule whose finding makes the GPU wait: how to state it from the rule's own figures
    (``what``, given the window the advice already named), the share of the steps it takes
    (``share_key`` of a rank's figures; None for a rule that measures no share of the steps)
    and the fix in a few words."""

    rule: str
    what: Callable[[RuleResult, str], str]
    share_key: str | None
    fix: str


def window_of(found: RuleResult) -> str:
    """The window a trace recommendation's figures cover ("" for a system rule)."""
    ranks = found.evidence.get("ranks") or {}
    return next((str(f["window"]) for f in ranks.values() if f.get("window")), "")


def _of(window: str, named: str) -> str:
    """ " of the <window>", unless the advice named that window already."""
    return f" of the {window}" if window and window != named else ""


def _copies(found: RuleResult, named: str) -> str:
    rank, figures = largest_rank(found, "pageable_pct_of_steps") or ("", {})
    if figures.get("pageable_pct_of_steps", 0.0) > found.params.get("pageable_pct", 0.0):
        return (
            f"host-to-device copies from pageable memory take "
            f"{figures['pageable_pct_of_steps']:.1f}%{_of(figures['window'], named)}"
            f"{of_ranks(found, rank)}"
        )
    rank, figures = largest_rank(found, "small_copies_per_step") or ("", {})
    return (
        f"{figures.get('small_copies_per_step', 0.0):.0f} small host-to-device copies per step"
        f"{of_ranks(found, rank)}"
    )


def _share(label: str) -> Callable[[RuleResult, str], str]:
    def stated(found: RuleResult, named: str) -> str:
        rank, figures = largest_rank(found, "share_pct") or ("", {})
        return (
            f"{label} {figures.get('share_pct', 0.0):.1f}%"
            f"{_of(str(figures.get('window', '')), named)}{of_ranks(found, rank)}"
        )

    return stated


def _launches(found: RuleResult, named: str) -> str:
    rank, figures = largest_rank(found, "gpu_idle_pct") or ("", {})
    return (
        f"{figures.get('short_pct', 0.0):.0f}% of the kernel launches are of kernels shorter "
        f"than their launch, and the GPU is idle {figures.get('gpu_idle_pct', 0.0):.0f}% of "
        f"its time{of_ranks(found, rank)}"
    )


def _bottleneck(label: str) -> Callable[[RuleResult, str], str]:
    def stated(found: RuleResult, named: str) -> str:
        return f"{label} in {found.evidence.get('bottleneck_pct', 0.0):.0f}% of the samples"

    return stated


# The waits, the ones measured as a share of the steps first (the largest of those leads).
WAITS = (
    Wait(
        "HostToDeviceCopies",
        _copies,
        "pageable_pct_of_steps",
        "pin the host memory with DataLoader(pin_memory=True) and copy with non_blocking=True",
    ),
    Wait(
        "DataLoading",
        _share("waiting for the next batch takes"),
        "share_pct",
        "load batches in parallel (more DataLoader workers, prefetching)",
    ),
    Wait(
        "Synchronization",
        _share("waiting on GPU synchronisations takes"),
        "share_pct",
        "take the synchronisations out of the loop (.item(), .cpu(), torch.cuda.synchronize())",
    ),
    Wait(
        "LaunchOverhead",
        _launches,
        None,
        "launch fewer, larger kernels (CUDA graphs, torch.compile)",
    ),
    Wait(
        "CPUBottleneck",
        _bottleneck("the CPU is busy"),
        None,
        "move pre-processing off the CPU or add cores",
    ),
    Wait(
        "IOBottleneck",
        _bottleneck("the host waits for I/O"),
        None,
        "read the data faster (local copies, more reader workers)",
    ),
)
# The rules that see an under-used GPU and would otherwise advise a larger batch.
EXPLAINED = ("LowGPUUtilization", "BatchSize")
FRAMEWORK_SUMMARY = OVERALL_FRAMEWORK_METRICS.name


def waits_found(findings: Iterable[RuleResult]) -> list[tuple[Wait, RuleResult]]:
    """The waits whose rule found an issue, the largest share of the steps first, then the
    waits measured otherwise in ``WAITS`` order."""
    by_rule = {f.rule: f for f in findings if f.triggered and f.not_evaluated_reason is None}
    found = [(wait, by_rule[wait.rule]) for wait in WAITS if wait.rule in by_rule]

    def order(item: tuple[Wait, RuleResult]) -> tuple[int, float]:
        wait, result = item
        if wait.share_key is None:
            return (1, 0.0)
        _, figures = largest_rank(result, wait.share_key) or ("", {})
        return (0, -float(figures.get(wait.share_key) or 0.0))

    return sorted(found, key=order)  # stable: WAITS order among equals


def cause_advice(rule: str, waits: list[tuple[Wait, RuleResult]]) -> str:
    """The advice of ``rule`` (one of ``EXPLAINED``) when the GPU waits on ``waits``: each
    wait in its rule's figure, the window named once, and the leading wait's fix."""
    (lead, lead_found), others = waits[0], waits[1:]
    named = window_of(lead_found)
    stated = [f"{lead.what(lead_found, '')} ({lead.rule})"]
    stated += [f"{wait.what(found, named)} ({wait.rule})" for wait, found in others]
    seen = (
        "CPU, GPU and GPU memory are lightly used, but not for want of a larger batch: the GPU"
        if rule == "BatchSize"
        else "The GPU is under-used: it"
    )
    return (
        f"{seen} waits on the host, where {'; '.join(stated)}. Fix that first, as "
        f"{lead.rule} advises: {lead.fix}. A larger batch would not keep the GPU busier while "
        "it waits."
    )


def agreeing(
    results: Iterable[RuleResult], recommendations: Iterable[RuleResult]
) -> list[RuleResult]:
    """The system rules' ``results`` told with the trace ``recommendations``: the framework
    summary states their figures (``with_trace_figures``), and each under-use finding
    (``EXPLAINED``) that a wait explains is named as caused by it (``caused_by``: the leading
    wait's rule) and advised to fix it; the short-job note of a verdict taken over few
    samples stays in front."""
    recommendations = list(recommendations)
    results = [
        with_trace_figures(found, recommendations) if found.rule == FRAMEWORK_SUMMARY else found
        for found in results
    ]
    waits = waits_found([*results, *recommendations])
    if not waits:
        return results
    explained = []
    for found in results:
        if found.rule not in EXPLAINED or not found.triggered:
            explained.append(found)
            continue
        note = (found.evidence.get("short_job") or {}).get("note")
        advice = cause_advice(found.rule, waits)
        explained.append(
            replace(
                found,
                caused_by=waits[0][0].rule,
                recommendation=f"{note} {advice}" if note else advice,
            )
        )
    return explained
