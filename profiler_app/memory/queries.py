"""The Memory page's numbers: the ingest's per-part memory rows (curves, peaks, allocators),
the collector's NVML memory samples, and one part's memory events from its store.

A job may have thousands of parts: the page lists every part's peaks (one row per part and
device) and draws one part at a time, by default the one with the highest peak.
"""

from __future__ import annotations

import numpy as np
from django.db.models import Min

from profiler_app.core.models import TrainingJob
from profiler_app.profiles.models import (
    MemoryAllocator,
    MemoryPeak,
    MemoryPoint,
    PartSummary,
    UtilizationPoint,
)
from profiler_app.traces.arrays import run_starts
from profiler_app.traces.memory import (
    NOT_RECORDED,
    EventFilter,
    device_label,
    read_memory_events,
)

NVML_METRIC = "gpu_mem_used_bytes"
NVML_POINTS = 1000


def peaks(job: TrainingJob) -> list[dict]:
    rows = (
        MemoryPeak.objects.filter(job=job).select_related("node").order_by("-allocated", "part_id")
    )
    return [
        {
            "part": p.part_id,
            "node": p.node.name,
            "rank": p.rank,
            "device": device_label(p.device_type, p.device_id),
            "device_type": p.device_type,
            "device_id": p.device_id,
            "time_ns": p.time_ns,
            "allocated": p.allocated,
            "reserved": recorded(p.reserved),
            # The allocator writes both totals or neither; without them allocated is rebuilt.
            "totals_recorded": p.reserved != NOT_RECORDED,
            "events": p.events,
            "running": p.running,
        }
        for p in rows
    ]


def overview(job: TrainingJob, part_id: int | None, node_id: int | None) -> dict:
    all_peaks = peaks(job)
    if part_id is None and all_peaks:
        part_id = all_peaks[0]["part"]
    devices = []
    if part_id is not None:
        for peak in (p for p in all_peaks if p["part"] == part_id):
            key = {
                "part_id": part_id,
                "device_type": peak["device_type"],
                "device_id": peak["device_id"],
            }
            curve = MemoryPoint.objects.filter(**key).order_by("time_ns")
            allocators = MemoryAllocator.objects.filter(**key).order_by("-allocated_bytes", "name")
            devices.append(
                {
                    **peak,
                    "curve": [[p.time_ns, p.allocated, recorded(p.reserved)] for p in curve],
                    "allocators": list(
                        allocators.values(
                            "name", "allocations", "allocated_bytes", "held_count", "held_bytes"
                        )
                    ),
                }
            )
    if node_id is None and part_id is not None:
        node_id = (
            PartSummary.objects.filter(part_id=part_id).values_list("node_id", flat=True).first()
        )
    nvml = nvml_series(job, node_id)
    if node_id is None and nvml:
        node_id = nvml[0]["node"]
    return {
        "job": job.id,
        "part": part_id,
        "start_ns": trace_start(job, part_id, node_id),
        "peaks": all_peaks,
        "devices": devices,
        "nvml": nvml,
    }


def recorded(total: int) -> int | None:
    return None if total == NOT_RECORDED else total


def trace_start(job: TrainingJob, part_id: int | None, node_id: int | None) -> int | None:
    """Where the page's times start: the drawn part's first event; without a part, the first
    event of the node whose NVML samples are drawn."""
    summaries = PartSummary.objects.filter(job=job)
    if part_id is not None:
        summaries = summaries.filter(part_id=part_id)
    elif node_id is not None:
        summaries = summaries.filter(node_id=node_id)
    return summaries.aggregate(start=Min("start_ns"))["start"]


def nvml_series(job: TrainingJob, node_id: int | None) -> list[dict]:
    """The collector's sampled GPU memory of one node (the first with samples by default),
    per GPU, at most ``NVML_POINTS`` points each (each time bucket keeps its highest)."""
    rows = UtilizationPoint.objects.filter(job=job, metric=NVML_METRIC)
    if node_id is None:
        node_id = rows.order_by("node_id").values_list("node_id", flat=True).first()
    if node_id is None:
        return []
    rows = rows.filter(node_id=node_id).order_by("device", "time_ns")
    device_of, time_of, value_of = (
        np.asarray(list(rows.values_list(field, flat=True)), dtype=dtype)
        for field, dtype in (("device", np.int64), ("time_ns", np.int64), ("value", np.float64))
    )
    out = []
    for device in np.unique(device_of).tolist():
        times, values = time_of[device_of == device], value_of[device_of == device]
        if len(times) > NVML_POINTS:
            span = int(times[-1] - times[0]) + 1
            bucket = ((times - times[0]) * (NVML_POINTS / span)).astype(np.int64)
            starts = run_starts(bucket)
            best = [
                s + int(np.argmax(values[s:e]))
                for s, e in zip(starts, [*starts[1:], len(times)], strict=True)
            ]
            times, values = times[best], values[best]
        out.append(
            {
                "device": f"GPU {int(device)}",
                "node": node_id,
                "points": [[int(t), float(v)] for t, v in zip(times, values, strict=True)],
            }
        )
    return out


def default_part(job: TrainingJob) -> int | None:
    return (
        MemoryPeak.objects.filter(job=job)
        .order_by("-allocated", "part_id")
        .values_list("part_id", flat=True)
        .first()
    )


def events(
    job: TrainingJob, part_id: int | None, where: EventFilter, offset: int, limit: int
) -> dict:
    if part_id is None:
        part_id = default_part(job)
    summary = PartSummary.objects.filter(job=job, part_id=part_id).first()
    if summary is None:
        return {"part": part_id, "count": 0, "results": []}
    count, frame = read_memory_events(summary.fetch_store(), where, offset, limit)
    results = [
        {
            "time_ns": int(r.time_ns),
            "device": device_label(int(r.device_type), int(r.device_id)),
            "bytes": int(r.bytes),
            "total_allocated": int(r.total_allocated),
            "total_reserved": recorded(int(r.total_reserved)),
            "addr": int(r.addr),
            "operator": r.operator,
            "thread": r.thread,
        }
        for r in frame.itertuples(index=False)
    ]
    return {"part": part_id, "count": count, "results": results}
