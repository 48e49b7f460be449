"""Read-side queries over the aggregates (the views stay thin)."""

from __future__ import annotations

from collections import Counter

from django.db.models import Count, Max, Min, Q, Sum

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.ingest.figures import in_window
from profiler_app.ingest.models import KernelStat, PartSummary
from profiler_app.traces.figures import duration_std_ns


def job_summary(job: TrainingJob) -> dict:
    summaries = PartSummary.objects.filter(job=job, part__state=PartState.DONE).select_related(
        "node"
    )
    counts: Counter[str] = Counter()
    starts: list[int] = []
    ends: list[int] = []
    ranks: set[int] = set()
    nodes: set[str] = set()
    n_events = 0
    for summary in summaries:
        counts.update(summary.event_counts)
        n_events += summary.n_events
        ranks.add(summary.rank)
        nodes.add(summary.node.name)
        if summary.start_ns is not None and summary.end_ns is not None:
            starts.append(summary.start_ns)
            ends.append(summary.end_ns)
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
        "ranks": sorted(ranks),
        "nodes": sorted(nodes),
        "parts": {**parts, "total": total},
        "progress": progress / total if total else 0.0,
        "read_warnings": job.read_warnings,
    }


def job_kernels(
    job: TrainingJob, rank: int | None = None, node: str | None = None, ordering: str = "-total_ns"
) -> list[dict]:
    rows = in_window(KernelStat, job).filter(part__state=PartState.DONE)
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
            {"name": row["name"], "count": 0, "total_ns": 0, "min_ns": row["lo"], "max_ns": row["hi"],
             "sq": 0.0, "category": row["category"], "by_precision": Counter()},
        )  # fmt: skip
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
