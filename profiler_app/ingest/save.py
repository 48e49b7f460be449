"""A parse's results into Postgres (COPY, inside one transaction that first deletes the
part's old rows) and its timeline store into place."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from profiler_app.analysis.cluster import (
    COLLECTIVE_COLUMNS,
    STEP_COLUMNS,
    ClusterFrames,
)
from profiler_app.core import storage
from profiler_app.core.models import Node, PartState, ProfilePart, TrainingJob
from profiler_app.core.text import clean_column, clean_json, storable
from profiler_app.profiles.models import (
    Annotation,
    CollectiveStat,
    GpuActivity,
    KernelStat,
    MemoryAllocator,
    MemoryOperation,
    MemoryPeak,
    MemoryPoint,
    PartSummary,
    RankOverlap,
    Step,
    StepBreakdown,
    StepSplit,
    TimelineTrack,
    UtilizationPoint,
)
from profiler_app.traces import IngestResult
from profiler_app.traces.window import IN_BOTH, IN_COMPLETE_STEPS, IN_WHOLE_TRACE

AGGREGATE_TABLES = (
    PartSummary,
    TimelineTrack,
    KernelStat,
    GpuActivity,
    MemoryOperation,
    Step,
    Annotation,
    UtilizationPoint,
    StepBreakdown,
    StepSplit,
    CollectiveStat,
    RankOverlap,
    MemoryPoint,
    MemoryPeak,
    MemoryAllocator,
)


def save_result(
    part: ProfilePart,
    task_id: str,
    result: IngestResult,
    incoming: Path,
    key: str,
    cluster: ClusterFrames,
    split: dict[int, dict[str, int]],
) -> bool:
    """Put the store parsed into ``incoming`` (and staged at ``key``) in place, replace the
    part's rows with ``result`` (and the figures derived from its store: ``cluster``, the
    headline's ``split`` per window) and mark it done, in one transaction, if the part is still this
    task's (it may have been reprocessed or deleted meanwhile: False, and ``incoming`` is the
    caller's)."""
    with transaction.atomic():
        locked = (
            ProfilePart.objects.select_for_update()
            .filter(id=part.pk, state=PartState.PROCESSING, ingest_run__task_id=task_id)
            .first()
        )
        if locked is None:  # reprocessed (the newer run writes store and rows), or deleted
            return False
        storage.place_store(incoming, key)
        delete_part_rows(part.pk)
        _insert(part, result, key, cluster)
        _insert_split(part, split)
        _record_node_devices(part.node_id, result.metadata)
        _record_framework(part.job_id, result.metadata)
        ProfilePart.objects.filter(id=part.pk).update(
            state=PartState.DONE,
            progress=1.0,
            error="",
            warning=storable(result.metadata.get("read_warning", "")),
            finished_at=timezone.now(),
        )
        job_id, part_id = part.job_id, part.pk
        # Robust: the part is stored; a bucket out of reach only leaves the old store behind.
        transaction.on_commit(
            lambda: storage.remove_older_stores(job_id, part_id, key), robust=True
        )
    return True


def _record_framework(job_id: int, metadata: dict) -> None:
    """A part that names its framework (a TensorFlow or JAX profile's metadata plane) says
    what the job ran, where whoever made the job did not."""
    if metadata.get("framework"):
        TrainingJob.objects.filter(id=job_id, framework="").update(
            framework=metadata["framework"],
            framework_version=metadata.get("framework_version", ""),
        )


def _record_node_devices(node_id: int, metadata: dict) -> None:
    """A node has as many GPUs and CPUs as the most any of its parts recorded."""
    for field in ("gpu_count", "cpu_count"):
        count = metadata.get(field)
        if count is not None:
            Node.objects.filter(id=node_id).filter(
                Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__lt": count})
            ).update(**{field: count})


def delete_part_rows(part_id: int) -> None:
    for model in AGGREGATE_TABLES:
        model.objects.filter(part_id=part_id).delete()


def _insert(part: ProfilePart, result: IngestResult, key: str, cluster: ClusterFrames) -> None:
    agg, cut = result.aggregates, result.cut
    common = {"job_id": part.job_id, "part_id": part.pk, "node_id": part.node_id, "rank": part.rank}
    PartSummary.objects.create(
        **common,
        start_ns=agg.start_ns,
        end_ns=agg.end_ns,
        n_events=result.store.n_events,
        event_counts=agg.event_counts,
        metadata=clean_json(_jsonable(result.metadata)),
        store_path=key,
        last_step_start_ns=None if cut is None else cut.last_step_start_ns,
    )
    tracks = result.store.tracks
    _copy(
        TimelineTrack,
        common,
        tracks.assign(
            start_ns=tracks["start_ns"].astype("Int64"), end_ns=tracks["end_ns"].astype("Int64")
        ),
        [
            "track",
            "on_device",
            "pid",
            "tid",
            "label",
            "first_row",
            "n_rows",
            "start_ns",
            "end_ns",
            "max_dur_ns",
        ],
    )
    # Sums: one row per window, or one row for both when the part has no complete-steps window.
    steps = result.complete_steps
    by_window = (
        [(IN_BOTH, agg, cluster.whole)]
        if cut is None or steps is None or cluster.complete_steps is None
        else [
            (IN_WHOLE_TRACE, agg, cluster.whole),
            (IN_COMPLETE_STEPS, steps, cluster.complete_steps),
        ]
    )
    for windows, sums, frames in by_window:
        rows = {**common, "windows": windows}
        _copy(
            KernelStat,
            rows,
            sums.kernels.rename(columns={"sumsq": "sum_sq_ns2"}),
            [
                "device",
                "name",
                "category",
                "precision",
                "count",
                "total_ns",
                "min_ns",
                "max_ns",
                "sum_sq_ns2",
            ],
        )
        _copy(GpuActivity, rows, sums.activities, ["device", "activity", "count", "total_ns"])
        _copy(
            MemoryOperation,
            rows,
            sums.memory_ops,
            ["device", "operation", "count", "total_ns", "bytes"],
        )
        _copy(CollectiveStat, rows, frames.collectives, COLLECTIVE_COLUMNS)
        RankOverlap.objects.create(**rows, comm_ns=frames.comm_ns, overlap_ns=frames.overlap_ns)
    # Time-stamped rows: in both windows when before the cut, else in the whole trace only.
    for model, frame, stamp, columns in (
        (Step, agg.steps, "start_ns", ["step", "name", "start_ns", "dur_ns", "captured"]),
        (Annotation, agg.annotations, "start_ns", ["name", "start_ns", "dur_ns"]),
        (
            UtilizationPoint,
            agg.series,
            "time_ns",
            ["metric", "device", "source", "name", "time_ns", "value"],
        ),
        (StepBreakdown, cluster.whole.steps, "start_ns", STEP_COLUMNS),
    ):
        in_windows = np.full(len(frame), IN_BOTH, dtype=np.int64)
        if cut is not None:
            in_windows[~cut.before(frame[stamp].to_numpy())] = IN_WHOLE_TRACE
        _copy(model, common, frame.assign(windows=in_windows), [*columns, "windows"])
    memory = result.memory
    _copy(MemoryPoint, common, memory.curve, list(memory.curve.columns))
    MemoryPeak.objects.bulk_create(
        MemoryPeak(**common, **row) for row in memory.peaks.to_dict("records")
    )
    _copy(MemoryAllocator, common, memory.operators, list(memory.operators.columns))


def _insert_split(part: ProfilePart, split: dict[int, dict[str, int]]) -> None:
    common = {"job_id": part.job_id, "part_id": part.pk, "node_id": part.node_id, "rank": part.rank}
    StepSplit.objects.bulk_create(
        StepSplit(**common, windows=windows, category=category, total_ns=ns)
        for windows, categories in split.items()
        for category, ns in categories.items()
    )


def _copy(model, common: dict, frame: pd.DataFrame, columns: list[str]) -> None:
    """Bulk-insert a frame with Postgres COPY (psycopg 3); rows get the part's common ids.
    Text is cleaned first (NUL, lone surrogates, over-long names: see ``core.text``)."""
    if frame.empty:
        return
    names = [*common, *columns]
    table = connection.ops.quote_name(model._meta.db_table)
    fields = ", ".join(connection.ops.quote_name(n) for n in names)
    values = [_column(model, frame[c], c).tolist() for c in columns]
    fixed = tuple(common.values())
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({fields}) FROM STDIN") as copy:
        for row in zip(*values, strict=True):
            copy.write_row(fixed + row)


def _column(model, values: pd.Series, name: str) -> pd.Series:
    field = model._meta.get_field(name)
    if field.get_internal_type() in ("CharField", "TextField"):
        values = clean_column(values, field.max_length)
    return values.astype(object).where(values.notna(), None)


def _jsonable(value):
    """Trace metadata as plain JSON (numpy numbers and tuples become Python ones)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value
