"""The cluster page and the job comparison, read from the aggregates written at ingest."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from django.db.models import Avg, Count, Max, Min, Sum

from profiler_app.cluster.models import CollectiveWait
from profiler_app.core.models import TrainingJob
from profiler_app.ingest.figures import gpu_totals, in_window, span, window_info
from profiler_app.ingest.models import (
    Annotation,
    CollectiveStat,
    KernelStat,
    PartSummary,
    RankOverlap,
    Step,
    StepBreakdown,
    UtilizationPoint,
)
from profiler_app.insights.analyses import cluster as analysis
from profiler_app.traces.figures import KERNEL_TYPES, gpu_figures

BREAKDOWN = ["dur_ns", "gap_ns", "compute_ns", "tail_ns", "comm_ns", "sync_wait_ns"]
# Per-rank values the slow-rank rule looks at.
SLOW_METRICS = {"compute_ns": "compute", "gap_ns": "iteration gap"}
DIFF_ROWS = 200


def cluster(job: TrainingJob, step: int | None) -> dict:
    steps = _step_frame(job)
    chosen = steps if step is None else steps[steps["step"] == step]
    ranks = _rank_rows(chosen, _overlap(job))
    return {
        "job": job.id,
        "window": window_info(job),
        "totals": gpu_totals(job),
        "step": step,
        "steps": sorted(steps["step"].unique().tolist()),
        "steps_inferred": bool(steps["inferred"].any()),
        "ranks": ranks.to_dict("records"),
        "slow": slow_findings(ranks),
        "rule": {
            "robust_z_threshold": analysis.ROBUST_Z_THRESHOLD,
            "mad_zero_ratio": analysis.MAD_ZERO_RATIO,
            "min_excess": analysis.MIN_EXCESS,
        },
        "collectives": collectives(job),
        "collective_ranks": collective_ranks(job),
        "devices": devices(job),
    }


def _step_frame(job: TrainingJob) -> pd.DataFrame:
    rows = in_window(StepBreakdown, job).values_list(
        "rank", "node__name", "step", "inferred", "start_ns", "dur_ns", "gap_ns", "compute_ns",
        "tail_ns", "comm_ns",
    )  # fmt: skip
    columns = ["rank", "node", "step", "inferred", "start_ns", *BREAKDOWN[:-1]]
    frame = pd.DataFrame.from_records(list(rows), columns=columns)
    frame["sync_wait_ns"] = analysis.sync_wait(frame) if len(frame) else 0
    return frame


def _overlap(job: TrainingJob) -> pd.DataFrame:
    rows = (
        in_window(RankOverlap, job)
        .values("rank")
        .annotate(comm_total_ns=Sum("comm_ns"), overlap_ns=Sum("overlap_ns"))
    )
    return pd.DataFrame.from_records(list(rows), columns=["rank", "comm_total_ns", "overlap_ns"])


def _rank_rows(steps: pd.DataFrame, overlap: pd.DataFrame) -> pd.DataFrame:
    """Per rank: the mean of each step quantity over the chosen steps, and the step window."""
    if steps.empty:
        return pd.DataFrame(columns=["rank", "node", "steps", *BREAKDOWN, "start_ns", "end_ns",
                                     "comm_total_ns", "overlap_ns", "overlap_pct"])  # fmt: skip
    end = steps["start_ns"] + steps["dur_ns"]
    grouped = steps.assign(end_ns=end).groupby(["rank", "node"], sort=True)
    table = grouped[BREAKDOWN].mean().round().astype(np.int64)
    table["steps"] = grouped.size()
    table["start_ns"] = grouped["start_ns"].min().astype(str)
    table["end_ns"] = grouped["end_ns"].max().astype(str)
    table = table.reset_index().merge(overlap, on="rank", how="left")
    table[["comm_total_ns", "overlap_ns"]] = (
        table[["comm_total_ns", "overlap_ns"]].fillna(0).astype(np.int64)
    )
    table["overlap_pct"] = [
        round(100.0 * o / c, 2) if c > 0 else None
        for o, c in zip(table["overlap_ns"], table["comm_total_ns"], strict=True)
    ]
    return table


def slow_findings(ranks: pd.DataFrame) -> list[dict]:
    """Ranks and nodes whose compute or iteration gap is a slow outlier (``slow_outliers``)."""
    findings: list[dict] = []
    if ranks.empty:
        return findings
    nodes = ranks.groupby("node", sort=True)[list(SLOW_METRICS)].mean()
    for metric, label in SLOW_METRICS.items():
        for scope, keys, values in (
            ("rank", ranks["rank"].tolist(), ranks[metric].to_numpy()),
            ("node", nodes.index.tolist(), nodes[metric].to_numpy()),
        ):
            found = analysis.slow_outliers(values)
            for at in np.flatnonzero(found.flagged):
                findings.append(
                    {
                        "scope": scope,
                        "key": str(keys[at]),
                        "metric": metric,
                        "label": label,
                        "value_ns": int(values[at]),
                        "median_ns": int(found.median),
                        "robust_z": None if found.mad == 0 else round(float(found.robust_z[at]), 2),
                        "ratio": round(float(values[at]) / found.median, 3)
                        if found.median
                        else None,
                    }
                )
    return findings


def collectives(job: TrainingJob) -> list[dict]:
    """Per collective and group size over all ranks, with algorithmic and bus bandwidth
    (bytes / ns = GB/s) over the calls whose message size is known."""
    rows = (
        in_window(CollectiveStat, job)
        .values("collective", "group_size")
        .annotate(
            count=Sum("count"), total_ns=Sum("total_ns"), min_ns=Min("min_ns"),
            max_ns=Max("max_ns"), sized_ns=Sum("sized_ns"), bytes=Sum("bytes"),
            ranks=Count("rank", distinct=True),
        )
        .order_by("-total_ns", "collective")
    )  # fmt: skip
    out = []
    for found in rows:
        row: dict = dict(found)
        algbw = row["bytes"] / row["sized_ns"] if row["sized_ns"] else None
        factor = analysis.bus_factor(row["collective"], row["group_size"])
        row["mean_ns"] = row["total_ns"] // max(row["count"], 1)
        row["algbw_gbps"] = _rounded(algbw)
        row["bus_factor"] = _rounded(factor)
        row["busbw_gbps"] = _rounded(algbw * factor if algbw is not None and factor else None)
        out.append(row)
    return out


def collective_ranks(job: TrainingJob) -> list[dict]:
    """Per rank and collective in the job's window: calls, time, bytes, and the time spent
    waiting for the other ranks (null where it is not derivable, see
    ``analysis.collective_waits_by_window``)."""
    waits = {
        (w.rank, w.collective): w
        for w in in_window(CollectiveWait, job).only("rank", "collective", "wait_ns",
                                                     "max_wait_ns")
    }  # fmt: skip
    rows = []
    for found in (
        in_window(CollectiveStat, job)
        .values("rank", "collective")
        .annotate(count=Sum("count"), total_ns=Sum("total_ns"), bytes=Sum("bytes"))
        .order_by("rank", "collective")
    ):
        wait = waits.get((found["rank"], found["collective"]))
        rows.append(
            {
                **found,
                "wait_ns": None if wait is None else wait.wait_ns,
                "max_wait_ns": None if wait is None else wait.max_wait_ns,
            }
        )
    return rows


def devices(job: TrainingJob) -> list[dict]:
    """Per rank and GPU: kernel time (kernels only, as ``FIGURES`` defines it) and its
    computation and communication parts, memory operation time, peak memory where sampled,
    device name."""
    table: dict[tuple, dict[str, dict[str, int]]] = {}
    kernels = (
        in_window(KernelStat, job)
        .values("rank", "node__name", "device", "category")
        .annotate(runs=Sum("count"), total_ns=Sum("total_ns"))
    )
    for row in kernels:
        key = (row["rank"], row["node__name"], row["device"])
        entry = table.setdefault(key, {"runs": {}, "ns": {}})
        entry["runs"][row["category"]] = row["runs"]
        entry["ns"][row["category"]] = row["total_ns"]
    peaks = {
        (r["node__name"], r["device"]): r["peak"]
        for r in in_window(UtilizationPoint, job)
        .filter(metric="gpu_mem_used_bytes")
        .values("node__name", "device")
        .annotate(peak=Max("value"))
    }
    properties = _device_properties(job)
    out = []
    for (rank, node, device), by_category in sorted(table.items()):
        figures = gpu_figures(by_category["runs"], by_category["ns"])
        props = properties.get((rank, device), {})
        peak = peaks.get((node, device))
        out.append(
            {
                "rank": rank,
                "node": node,
                "device": device,
                "name": str(props.get("name", "")),
                "memory_bytes": props.get("totalGlobalMem"),
                "peak_memory_bytes": None if peak is None else int(peak),
                **{k: figures[k] for k in ("kernel_ns", "compute_ns", "comm_ns", "memory_ns")},
                "flops": None,
            }
        )
    return out


def _device_properties(job: TrainingJob) -> dict[tuple[int, int], dict]:
    found = {}
    for rank, metadata in PartSummary.objects.filter(job=job).values_list("rank", "metadata"):
        for props in (metadata or {}).get("device_properties") or []:
            if isinstance(props, dict) and "id" in props:
                found[(rank, int(props["id"]))] = props
    return found


def _rounded(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)


def compare(a: TrainingJob, b: TrainingJob) -> dict:
    """What changed from job A to job B: kernels and annotations (added, removed, time and count
    change), step time, headline metrics, and per-rank step breakdown."""
    kernels = analysis.diff(_kernels(a), _kernels(b))
    annotations = analysis.diff(_annotations(a), _annotations(b))
    return {
        "a": {"id": a.id, "name": a.name, "window": window_info(a)},
        "b": {"id": b.id, "name": b.name, "window": window_info(b)},
        "kernels": _diff_section(kernels),
        "annotations": _diff_section(annotations),
        "steps": {"a": step_stats(a), "b": step_stats(b)},
        "metrics": _metric_rows(metrics(a), metrics(b)),
        "ranks": _rank_pairs(a, b),
    }


def _kernels(job: TrainingJob) -> pd.DataFrame:
    """Kernels only (no copies or sets), so the panel's total change is that of "Kernel time"."""
    rows = (
        in_window(KernelStat, job)
        .filter(category__in=KERNEL_TYPES)
        .values("name")
        .annotate(count=Sum("count"), total_ns=Sum("total_ns"))
    )
    return pd.DataFrame.from_records(list(rows), columns=["name", "count", "total_ns"])


def _annotations(job: TrainingJob) -> pd.DataFrame:
    rows = (
        in_window(Annotation, job)
        .values("name")
        .annotate(count=Count("id"), total_ns=Sum("dur_ns"))
    )
    return pd.DataFrame.from_records(list(rows), columns=["name", "count", "total_ns"])


def _diff_section(table: pd.DataFrame) -> dict:
    counts = table["status"].value_counts()
    changed = table[(table["status"] != "changed") | (table["delta_ns"] != 0)
                    | (table["delta_count"] != 0)]  # fmt: skip
    return {
        "added": int(counts.get("added", 0)),
        "removed": int(counts.get("removed", 0)),
        "changed": int(((table["status"] == "changed") & (table["delta_ns"] != 0)).sum()),
        "total_delta_ns": int(table["delta_ns"].sum()),
        "rows": changed.head(DIFF_ROWS).to_dict("records"),
    }


def step_stats(job: TrainingJob) -> dict:
    durations = np.array(in_window(Step, job).values_list("dur_ns", flat=True), np.int64)
    if not len(durations):
        return {"count": 0, "mean_ns": None, "p50_ns": None, "p95_ns": None, "min_ns": None,
                "max_ns": None}  # fmt: skip
    p50, p95 = np.percentile(durations, (50, 95))
    return {
        "count": len(durations),
        "mean_ns": int(durations.mean()),
        "p50_ns": int(p50),
        "p95_ns": int(p95),
        "min_ns": int(durations.min()),
        "max_ns": int(durations.max()),
    }


def metrics(job: TrainingJob) -> dict[str, int | None]:
    """The headline figures of a job (``ingest.figures``) in its window."""
    events = PartSummary.objects.filter(job=job).aggregate(
        events=Sum("n_events"), ranks=Count("rank", distinct=True)
    )
    start, end = span(job)
    totals = gpu_totals(job)
    return {
        "ranks": events["ranks"],
        "events": events["events"],
        "profile_ns": end - start if start is not None and end is not None else None,
        "kernel_runs": totals["kernel_runs"],
        "kernel_ns": totals["kernel_ns"],
        "gpu_op_runs": totals["gpu_op_runs"],
        "compute_ns": totals["compute_ns"],
        "comm_ns": totals["comm_ns"],
        "memory_ns": totals["memory_ns"],
        "sync_ns": totals["sync_ns"],
        "step_mean_ns": step_stats(job)["mean_ns"],
    }


def _metric_rows(a: dict, b: dict) -> list[dict]:
    return [{"metric": key, "a": a[key], "b": b[key]} for key in a]


def _rank_pairs(a: TrainingJob, b: TrainingJob) -> list[dict]:
    """Per rank both jobs have: mean step, gap, compute and tail."""
    fields = ["dur_ns", "gap_ns", "compute_ns", "tail_ns"]

    def per_rank(job: TrainingJob) -> dict[int, dict]:
        rows = (
            in_window(StepBreakdown, job)
            .values("rank")
            .annotate(**{f"mean_{f}": Avg(f) for f in fields})
            .values_list("rank", *[f"mean_{f}" for f in fields])
        )
        return {row[0]: dict(zip(fields, map(int, row[1:]), strict=True)) for row in rows}

    ra, rb = per_rank(a), per_rank(b)
    return [
        {"rank": rank, **{f"a_{k}": v for k, v in ra[rank].items()},
         **{f"b_{k}": v for k, v in rb[rank].items()}}
        for rank in sorted(ra.keys() & rb.keys())
    ]  # fmt: skip
