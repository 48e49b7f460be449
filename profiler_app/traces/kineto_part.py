"""Read a Kineto (PyTorch profiler) trace file into a part: its chunks decoded (in workers when
given an executor), normalised and written through the ``PartSink``, then its times put on the
unix epoch (``clock_offset``, which the collector's Kineto windows use too) and its metadata
recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path

from profiler_app.traces.aggregate import PartAggregates
from profiler_app.traces.decompress import ReadProgress
from profiler_app.traces.kineto import KinetoFile, iter_chunks
from profiler_app.traces.normalize import PartContext
from profiler_app.traces.part_sink import IngestResult, Limits, PartSink
from profiler_app.traces.recognition import read_warning

# Chrome-trace phases the parser turns into something; others are counted as ignored.
USED_PHASES = {"X", "i", "I", "s", "t", "f", "C", "M"}
# Clocks whose times say when the events ran (unix-epoch times); a trace aligned on its own
# start ("trace_start") does not say when it ran.
WALL_CLOCKS = ("baseTimeNanoseconds", "unix")
# Timestamps at or after 2000-01-01 are taken to be unix-epoch times already.
_EPOCH_2000_NS = 946_684_800 * 10**9


def ingest_kineto(
    path: Path,
    store_dir: Path,
    limits: Limits,
    progress: Callable[[float], None] | None,
    executor: Executor | None,
    workers: int,
) -> IngestResult:
    context = PartContext()
    sink = PartSink(context, store_dir)
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
    offset_ns, clock = clock_offset(info, sink.aggregator.start_ns)
    ignored = {ph: n for ph, n in context.phase_counts.items() if ph not in USED_PHASES}
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
        "gpu_count": gpu_count(info.get("deviceProperties"), result.aggregates),
        "cpu_count": None,  # a Kineto trace does not say
    }
    return replace(result, metadata=metadata)


def gpu_count(devices: list | None, aggregates: PartAggregates) -> int:
    """The GPUs of the node as the part lists them, else the ones it saw working."""
    return len(devices) if devices else len(aggregates.devices)


def clock_offset(info: KinetoFile, first_start_ns: int | None) -> tuple[int, str]:
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
