"""Every dashboard panel's numbers, read from the profile's aggregates (never from raw events)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Count, Q, Sum

from profiler_app.core.models import JobStatus, Node, PartState, TrainingJob
from profiler_app.profiles.figures import (
    gpu_totals,
    in_window,
    span,
    step_time,
    taken_over,
    window_info,
)
from profiler_app.profiles.models import (
    Annotation,
    GpuActivity,
    KernelStat,
    MemoryOperation,
    Step,
    UtilizationPoint,
)
from profiler_app.traces.model import DERIVED_SOURCE
from profiler_app.traces.window import rows_in

TOP_ROWS = 200
SERIES_POINTS = 500
# All nodes' series together: a 128-node job draws 125 points a node, not 64,000 in all (its
# answer was 1.9 MB of utilisation). A node keeps at least NODE_POINTS_MIN.
SERIES_POINTS_TOTAL = 16_000
NODE_POINTS_MIN = 60
# Kernel panels count compute and communication kernels; memcpy/memset have their own panels.
MEMORY_CATEGORY = "MEM"
# A communication kernel's type (NCCL's "int8_t" buffers) is not a compute precision.
NOT_COMPUTE_CATEGORIES = (MEMORY_CATEGORY, "COMM")
# GPUs, as (node id, device), whose derived utilisation points are shadowed by measured ones.
Measured = Sequence[tuple[int, int]]
PointCounts = list[tuple[int, int, str, int, int]]


def dashboard(job: TrainingJob, window: str) -> dict:
    """The Dashboard of ``job`` in ``window`` (its viewer's, ``TrainingJob.window_for``)."""
    start_ns, end_ns = span(job, window)
    gpus = gpus_with_kernels(job, window)
    has_gpu = gpus > 0
    gpu_counts = point_counts(job, window, "gpu_util_pct")
    cpu_counts = point_counts(job, window, "cpu_util_pct") or point_counts(
        job, window, "cpu_util_total_pct"
    )
    measured = measured_gpus(gpu_counts)
    kernel_time, kernel_count = kernel_tops(job, window)
    return {
        "job": job.id,
        "window": window_info(job, window),
        "totals": gpu_totals(job, window),
        "partial": is_partial(job),
        "profile_ns": (end_ns - start_ns) if start_ns is not None and end_ns is not None else 0,
        "over": taken_over(job, window),
        "step_time": step_time(job, window),
        "gpus": gpus,
        "gpu_active": active_points(job, gpu_counts, "GPU utilisation", has_gpu),
        "cpu_active": active_points(job, cpu_counts, "CPU utilisation", True),
        "gpu_utilization": utilization_series(
            job, window, "gpu_util_pct", start_ns, end_ns, has_gpu, measured
        ),
        "cpu_utilization": cpu_series(job, window, start_ns, end_ns),
        "kernel_time": kernel_time,
        "kernel_count": kernel_count,
        "steps": steps(job, window),
        "precision": grouped_rows(
            in_window(KernelStat, job, window).exclude(category__in=NOT_COMPUTE_CATEGORIES),
            "precision",
            "no compute kernels in this profile",
        ),
        "gpu_activity": grouped_rows(
            in_window(GpuActivity, job, window),
            "activity",
            "no GPU activity in this profile",
            key="kind",
        ),
        "memory_ops": grouped_rows(
            in_window(MemoryOperation, job, window),
            "operation",
            "no memory copies or memsets on the GPU in this profile",
            key="kind",
            with_bytes=True,
        ),
        "annotation_names": list(
            in_window(Annotation, job, window)
            .order_by("name")
            .values_list("name", flat=True)
            .distinct()
        ),
    }


def gpus_with_kernels(job: TrainingJob, window: str) -> int:
    """The GPUs, (node, device), that ran kernels: kernel time summed over them is a share of
    as many profile spans."""
    return in_window(KernelStat, job, window).values("node_id", "device").distinct().count()


def is_partial(job: TrainingJob) -> bool:
    if job.status in (JobStatus.IN_PROGRESS, JobStatus.STOPPING):
        return True
    return job.parts.filter(state__in=[PartState.PENDING, PartState.PROCESSING]).exists()


def no_samples_reason(job: TrainingJob, what: str) -> str:
    if job.parts.filter(kind="collector").exists():
        return f"no {what} samples were captured for this job"
    return f"no {what} samples in an imported trace"


def point_counts(job: TrainingJob, window: str, metric: str) -> PointCounts:
    """(node id, device, source, active, idle) of ``metric``'s data points, one row per device
    and source: active above 0 %, idle at 0 %. One pass over a 1,024-rank job's points serves
    the active/idle panel and which GPUs are measured."""
    return list(
        in_window(UtilizationPoint, job, window)
        .filter(metric=metric)
        .values_list("node_id", "device", "source")
        .annotate(
            active=Count("id", filter=Q(value__gt=0)), idle=Count("id", filter=Q(value__lte=0))
        )
        .order_by()
    )


def measured_gpus(counts: PointCounts) -> Measured:
    """(node id, device) of the devices with measured (NVML) utilisation. A collector's chunks
    without NVML samples derive utilisation from kernels; the measured points beat those."""
    return sorted(
        {(node, device) for node, device, source, _, _ in counts if source != DERIVED_SOURCE}
    )


def active_points(job: TrainingJob, counts: PointCounts, what: str, applicable: bool) -> dict:
    """Data points with utilisation above 0 % (active) and at 0 % (idle), of the devices'
    measured points where they have both."""
    shadowed = set(measured_gpus(counts))
    kept = [c for c in counts if not (c[2] == DERIVED_SOURCE and (c[0], c[1]) in shadowed)]
    active, idle = sum(c[3] for c in kept), sum(c[4] for c in kept)
    if active + idle:
        return {
            "source": max(c[2] for c in kept),  # a measured source sorts after "kernel_busy"
            "active_points": active,
            "idle_points": idle,
            "empty_reason": None,
        }
    reason = no_samples_reason(job, what) if applicable else "no GPU in this profile"
    return {"source": None, "active_points": 0, "idle_points": 0, "empty_reason": reason}


def utilization_series(
    job: TrainingJob,
    window: str,
    metric: str,
    start_ns: int | None,
    end_ns: int | None,
    applicable: bool,
    measured: Measured = (),
) -> dict:
    """Per node, the mean over its devices in at most ``points_per_node`` time buckets."""

    def empty() -> dict:
        # Asked only when there are no points: a job with them spends no query on the reason.
        reason = (
            no_samples_reason(job, metric.split("_")[0].upper() + " utilisation")
            if applicable
            else "no GPU in this profile"
        )
        return {"source": None, "empty_reason": reason, "series": []}

    if start_ns is None or end_ns is None:
        return empty()
    names = dict(Node.objects.filter(job=job).values_list("id", "name"))
    bucket_ns = max(1, (end_ns - start_ns) // points_per_node(len(names)) + 1)
    table = UtilizationPoint._meta.db_table
    shadowed = ""
    shadowed_params: list[str | int] = []
    if measured:
        either = " OR ".join(["(u.node_id = %s AND u.device = %s)"] * len(measured))
        shadowed = f"AND NOT (u.source = %s AND ({either}))"
        shadowed_params = [DERIVED_SOURCE, *(v for pair in measured for v in pair)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT u.node_id, MAX(u.source), (u.time_ns - %s) / %s AS bucket,
                   MIN(u.time_ns), AVG(u.value)
            FROM {table} u
            WHERE u.job_id = %s AND u.metric = %s AND u.windows = ANY(%s) {shadowed}
            GROUP BY u.node_id, bucket
            ORDER BY u.node_id, bucket
            """,
            [start_ns, bucket_ns, job.id, metric, list(rows_in(window)), *shadowed_params],
        )
        rows = cursor.fetchall()
    if not rows:
        return empty()
    # Grouped by node id, not name: sorting thousands of rows by a text key costs more than
    # the whole aggregation.
    series: dict[str, list[list[float]]] = {}
    for node_id, _source, _bucket, time_ns, value in rows:
        series.setdefault(names[node_id], []).append([time_ns, round(value, 3)])
    return {
        "source": rows[0][1],
        "empty_reason": None,
        "series": [{"node": node, "points": series[node]} for node in sorted(series)],
    }


def points_per_node(nodes: int) -> int:
    return max(NODE_POINTS_MIN, min(SERIES_POINTS, SERIES_POINTS_TOTAL // max(nodes, 1)))


def cpu_series(job: TrainingJob, window: str, start_ns: int | None, end_ns: int | None) -> dict:
    total = utilization_series(job, window, "cpu_util_total_pct", start_ns, end_ns, True)
    return (
        total
        if total["series"]
        else utilization_series(job, window, "cpu_util_pct", start_ns, end_ns, True)
    )


def kernel_tops(job: TrainingJob, window: str) -> tuple[dict, dict]:
    """The busiest kernels by time and by count, from one pass over the kernel rows."""
    rows = list(
        in_window(KernelStat, job, window)
        .exclude(category=MEMORY_CATEGORY)
        .values("name")
        .annotate(total_ns=Sum("total_ns"), count=Sum("count"))
        .order_by("name")
    )
    total_ns, total_count = sum(r["total_ns"] for r in rows), sum(r["count"] for r in rows)

    def top(field: str) -> dict:
        # A stable sort: equal figures keep the database's name order.
        return {
            "total_ns": total_ns,
            "total_count": total_count,
            "empty_reason": None if total_count else "no GPU kernels in this profile",
            "top": sorted(rows, key=lambda r: -r[field])[:TOP_ROWS],
        }

    return top("total_ns"), top("count")


def steps(job: TrainingJob, window: str) -> dict:
    rows = list(
        in_window(Step, job, window).order_by("rank", "start_ns").values_list("name", "dur_ns")
    )
    return {
        "empty_reason": None if rows else "no steps annotated (ProfilerStep#n or step_n)",
        "names": [name for name, _ in rows],
        "durations_ns": [dur for _, dur in rows],
    }


def grouped_rows(
    queryset, field: str, empty_reason: str, key: str | None = None, with_bytes: bool = False
) -> dict:
    sums = {"total_ns": Sum("total_ns"), "count": Sum("count")}
    if with_bytes:
        sums["bytes"] = Sum("bytes")
    rows = [
        {key or field: row.pop(field), **row}
        for row in queryset.values(field).annotate(**sums).order_by("-total_ns", field)
    ]
    return {"empty_reason": None if rows else empty_reason, "rows": rows}


def annotation_durations(job: TrainingJob, window: str, name: str) -> list[int]:
    return list(
        in_window(Annotation, job, window)
        .filter(name=name)
        .order_by("start_ns")
        .values_list("dur_ns", flat=True)
    )
