"""One call from an uploaded file to its aggregates and timeline store.

``ingest_trace`` streams the file batch by batch: each batch is normalised, folded into the
aggregates and appended to the timeline store's runs, then dropped. Nothing here touches the
database; the Django side stores the returned frames.
"""

from __future__ import annotations

import gc
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.aggregate import AGGREGATED_COLUMNS, Aggregator, PartAggregates
from profiler_app.traces.decompress import ReadProgress
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.event_model import Windows
from profiler_app.traces.kineto import KinetoFile, iter_chunks
from profiler_app.traces.memory import MemorySummary, build_memory
from profiler_app.traces.model import EventBatch, FlowBatch, SampleBatch
from profiler_app.traces.normalize import PartContext
from profiler_app.traces.recognition import read_warning
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.timeline_store import StoreSummary, TimelineWriter
from profiler_app.traces.window import StepCut, step_cut
from tracefmt.chunk import ChunkFormatError, KinetoWindow
from tracefmt.columns import FLOW_COLUMNS
from tracefmt.kinds import EventKind
from tracefmt.names import PROFILER_STEP_RE
from tracefmt.strings import StringTable

KINETO, COLLECTOR = "kineto", "collector"
FLOWS_FILE = "flows.parquet"
# Chrome-trace phases the parser turns into something; others are counted as ignored.
_USED_PHASES = {"X", "i", "I", "s", "t", "f", "C", "M"}
# Timestamps at or after 2000-01-01 are taken to be unix-epoch times already.
_EPOCH_2000_NS = 946_684_800 * 10**9


@dataclass(frozen=True)
class Limits:
    max_decompressed_bytes: int = 64 << 30
    # A collector chunk's arrays may take this many times the archive's size once loaded
    # (real chunks compress a few times; a bomb of zeros a thousand times), and at least
    # ``min_chunk_budget_bytes``. Checked from the arrays' headers, before anything is loaded.
    max_chunk_expansion: int = 200
    min_chunk_budget_bytes: int = 256 << 20
    chunk_bytes: int = 8 << 20
    collector_batch_rows: int = 500_000


@dataclass(frozen=True)
class IngestResult:
    aggregates: PartAggregates
    store: StoreSummary
    metadata: dict[str, Any] = field(default_factory=dict)
    # Where the complete-steps window ends (None: the part has fewer than two profiler steps,
    # both windows are the whole part), and the part's aggregates over that window.
    cut: StepCut | None = None
    complete_steps: PartAggregates | None = None
    # The allocator's curve, peak and top allocators (whole trace) from [memory] events.
    memory: MemorySummary = field(default_factory=MemorySummary.empty)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Millions of short-lived objects make the cyclic GC rescan the heap over and over; the
    structs decoded here hold no cycles, so collection can wait until the end."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ingest_trace(
    path: str | Path,
    kind: str,
    store_dir: str | Path,
    limits: Limits = Limits(),
    progress: Callable[[float], None] | None = None,
    executor: Executor | None = None,
    workers: int = 0,
) -> IngestResult:
    """Parse ``path`` (a Kineto trace or a collector chunk) into aggregates and a store.

    Raises ``TraceFormatError`` with a user-readable message for anything unreadable; the
    store directory is removed in that case.
    """
    store_dir = Path(store_dir)
    if store_dir.exists():
        shutil.rmtree(store_dir)
    try:
        with _gc_paused():
            if kind == KINETO:
                result = _ingest_kineto(Path(path), store_dir, limits, progress, executor, workers)
            elif kind == COLLECTOR:
                result = _ingest_collector(Path(path), store_dir, limits, progress)
            else:
                raise TraceFormatError(f"unknown part kind {kind!r}")
            return result
    except BaseException:
        shutil.rmtree(store_dir, ignore_errors=True)
        raise


class _Sink:
    """Where normalised batches go: the aggregates, the store's runs and the flow list."""

    def __init__(self, context: PartContext, store_dir: Path) -> None:
        self.context = context
        self.aggregator = Aggregator(context.strings)
        self.writer = TimelineWriter(store_dir)
        self.flows: list[FlowBatch] = []
        self.store_dir = store_dir

    def finish(self, offset_ns: int, captured_windows_ns: Windows = None) -> IngestResult:
        """The part's aggregates and store (with its event model: ``captured_windows_ns`` are
        the ranges a collector part's Kineto recorded; None for a trace recorded whole); the
        caller adds the metadata they decide."""
        tracks = self.context.track_frame()
        aggregates = self.aggregator.finish(self.context.strings, offset_ns)
        strings = self.context.strings.strings
        store = self.writer.finish(offset_ns, strings, tracks, captured_windows_ns)
        # Each step says whether Kineto recorded it.
        steps = aggregates.steps
        captured = np.isin(steps["start_ns"].to_numpy(), store.captured_step_starts)
        steps = steps.assign(captured=captured)
        aggregates = replace(aggregates, steps=steps)
        self._write_flows(offset_ns)
        memory = build_memory(self.store_dir, self.context.memory, offset_ns, self.context.strings)
        self.context.memory = []
        cut, complete_steps = complete_steps_aggregates(self.store_dir, self.context.strings)
        return IngestResult(
            aggregates, store, cut=cut, complete_steps=complete_steps, memory=memory
        )

    def _write_flows(self, offset_ns: int) -> None:
        columns: dict[str, np.ndarray] = {}
        if self.flows:
            for col in self.flows[0].columns:
                columns[col] = np.concatenate([f.columns[col] for f in self.flows])
            columns["time_ns"] = columns["time_ns"] + offset_ns
            self.aggregator.count("flow", len(columns["flow_id"]))
        frame = pd.DataFrame(columns or {c: np.empty(0, t) for c, t in FLOW_COLUMNS.items()})
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False), self.store_dir / FLOWS_FILE
        )


def complete_steps_aggregates(
    store_dir: Path, strings: StringTable
) -> tuple[StepCut | None, PartAggregates | None]:
    """The part's aggregates over its complete steps (``traces.window``), from its store: a
    second pass, since where the last step starts is known only once every event was read."""
    if sum(1 for s in strings.strings if PROFILER_STEP_RE.search(s)) < 2:
        return None, None
    reader = TimelineReader(store_dir)
    cut_columns = ["kind", "name", "start_ns", "correlation"]
    table = reader.read_all(cut_columns)
    c = {name: table.column(name).to_numpy() for name in cut_columns}
    del table
    cut = step_cut(
        c["kind"],
        c["name"],
        np.asarray(strings.strings, dtype=object),
        c["start_ns"],
        c["correlation"],
    )
    del c
    if cut is None:
        return None, None
    aggregator = Aggregator(strings)
    for group in range(reader.events.metadata.num_row_groups):
        table = reader.events.read_row_group(group, columns=AGGREGATED_COLUMNS, use_threads=False)
        columns = {name: table.column(name).to_numpy() for name in AGGREGATED_COLUMNS}
        keep = cut.keeps(columns["kind"], columns["start_ns"], columns["correlation"])
        aggregator.add_events(EventBatch({name: a[keep] for name, a in columns.items()}))
    return cut, aggregator.finish(strings, 0)  # the store's times are on the epoch already


def _ingest_kineto(
    path: Path,
    store_dir: Path,
    limits: Limits,
    progress: Callable[[float], None] | None,
    executor: Executor | None,
    workers: int,
) -> IngestResult:
    context = PartContext()
    sink = _Sink(context, store_dir)
    info = KinetoFile()
    read = ReadProgress()
    chunks = iter_chunks(
        path,
        info,
        limits.max_decompressed_bytes,
        chunk_bytes=limits.chunk_bytes,
        executor=executor,
        in_flight=workers + 1,
        progress=read,
    )
    for chunk in chunks:
        events, flows, samples = context.kineto_batches(chunk)
        del chunk
        sink.aggregator.add_events(events)
        sink.writer.add(events)
        if flows is not None:
            sink.flows.append(flows)
        if samples is not None:
            sink.aggregator.add_samples(samples)
        if progress is not None:
            progress(read.fraction)
    offset_ns, clock = _clock_offset(info, sink.aggregator.start_ns)
    ignored = {ph: n for ph, n in context.phase_counts.items() if ph not in _USED_PHASES}
    result = sink.finish(offset_ns)
    warning = read_warning(
        context.unknown_categories,
        ignored,
        context.device_like_unknown,
        result.aggregates.event_counts,
        info.n_events,
    )
    metadata = {
        "format": "kineto",
        "clock": clock,
        "base_time_ns": offset_ns,
        "events_in_file": info.n_events,
        "decompressed_bytes": info.decompressed_bytes,
        "ignored_phases": ignored,
        "unknown_categories": dict(context.unknown_categories),
        "device_like_unknown": context.device_like_unknown,
        "read_warning": warning,
        "distributed_info": info.get("distributedInfo"),
        "device_properties": info.get("deviceProperties"),
        "trace_name": info.get("traceName"),
        "schema_version": info.get("schemaVersion"),
        "gpu_count": _gpu_count(info.get("deviceProperties"), result.aggregates),
        "cpu_count": None,  # a Kineto trace does not say
    }
    return replace(result, metadata=metadata)


def _gpu_count(devices: list | None, aggregates: PartAggregates) -> int:
    """The GPUs of the node as the part lists them, else the ones it saw working."""
    return len(devices) if devices else len(aggregates.devices)


def _clock_offset(info: KinetoFile, first_start_ns: int | None) -> tuple[int, str]:
    """Nanoseconds to add so times are unix-epoch, and how that was decided.

    Recent PyTorch writes times relative to ``baseTimeNanoseconds``; older versions write unix
    microseconds. A trace with neither is aligned on its own start, so ranks of such a job line
    up at their first event.
    """
    if info.base_time_ns:
        return info.base_time_ns, "baseTimeNanoseconds"
    if first_start_ns is None or first_start_ns >= _EPOCH_2000_NS:
        return 0, "unix"
    return -first_start_ns, "trace_start"


def _ingest_collector(
    path: Path,
    store_dir: Path,
    limits: Limits,
    progress: Callable[[float], None] | None,
) -> IngestResult:
    from tracefmt.chunk import ChunkFormatError, read_chunk

    budget = chunk_budget(path, limits)
    _check_archive_size(path, budget)
    try:
        chunk = read_chunk(path)
    except ChunkFormatError as exc:
        raise TraceFormatError(str(exc)) from exc
    context = PartContext()
    sink = _Sink(context, store_dir)
    for events, samples in context.collector_batches(chunk, limits.collector_batch_rows):
        sink.aggregator.add_events(events)
        sink.writer.add(events)
        sink.aggregator.add_samples(samples)
    windows = _KinetoWindows(context, sink, limits, budget)
    for window in chunk.kineto:
        windows.add(window, store_dir)
    if chunk.meta.get("hostname"):  # the host track's label, whatever Kineto named the process
        context.process_names[int(chunk.meta["pid"])] = str(chunk.meta["hostname"])
    if progress is not None:
        progress(1.0)
    meta = chunk.meta
    # Kineto's windows. A chunk of the first format holds Kineto's events converted, and a
    # window's steps may sit in another chunk: it is read as recorded whole, as it always was.
    recorded = None if meta.get("version") == 1 else sorted(windows.spans)
    result = sink.finish(0, recorded)
    warning = read_warning(
        context.unknown_categories,
        windows.ignored_phases(),
        context.device_like_unknown,
        result.aggregates.event_counts,
        windows.n_events,
    )
    metadata = {
        "format": "collector",
        # Version-1 chunks hold Kineto's events converted into columns, with no windows.
        "chunk_version": meta.get("version"),
        "clock": "unix",
        "base_time_ns": 0,
        "events_in_file": chunk.n_events + windows.n_events,
        "samples_in_file": chunk.n_samples,
        "collector": {k: meta.get(k) for k in ("job", "node", "hostname", "rank", "pid", "seq")},
        "final": bool(meta.get("final")),
        "sources": meta.get("sources"),
        "devices": meta.get("devices"),
        "torch_version": meta.get("torch_version"),
        "world_size": meta.get("world_size"),
        "gpu_count": _gpu_count(meta.get("devices"), result.aggregates),
        "cpu_count": meta.get("cpu_count"),
        # What Kineto recorded, one [start, end] per window (see _KinetoWindows.add).
        "captured_windows_ns": sorted(windows.spans),
        "ignored_phases": windows.ignored_phases(),
        "unknown_categories": dict(context.unknown_categories),
        "device_like_unknown": context.device_like_unknown,
        "read_warning": "; ".join(filter(None, [warning, *windows.failures])),
        "distributed_info": windows.distributed_info,
    }
    return replace(result, metadata=metadata)


_Batch = TypeVar("_Batch", EventBatch, FlowBatch, SampleBatch)


class _KinetoWindows:
    """A collector chunk's Kineto windows, read by the trace-file parser into the part.

    The rules the collector applied when it converted windows itself: torch.profiler's
    ``ProfilerStep#n`` ranges go (the chunk's steps are the collector's own) and so do host
    ranges the collector recorded into the window itself (its rows are in the chunk's columns);
    their GPU projections stay.
    """

    def __init__(self, context: PartContext, sink: _Sink, limits: Limits, budget: int) -> None:
        self.context, self.sink, self.limits = context, sink, limits
        self.budget = budget  # decompressed bytes left for the windows
        self.n_events = 0
        self.spans: list[list[int]] = []
        self.failures: list[str] = []
        self.distributed_info: dict | None = None

    def ignored_phases(self) -> dict[str, int]:
        counts = self.context.phase_counts
        return {ph: n for ph, n in counts.items() if ph not in _USED_PHASES}

    def add(self, window: KinetoWindow, store_dir: Path) -> None:
        """Parse one window; an unreadable one is reported in the part's read warning, the
        rest of the chunk is kept."""
        number = len(self.spans) + len(self.failures) + 1
        memory_before = len(self.context.memory)
        info = KinetoFile()
        with tempfile.TemporaryDirectory(dir=store_dir.parent) as tmp:
            trace = Path(tmp) / f"window{window.file_suffix}"
            try:
                with trace.open("wb") as out:
                    window.write_trace(out, self.budget)
                batches = [
                    self.context.kineto_batches(decoded)
                    for decoded in iter_chunks(
                        trace, info, self.budget, chunk_bytes=self.limits.chunk_bytes
                    )
                ]
                first = min(
                    (int(b[0].columns["start_ns"].min()) for b in batches if len(b[0])),
                    default=None,
                )
                offset_ns, _ = _clock_offset(info, first)
            except (TraceFormatError, ChunkFormatError) as exc:
                del self.context.memory[memory_before:]
                self.failures.append(f"Kineto window {number} of this chunk was not read: {exc}")
                return
        self.budget -= info.decompressed_bytes
        self.n_events += info.n_events
        self.distributed_info = info.get("distributedInfo") or self.distributed_info
        memory = self.context.memory
        for i in range(memory_before, len(memory)):
            memory[i] = {**memory[i], "time_ns": memory[i]["time_ns"] + offset_ns}
        is_step, own = self._name_flags(window.annotations)
        events = [_shifted(b[0], "start_ns", offset_ns) for b in batches]
        span = _captured_span(events, is_step)
        if span is not None:
            self.spans.append(span)
        for batch, (_, flows, samples) in zip(events, batches, strict=True):
            kept = _without_collector_copies(batch, is_step, own)
            self.sink.aggregator.add_events(kept)
            self.sink.writer.add(kept)
            if flows is not None:
                self.sink.flows.append(_shifted(flows, "time_ns", offset_ns))
            if samples is not None:
                self.sink.aggregator.add_samples(_shifted(samples, "time_ns", offset_ns))

    def _name_flags(self, own_names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Per string id of the part: a ``ProfilerStep#n`` name; a name the collector recorded."""
        names = self.context.strings.strings
        own = set(own_names)
        is_step = np.fromiter((bool(PROFILER_STEP_RE.match(n)) for n in names), bool, len(names))
        return is_step, np.fromiter((n in own for n in names), bool, len(names))


def _shifted(batch: _Batch, column: str, offset_ns: int) -> _Batch:
    return type(batch)({**batch.columns, column: batch.columns[column] + offset_ns})


def _captured_span(events: list[EventBatch], is_step: np.ndarray) -> list[int] | None:
    """From the start of the window's first ``ProfilerStep#n`` to the end of its last one;
    the span of all its events when it has none; None when it has no events."""
    starts, ends = [], []
    for steps_only in (True, False):
        for batch in events:
            c = batch.columns
            rows = np.ones(len(batch), dtype=bool)
            if steps_only:
                rows = (c["kind"] == EventKind.USER_ANNOTATION) & _flag(is_step, c["name"])
            if rows.any():
                starts.append(int(c["start_ns"][rows].min()))
                ends.append(int((c["start_ns"][rows] + c["dur_ns"][rows]).max()))
        if starts:
            return [min(starts), max(ends)]
    return None


def _flag(flags: np.ndarray, names: np.ndarray) -> np.ndarray:
    """``flags[names]``, False for an absent name (-1)."""
    return (names >= 0) & flags[np.maximum(names, 0)]


def _without_collector_copies(
    batch: EventBatch, is_step: np.ndarray, own: np.ndarray
) -> EventBatch:
    kind, name = batch.columns["kind"], batch.columns["name"]
    annotation = kind == EventKind.USER_ANNOTATION
    drop = (annotation | (kind == EventKind.GPU_USER_ANNOTATION)) & _flag(is_step, name)
    drop |= annotation & _flag(own, name)
    if not drop.any():
        return batch
    return EventBatch({col: values[~drop] for col, values in batch.columns.items()})


def chunk_budget(path: Path, limits: Limits) -> int:
    """How many bytes a collector chunk's arrays may take once loaded."""
    ratio_bytes = path.stat().st_size * limits.max_chunk_expansion
    return min(limits.max_decompressed_bytes, max(limits.min_chunk_budget_bytes, ratio_bytes))


def _check_archive_size(path: Path, max_bytes: int) -> None:
    """A chunk is a zip of ``.npy`` arrays; refuse one whose members (as the zip declares
    them) or arrays (as their headers declare them: numpy allocates a whole array before
    reading it) would take more than ``max_bytes``, before anything is decompressed."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            expanded = sum(info.file_size for info in members)
            arrays = sum(_array_bytes(archive, info) for info in members)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise TraceFormatError(
            f"not a profiler-app chunk (not a readable .npz archive): {exc}"
        ) from exc
    needed = max(expanded, arrays)
    if needed > max_bytes:
        raise TraceFormatError(
            f"the chunk would expand to {needed / 1e9:.3g} GB, over the limit of "
            f"{max_bytes / 1e9:.3g} GB for an archive of this size"
        )


def _array_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """The bytes of the array a member declares (0 for members that hold none). Told by the
    member's first bytes, not its name: numpy reads ``meta`` from a member named ``meta`` as
    well as ``meta.npy``."""
    with archive.open(info) as member:
        if member.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
            return 0
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0  # 3.0 differs in text encoding only
            )
            shape, _, dtype = read_header(member)
        except ValueError as exc:
            raise TraceFormatError(
                f"the chunk's array {info.filename} is malformed: {exc}"
            ) from exc
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes > info.file_size:
        raise TraceFormatError(
            f"the chunk's array {info.filename} declares {nbytes:,} bytes but holds "
            f"{info.file_size:,}: the archive is damaged or forged"
        )
    return nbytes
