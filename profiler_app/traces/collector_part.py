"""Read a collector chunk into a part: its own columns (the collector's host ranges, steps and
samples), then each profiler window it carries (Kineto's, or a JAX or TensorFlow job's XPlane
profile, converted as an uploaded ``.xplane.pb`` is), parsed as a trace file and put on the
chunk's clock without the rows the chunk already holds. A chunk is refused before anything is loaded
when its arrays would take more than its budget (``chunk_budget``).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from profiler_app.traces.capture import capture_report
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.event_model import steps_among
from profiler_app.traces.kineto import KinetoFile, iter_chunks
from profiler_app.traces.kineto_chunk import DecodedChunk
from profiler_app.traces.kineto_part import USED_PHASES, clock_offset, gpu_count
from profiler_app.traces.model import EventBatch, FlowBatch, SampleBatch, TrackKey
from profiler_app.traces.normalize import PartContext
from profiler_app.traces.part_sink import IngestResult, Limits, PartSink
from profiler_app.traces.recognition import read_warning
from profiler_app.traces.window import consecutive_runs
from profiler_app.traces.xplane import framework, read_xspace, write_chrome_trace
from tracefmt.chunk import Chunk, ChunkFormatError, KinetoWindow, thread_ids_of
from tracefmt.kinds import DEVICE_KINDS, EventKind, of_kinds
from tracefmt.names import PROFILER_STEP_RE


def ingest_collector(
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
    sink = PartSink(context, store_dir)
    for events, samples in context.collector_batches(chunk, limits.collector_batch_rows):
        sink.aggregator.add_events(events)
        sink.writer.add(events)
        sink.aggregator.add_samples(samples)
    windows = _KinetoWindows(
        context, sink, limits, budget, _annotation_threads(chunk), thread_ids_of(chunk.meta)
    )
    for window in chunk.kineto:
        windows.add(window, store_dir)
    if chunk.meta.get("hostname"):  # the host track's label, whatever Kineto named the process
        context.process_names[int(chunk.meta["pid"])] = str(chunk.meta["hostname"])
    if progress is not None:
        progress(1.0)
    meta = chunk.meta
    # Kineto's windows: read from the chunk's columns in a chunk of the first format, which
    # holds Kineto's events converted.
    recorded = _converted_windows(chunk) if meta.get("version") == 1 else sorted(windows.spans)
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
        "gpu_count": gpu_count(meta.get("devices"), result.aggregates),
        "cpu_count": meta.get("cpu_count"),
        # What Kineto recorded, one [start, end] per window (see _KinetoWindows.add).
        "captured_windows_ns": recorded,
        "ignored_phases": windows.ignored_phases(),
        "unknown_categories": dict(context.unknown_categories),
        "device_like_unknown": context.device_like_unknown,
        "read_warning": "; ".join(filter(None, [warning, *windows.failures])),
        "distributed_info": windows.distributed_info,
        # A JAX or TensorFlow job's, as its XPlane windows name it (a PyTorch job's: none).
        **windows.framework,
        # What profiling cost the training and what it captured, as the collector measured.
        "capture": capture_report(meta.get("capture")),
    }
    return replace(result, metadata=metadata)


_Batch = TypeVar("_Batch", EventBatch, FlowBatch, SampleBatch)
# The rows a collector records itself; in a chunk of the first format every other row is one of
# Kineto's, converted.
_COLLECTOR_KINDS = (int(EventKind.USER_ANNOTATION), int(EventKind.STEP))


def _annotation_threads(chunk: Chunk) -> dict[str, set[int]]:
    """The threads each of the collector's annotation and step names was recorded on."""
    ev = chunk.events
    ours = of_kinds(ev["ev_kind"], _COLLECTOR_KINDS)
    threads: dict[str, set[int]] = {}
    for name, tid in zip(
        chunk.event_names()[ours].tolist(), ev["ev_tid"][ours].tolist(), strict=True
    ):
        threads.setdefault(name, set()).add(int(tid))
    return threads


def _converted_windows(chunk: Chunk) -> list[list[int]]:
    """What Kineto recorded, for a chunk of the first format: the steps in which one of
    Kineto's host events (a launch, an operator) starts, adjacent ones as one [start, end];
    the span of Kineto's events when no step holds one; nothing when the chunk has none."""
    c = chunk.events
    kind, start = c["ev_kind"], c["ev_start_ns"]
    end = start + c["ev_dur_ns"]
    kineto = ~of_kinds(kind, _COLLECTOR_KINDS)
    if not kineto.any():
        return []
    host = np.sort(start[kineto & ~of_kinds(kind, DEVICE_KINDS)])
    steps = np.flatnonzero(steps_among(kind, c["ev_name"], chunk.strings))
    steps = steps[np.argsort(start[steps], kind="stable")]
    holds = np.searchsorted(host, end[steps]) > np.searchsorted(host, start[steps])
    if not holds.any():
        return [[int(start[kineto].min()), int(end[kineto].max())]]
    at = np.flatnonzero(holds)  # positions of the captured steps in start order
    first, last = consecutive_runs(at)
    spans: list[list[int]] = []
    for a, b in zip(at[first].tolist(), at[last].tolist(), strict=True):
        low, high = int(start[steps[a]]), int(end[steps[a : b + 1]].max())
        if spans and low <= spans[-1][1]:  # overlapping steps: one window
            spans[-1][1] = max(spans[-1][1], high)
        else:
            spans.append([low, high])
    return spans


class _KinetoWindows:
    """A collector chunk's Kineto windows, read by the trace-file parser into the part.

    The rules the collector applied when it converted windows itself: torch.profiler's
    ``ProfilerStep#n`` ranges go (the chunk's steps are the collector's own) and so do host
    ranges the collector recorded into the window itself (its rows are in the chunk's columns);
    their GPU projections stay.
    """

    def __init__(
        self,
        context: PartContext,
        sink: PartSink,
        limits: Limits,
        budget: int,
        annotation_threads: dict[str, set[int]],
        thread_ids: dict[int, int],
    ) -> None:
        self.context, self.sink, self.limits = context, sink, limits
        self.annotation_threads = annotation_threads
        self.thread_ids = thread_ids  # Kineto's alias of a thread → its OS thread id
        self.budget = budget  # decompressed bytes left for the windows
        self.n_events = 0
        self.spans: list[list[int]] = []
        self.failures: list[str] = []
        self.distributed_info: dict | None = None
        self.framework: dict[str, str] = {}

    def ignored_phases(self) -> dict[str, int]:
        counts = self.context.phase_counts
        return {ph: n for ph, n in counts.items() if ph not in USED_PHASES}

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
                if window.xplane:
                    trace = self._xplane_as_chrome_trace(trace, window.annotations)
                batches = [
                    self.context.kineto_batches(_on_os_threads(decoded, self.thread_ids))
                    for decoded in iter_chunks(
                        trace, info, self.budget, chunk_bytes=self.limits.chunk_bytes
                    )
                ]
                first = min(
                    (int(b[0].columns["start_ns"].min()) for b in batches if len(b[0])),
                    default=None,
                )
                offset_ns, _ = clock_offset(info, first)
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
            kept = _without_collector_copies(batch, is_step, own, window.xplane)
            self.sink.aggregator.add_events(kept)
            self.sink.writer.add(kept)
            if flows is not None:
                self.sink.flows.append(_shifted(flows, "time_ns", offset_ns))
            if samples is not None:
                self.sink.aggregator.add_samples(_shifted(samples, "time_ns", offset_ns))

    def _xplane_as_chrome_trace(self, path: Path, own_names: tuple[str, ...]) -> Path:
        """The XPlane window as the Chrome trace an uploaded ``.xplane.pb`` becomes, each host
        line that holds the collector's annotations on the thread the collector saw run them."""
        space = read_xspace(path, self.budget)
        self.framework = framework(space) or self.framework
        _on_collector_threads(space, set(own_names), self.annotation_threads)
        converted = path.with_suffix(".json")
        write_chrome_trace(space, converted)
        path.unlink()
        return converted

    def _name_flags(self, own_names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Per string id of the part: a ``ProfilerStep#n`` name; a name the collector recorded."""
        names = self.context.strings.strings
        own = set(own_names)
        is_step = np.fromiter((bool(PROFILER_STEP_RE.match(n)) for n in names), bool, len(names))
        return is_step, np.fromiter((n in own for n in names), bool, len(names))


def _on_os_threads(decoded: DecodedChunk, thread_ids: dict[int, int]) -> DecodedChunk:
    """A window's host events on the OS thread that ran them where Kineto wrote the thread's
    alias (``tracefmt.chunk.kineto_thread_alias``: its first window's CUDA runtime calls), so
    the training thread is one track that its steps and runtime calls share."""
    if not thread_ids:
        return decoded

    def on_os(keys: list[TrackKey]) -> list[TrackKey]:
        return [
            replace(k, tid=thread_ids[k.tid]) if not k.on_device and k.tid in thread_ids else k
            for k in keys
        ]

    metadata = [
        (kind, pid, thread_ids.get(tid, tid) if isinstance(tid, int) else tid, value)
        for kind, pid, tid, value in decoded.metadata
    ]
    return replace(
        decoded,
        tracks=on_os(decoded.tracks),
        flow_tracks=on_os(decoded.flow_tracks),
        metadata=metadata,
    )


def _on_collector_threads(space: Any, own: set[str], threads: dict[str, set[int]]) -> None:
    """The profiler numbers a host line by a hash of its thread, the collector by the OS's
    thread id: a line holding the collector's annotations takes the one thread the collector
    recorded those names on (where it is one), so the thread is one track, not two."""
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            seen: set[int] = set()
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if name in own:
                    seen |= threads.get(name, set())
            if len(seen) == 1:
                line.id = seen.pop()


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
    batch: EventBatch, is_step: np.ndarray, own: np.ndarray, xplane: bool = False
) -> EventBatch:
    kind, name = batch.columns["kind"], batch.columns["name"]
    annotation = kind == EventKind.USER_ANNOTATION
    drop = (annotation | (kind == EventKind.GPU_USER_ANNOTATION)) & _flag(is_step, name)
    # An XPlane profile records the collector's TraceAnnotations as plain host events.
    copies = ~of_kinds(kind, DEVICE_KINDS) if xplane else annotation
    drop |= copies & _flag(own, name)
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
