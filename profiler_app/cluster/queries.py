"""The cluster page, read from the aggregates written at ingest (the job comparison: ``compare``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from django.db.models import Count, Max, Min, Sum

from profiler_app.analysis import cluster as analysis
from profiler_app.cluster.models import CollectiveWait
from profiler_app.core.models import TrainingJob
from profiler_app.profiles.figures import gpu_totals, in_window, step_time, window_info
from profiler_app.profiles.models import (
    CollectiveStat,
    KernelStat,
    PartSummary,
    RankOverlap,
    StepBreakdown,
    UtilizationPoint,
)
from profiler_app.traces.figures import gpu_figures

BREAKDOWN = ["dur_ns", "gap_ns", "compute_ns", "tail_ns", "comm_ns", "sync_wait_ns"]
# Per-rank values the slow-rank rule looks at.
SLOW_METRICS = {"compute_ns": "compute", "gap_ns": "iteration gap"}


def cluster(job: TrainingJob, window: str, step: int | None) -> dict:
    """The Cluster page of ``job`` in ``window`` (its viewer's, ``TrainingJob.window_for``)."""
    steps = _step_frame(job, window)
    chosen = steps if step is None else steps[steps["step"] == step]
    ranks = _rank_rows(chosen, _overlap(job, window))
    return {
        "job": job.id,
        "window": window_info(job, window),
        "totals": gpu_totals(job, window),
        "step_time": step_time(job, window),
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
        "collectives": collectives(job, window),
        "collective_ranks": collective_ranks(job, window),
        "devices": devices(job, window),
    }


def waits_stamp(job: TrainingJob) -> str:
    """Changes whenever the insights task replaces the job's collective waits."""
    found = CollectiveWait.objects.filter(job=job).aggregate(n=Count("id"), last=Max("id"))
    return f"{found['n']}-{found['last']}"


def _step_frame(job: TrainingJob, window: str) -> pd.DataFrame:
    rows = in_window(StepBreakdown, job, window).values_list(
        "rank",
        "node__name",
        "step",
        "inferred",
        "start_ns",
        "dur_ns",
        "gap_ns",
        "compute_ns",
        "tail_ns",
        "comm_ns",
    )
    columns = ["rank", "node", "step", "inferred", "start_ns", *BREAKDOWN[:-1]]
    frame = pd.DataFrame.from_records(list(rows), columns=columns)
    frame["sync_wait_ns"] = analysis.sync_wait(frame) if len(frame) else 0
    return frame


def _overlap(job: TrainingJob, window: str) -> pd.DataFrame:
    rows = (
        in_window(RankOverlap, job, window)
        .values("rank")
        .annotate(comm_total_ns=Sum("comm_ns"), overlap_ns=Sum("overlap_ns"))
    )
    return pd.DataFrame.from_records(list(rows), columns=["rank", "comm_total_ns", "overlap_ns"])


def _rank_rows(steps: pd.DataFrame, overlap: pd.DataFrame) -> pd.DataFrame:
    """Per rank: the mean of each step quantity over the chosen steps, and the step window."""
    if steps.empty:
        return pd.DataFrame(
            columns=[
                "rank",
                "node",
                "steps",
                *BREAKDOWN,
                "start_ns",
                "end_ns",
                "comm_total_ns",
                "overlap_ns",
                "overlap_pct",
            ]
        )
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


def collectives(job: TrainingJob, window: str) -> list[dict]:
    """Per collective and group size over all ranks, with algorithmic and bus bandwidth
    (bytes / ns = GB/s) over the calls whose message size is known."""
    rows = (
        in_window(CollectiveStat, job, window)
        .values("collective", "group_size")
        .annotate(
            count=Sum("count"),
            total_ns=Sum("total_ns"),
            min_ns=Min("min_ns"),
            max_ns=Max("max_ns"),
            sized_ns=Sum("sized_ns"),
            bytes=Sum("bytes"),
            ranks=Count("rank", distinct=True),
        )
        .order_by("-total_ns", "collective")
    )
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


def collective_ranks(job: TrainingJob, window: str) -> list[dict]:
    """Per rank and collective in the job's window: calls, time, bytes, and the time spent
    waiting for the other ranks (null where it is not derivable, see
    ``analysis.collective_waits_by_window``)."""
    waits = {
        (w.rank, w.collective): w
        for w in in_window(CollectiveWait, job, window).only(
            "rank", "collective", "wait_ns", "max_wait_ns"
        )
    }
    rows = []
    for found in (
        in_window(CollectiveStat, job, window)
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


def devices(job: TrainingJob, window: str) -> list[dict]:
    """Per rank and GPU: kernel time (kernels only, as ``FIGURES`` defines it) and its
    computation and communication parts, memory operation time, peak memory where sampled,
    device name."""
    table: dict[tuple, dict[str, dict[str, int]]] = {}
    kernels = (
        in_window(KernelStat, job, window)
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
        for r in in_window(UtilizationPoint, job, window)
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
                "name": str(props.get("name") or ""),
                "memory_bytes": props.get("memory_bytes"),
                "peak_memory_bytes": None if peak is None else int(peak),
                **{k: figures[k] for k in ("kernel_ns", "compute_ns", "comm_ns", "memory_ns")},
                "flops": None,
            }
        )
    return out


def _device_properties(job: TrainingJob) -> dict[tuple[int, int], dict]:
    """Each rank's GPUs by index: name and memory, as a Kineto trace's deviceProperties or a
    collector chunk's devices (what the collector read from the driver) give them."""
    found: dict[tuple[int, int], dict] = {}
    for rank, metadata in PartSummary.objects.filter(job=job).values_list("rank", "metadata"):
        metadata = metadata or {}
        for props in metadata.get("device_properties") or []:
            if isinstance(props, dict) and "id" in props:
                found[(rank, int(props["id"]))] = {
                    "name": props.get("name"),
                    "memory_bytes": props.get("totalGlobalMem"),
                }
        for device in metadata.get("devices") or []:
            if isinstance(device, dict) and "index" in device:
                found.setdefault(
                    (rank, int(device["index"])),
                    {"name": device.get("name"), "memory_bytes": device.get("total_memory_bytes")},
                )
    return found


def _rounded(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)
