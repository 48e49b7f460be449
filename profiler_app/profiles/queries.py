"""Read-side queries over the aggregates (the views stay thin)."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Max, Min, Q, Sum

from profiler_app.core.models import PartKind, PartState, TrainingJob
from profiler_app.profiles.figures import captured_steps, in_window
from profiler_app.profiles.models import KernelStat, PartSummary
from profiler_app.traces.capture import PartCapture, job_capture
from profiler_app.traces.figures import duration_std_ns
from profiler_app.traces.kineto_part import WALL_CLOCKS


def job_summary(job: TrainingJob) -> dict:
    summaries = PartSummary.objects.filter(job=job, part__state=PartState.DONE).select_related(
        "node"
    )
    counts: Counter[str] = Counter()
    starts: list[int] = []
    ends: list[int] = []
    recorded: list[int] = []
    ranks: set[int] = set()
    nodes: set[str] = set()
    world_sizes: set[int] = set()
    n_events = 0
    for summary in summaries:
        world_sizes.update(_world_size(summary.metadata))
        counts.update(summary.event_counts)
        n_events += summary.n_events
        ranks.add(summary.rank)
        nodes.add(summary.node.name)
        if summary.start_ns is not None and summary.end_ns is not None:
            starts.append(summary.start_ns)
            ends.append(summary.end_ns)
            if summary.metadata.get("clock") in WALL_CLOCKS:
                recorded.append(summary.start_ns)
    states = dict(job.parts.values_list("state").annotate(n=Count("id")))
    parts = {state: states.get(state, 0) for state in PartState.values}
    progress = job.parts.aggregate(p=Sum("progress"))["p"] or 0.0
    total = sum(parts.values())
    start = min(starts) if starts else None
    end = max(ends) if ends else None
    return {
        "job": job.pk,
        "event_counts": dict(sorted(counts.items())),
        "n_events": n_events,
        "start_ns": start,
        "end_ns": end,
        "span_ns": end - start if start is not None and end is not None else 0,
        "recorded_start_ns": min(recorded, default=None),
        "ranks": sorted(ranks),
        "world_size": max(world_sizes, default=None),
        "missing_ranks": missing_rank_ranges(max(world_sizes, default=0), ranks),
        "nodes": sorted(nodes),
        "parts": {**parts, "total": total},
        "progress": progress / total if total else 0.0,
        "read_warnings": job.read_warnings,
    }


def capture(job: TrainingJob) -> dict:
    """What profiling cost the job's training and what it captured, from the reports of its
    collector's chunks (``traces.capture.job_capture``: the processes' sums), and the steps
    Kineto recorded of the job's steps, each counted once (``figures.captured_steps``; collector
    jobs only: an imported trace is recorded whole)."""
    rows = PartSummary.objects.filter(
        job=job, part__state=PartState.DONE, part__kind=PartKind.COLLECTOR
    ).values_list("node__name", "rank", "metadata__collector", "metadata__capture")
    parts = [
        PartCapture(node, rank, collector.get("pid"), collector.get("seq") or 0, report)
        for node, rank, collector, report in rows
        if report is not None
    ]
    collector_job = job.parts.filter(kind=PartKind.COLLECTOR).exists()
    steps = captured_steps(job) if collector_job else None
    return {
        "job": job.pk,
        **job_capture(parts),
        "captured_steps": steps.label if steps else None,
        "distinct_steps_run": steps.run if steps else None,
        "distinct_steps_captured": steps.captured if steps else None,
    }


def _world_size(metadata: dict) -> set[int]:
    """The job's size as a part says it: Kineto's ``distributedInfo`` (a trace, or a collector
    chunk's windows) or the collector's own ``world_size``."""
    info = metadata.get("distributed_info") or {}
    sizes = (info.get("world_size") if isinstance(info, dict) else None, metadata.get("world_size"))
    return {int(size) for size in sizes if isinstance(size, int) and size > 0}


def missing_rank_ranges(world_size: int, ranks: set[int]) -> list[list[int]]:
    """The ranks below ``world_size`` that sent nothing, as inclusive ``[first, last]`` ranges
    (a 128-rank job with only rank 0 is ``[[1, 127]]``, not 127 numbers)."""
    ranges: list[list[int]] = []
    after = 0  # the first rank not yet accounted for
    for rank in sorted(r for r in ranks if 0 <= r < world_size):
        if rank > after:
            ranges.append([after, rank - 1])
        after = rank + 1
    if after < world_size:
        ranges.append([after, world_size - 1])
    return ranges


def job_kernels(
    job: TrainingJob,
    window: str,
    rank: int | None = None,
    node: str | None = None,
    ordering: str = "-total_ns",
) -> list[dict]:
    rows = in_window(KernelStat, job, window).filter(part__state=PartState.DONE)
    if rank is not None:
        rows = rows.filter(rank=rank)
    if node is not None:
        by_id = Q(node_id=int(node)) if node.isdigit() else Q()
        rows = rows.filter(Q(node__name=node) | by_id)
    grouped = rows.values("name", "category", "precision").annotate(
        n=Sum("count"),
        total=Sum("total_ns"),
        lo=Min("min_ns"),
        hi=Max("max_ns"),
        sq=Sum("sum_sq_ns2"),
    )
    kernels: dict[str, dict] = {}
    for row in grouped:
        k = kernels.setdefault(
            row["name"],
            {
                "name": row["name"],
                "count": 0,
                "total_ns": 0,
                "min_ns": row["lo"],
                "max_ns": row["hi"],
                "sq": 0.0,
                "category": row["category"],
                "by_precision": Counter(),
            },
        )
        k["count"] += row["n"]
        k["total_ns"] += row["total"]
        k["min_ns"] = min(k["min_ns"], row["lo"])
        k["max_ns"] = max(k["max_ns"], row["hi"])
        k["sq"] += row["sq"]
        k["by_precision"][row["precision"]] += row["total"]
    out = [_finish(k) for k in kernels.values()]
    field = ordering.lstrip("-")
    out.sort(key=lambda k: (k[field], k["name"]), reverse=ordering.startswith("-"))
    return out


def _finish(k: dict) -> dict:
    mean = k["total_ns"] / k["count"]
    std = duration_std_ns(k["count"], k["total_ns"], k.pop("sq"))
    # A name launched with several dtypes is labelled by the one it spent most time in.
    by_precision = k.pop("by_precision")
    precision = max(sorted(by_precision), key=lambda p: by_precision[p])
    return {**k, "mean_ns": mean, "std_ns": std, "precision": precision}
