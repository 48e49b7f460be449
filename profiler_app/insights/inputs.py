"""What the rules and analyses read of a job: each rank's parts merged into one trace, the
collector's raw samples (never the ingest's down-sampled points), its steps and its facts.

The analyses read the parts' timeline stores; the rules read the samples, the profile's Step
rows and the framework time of the parsed events (``job_data``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import groupby
from operator import attrgetter

import numpy as np
import pandas as pd
from django.db import connection
from django.db.models import QuerySet

from profiler_app.analysis import RankTrace, frames
from profiler_app.analysis.events import STRING_COLUMNS
from profiler_app.analysis.frames import JobData
from profiler_app.analysis.framework import metrics_from_samples
from profiler_app.core import storage
from profiler_app.core.models import Node, PartKind, PartState, ProfilePart, TrainingJob
from profiler_app.profiles.figures import in_window, is_sampled, step_time, taken_over, window_info
from profiler_app.profiles.models import PartSummary, Step, UtilizationPoint
from profiler_app.traces.model import DERIVED_SOURCE
from tracefmt.chunk import read_chunk


def _ns(moment) -> int | None:
    """Unix nanoseconds, exactly (a float of them is off by up to a microsecond)."""
    if moment is None:
        return None
    since = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (since.days * 86_400 + since.seconds) * 1_000_000_000 + since.microseconds * 1_000


def _chunk_samples(name: str) -> tuple[dict, dict[int, int]]:
    """A collector chunk's utilisation samples and each GPU's memory in bytes (device index →
    total), read from its raw file (fetched when it is kept in a bucket)."""
    with storage.raw_file_on_disk(name) as path:
        chunk = read_chunk(path)
    samples = {n.removeprefix("s_"): c for n, c in chunk.samples.items()}
    devices = chunk.meta.get("devices") or []
    return samples, {int(d["index"]): int(d["total_memory_bytes"]) for d in devices}


def job_data(job: TrainingJob, framework: pd.DataFrame, window: str | None = None) -> JobData:
    """What the system rules read of the job; ``framework``: each rank's
    ``framework_from_events``, one after another."""
    collector_parts = list(
        ProfilePart.objects.filter(job=job, kind=PartKind.COLLECTOR, state=PartState.DONE)
        .select_related("node")
        .order_by("id")
    )
    metrics = []
    for part in collector_parts:
        if not part.file.name:  # a raw file removed by retention took its samples with it
            continue
        samples, gpu_memory_bytes = _chunk_samples(part.file.name)
        metrics.append(metrics_from_samples(samples, part.node.name, gpu_memory_bytes))
    measured = pd.concat(metrics, ignore_index=True) if metrics else JobData.empty().metrics
    derived = _kernel_busy_gpu_utilization(job, measured, window)
    steps = _steps(job, window)
    return JobData(
        pd.concat([measured, derived], ignore_index=True) if len(derived) else measured,
        steps,
        framework,
        # Only the collector knows when the training started; an imported trace starts
        # wherever profiling did.
        job_start_ns=_ns(job.started_at) if collector_parts else None,
        job_end_ns=_ns(job.ended_at) if collector_parts else None,
        gpu_util_source=frames.KERNEL_BUSY if len(derived) and not len(measured) else frames.NVML,
    )


def _kernel_busy_gpu_utilization(
    job: TrainingJob, measured: pd.DataFrame, window: str | None
) -> pd.DataFrame:
    """GPU utilisation from kernel busy time (the dashboard's series) for the GPUs that have
    no NVML samples: the GPU rules then judge an imported trace too. In the order of node name,
    device and time."""
    points = _numbers(
        in_window(UtilizationPoint, job, window).filter(
            metric=frames.GPU_UTIL, source=DERIVED_SOURCE, part__state=PartState.DONE
        ),
        ["time_ns", "node_id", "device", "value"],
    )
    nodes = list(Node.objects.filter(job=job).order_by("name").values_list("id", "name"))
    order = {node_id: at for at, (node_id, _) in enumerate(nodes)}
    names = np.array([name for _, name in nodes] or [""], dtype=object)
    node_at = points["node_id"].map(order).to_numpy(dtype=np.int64)
    device = points["device"].to_numpy(dtype=np.int64)
    rows = np.lexsort((points["time_ns"].to_numpy(), device, node_at))
    gpu = measured[measured["metric"] == frames.GPU_UTIL]
    if len(gpu):
        have = pd.MultiIndex.from_arrays([gpu["node"].astype(str), gpu["device"].astype(np.int64)])
        sampled = pd.MultiIndex.from_arrays([names[node_at], device]).isin(have)
        rows = rows[~sampled[rows]]
    if not len(rows):
        return JobData.empty().metrics
    return frames.metrics_frame(
        points["time_ns"].to_numpy()[rows],
        names[node_at[rows]],
        device[rows],
        pd.Categorical.from_codes(np.zeros(len(rows), np.int8), [frames.GPU_UTIL]),
        points["value"].to_numpy()[rows],
    )


def _numbers(queryset: QuerySet, columns: list[str]) -> pd.DataFrame:
    """Numeric ``columns`` of the rows, sent by the database as one text of CSV lines: a
    1,024-rank job's 750,000 kernel-busy points in 0.5 s, where rows as Python tuples took
    1.5 s (COPY sends a message per row: as slow) and a sort in the database that spilled to
    disk as much again."""
    sql, params = queryset.values_list(*columns).query.sql_with_params()
    names = ", ".join(f"c{at}" for at in range(len(columns)))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT string_agg(concat_ws(',', {names}), E'\\n') FROM ({sql}) AS rows ({names})",
            params,
        )
        (text,) = cursor.fetchone()
    if not text:
        return pd.DataFrame({column: np.array([], dtype=np.int64) for column in columns})
    # Floats as the database wrote them (shortest text that reads back the same value).
    return pd.read_csv(io.StringIO(text), header=None, names=columns)


def _steps(job: TrainingJob, window: str | None) -> pd.DataFrame:
    rows = list(
        in_window(Step, job, window)
        .order_by("rank", "start_ns")
        .values_list("rank", "node__name", "step", "name", "start_ns", "dur_ns")
    )
    if not rows:
        return JobData.empty().steps
    rank, node, step, name, start_ns, dur_ns = (list(column) for column in zip(*rows, strict=True))
    mode = [frames.EVAL if "eval" in n.lower() else frames.TRAIN for n in name]
    return frames.steps_frame(rank, node, step, name, start_ns, dur_ns, mode)


def rank_parts(job_id: int, rank: int | None = None) -> Iterator[tuple[int, list[PartSummary]]]:
    """Each rank of the job (or only ``rank``), in rank order, with its parsed parts (rows
    only: nothing read)."""
    summaries = PartSummary.objects.filter(
        job_id=job_id, part__state=PartState.DONE, n_events__gt=0
    ).order_by("rank", "part_id")
    if rank is not None:
        summaries = summaries.filter(rank=rank)
    for rank, parts in groupby(summaries.select_related("part"), key=attrgetter("rank")):
        yield rank, list(parts)


def rank_trace(rank: int, parts: list[PartSummary]) -> RankTrace:
    """One trace of the rank, merging its parts (several chunks, or trace files)."""
    return merge(rank, [RankTrace.from_store(rank, p.fetch_store(), p.part_id) for p in parts])


def rank_traces(job: TrainingJob) -> list[RankTrace]:
    """Every rank's trace at once."""
    return [rank_trace(rank, parts) for rank, parts in rank_parts(job.pk)]


def merge(rank: int, parts: list[RankTrace]) -> RankTrace:
    """The parts' events in one trace, their string ids mapped into one strings table (each
    string once: the analyses label by it)."""
    if len(parts) == 1:
        return parts[0]
    table: dict[str, int] = {}
    frames_: list[pd.DataFrame] = []
    offset = 0
    for part in parts:
        new_id = np.array([table.setdefault(s, len(table)) for s in part.strings] or [-1])
        events = part.events.copy()
        for column in STRING_COLUMNS:
            ids = events[column].to_numpy()
            events[column] = np.where(ids >= 0, new_id[np.maximum(ids, 0)], ids).astype(ids.dtype)
        for column in ("parent", "launch"):  # a row of the part: a label of the merged trace
            rows = events[column].to_numpy()
            events[column] = np.where(rows >= 0, rows + offset, -1)
        offset += len(events)
        frames_.append(events)
    parts_ = tuple(p for part in parts for p in part.parts)
    return RankTrace(rank, pd.concat(frames_, ignore_index=True), list(table), parts_)


def job_info(job: TrainingJob, window: str | None = None) -> dict[str, str]:
    framework = f"{job.framework} {job.framework_version}".strip()
    info = {
        "Instance type": job.instance_type,
        "Instances": str(job.instance_count),
        "Framework": framework,
        "Status": job.status,
        "Window": window_info(job, window)["label"],
        "Taken over": _taken_over(job, window),
        "Step time": _step_time(job, window),
        "Owner": job.owner.username if job.owner is not None else "",
    }
    return {k: v for k, v in info.items() if v}


def _taken_over(job: TrainingJob, window: str | None) -> str:
    """What the report's trace figures are over on a sampled job (the Dashboard's ``over``);
    an imported trace's are over its window, the line above."""
    if not is_sampled(job):
        return ""
    over = taken_over(job, window or job.window)
    return (
        f"the {over['steps']} captured steps ({over['ns'] / 1e9:.3f} s): figures from Kineto's "
        "events and their shares are of captured time; NVML and psutil samples cover the whole run"
    )


def _step_time(job: TrainingJob, window: str | None) -> str:
    """The one step time as the Dashboard states it ("78.94 ms, median of 16 captured steps")."""
    found = step_time(job, window or job.window)
    if found["median_ns"] is None:
        return ""
    return f"{found['median_ns'] / 1e6:.2f} ms, {found['label']}"
