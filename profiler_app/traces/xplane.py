"""Read a TensorFlow or JAX profile (an XPlane protobuf, ``*.xplane.pb``) into a part.

The XSpace is turned into the Chrome-trace events a Kineto trace holds and read by the Kineto
reader, so one reader makes every store (``docs/formats.md`` lists how each XPlane event is
classified):

- a step (an event with a ``step_num`` stat: ``jax.profiler.StepTraceAnnotation``,
  ``tf.profiler.experimental.Trace(..., step_num=)``, Keras' "Profiled batch") is the profiler's own
  step marker, as ``torch.profiler``'s: it becomes the annotation ``ProfilerStep#<n>``, so the
  step rule reads it as step n and the complete-steps window leaves out the last one, which a
  capture stopped mid-step cuts; its own name is kept in its args;
- an XLA op on a ``/device:*`` plane (a GPU stream's kernels, or the plane's "XLA Ops" line
  when it has no stream lines, as on TPU) becomes a kernel of that device (its number from the
  plane's name, "/device:GPU:3"), memory copies copies;
- on the host plane, XLA ops (events with an ``hlo_op`` stat: a CPU-only run's XLA CPU ops)
  stay CPU operators of the thread that ran them, with ``hlo_module`` and ``hlo_op`` in args;
  the Python tracer's ``$file:line function`` events are Python functions, on a track of their
  own beside their thread's; the rest are CPU ops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.kineto_part import ingest_kineto
from profiler_app.traces.part_sink import IngestResult, Limits
from profiler_app.traces.xplane_schema import XSpace

XPLANE_SUFFIX = ".xplane.pb"
# An XSpace's first field is a plane: tag 1, length-delimited.
_PLANE_TAG = 0x0A
_EPOCH_2000_NS = 946_684_800 * 10**9
_HOST_PLANE = "/host:CPU"
_DEVICE_PREFIX = "/device:"
# Lines xprof derives from the streams' events; read only where a device has no stream lines.
_DERIVED_LINES = frozenset(
    {"XLA Modules", "XLA Ops", "Steps", "Framework Name Scope", "Framework Ops", "Source code"}
)
# Events only TensorFlow's runtime records (its eager executor and C API).
_TENSORFLOW_EVENTS = frozenset({"EagerExecute", "TFE_Py_ExecuteCancelable", "EagerKernelExecute"})
_COPY_WORDS = ("memcpy", "copy-start", "copy-done", "h2d", "d2h")


def is_xplane(path: Path) -> bool:
    """Whether ``path`` holds an XPlane profile: by its name, else by its first bytes (a
    Chrome-trace JSON starts with ``{`` or ``[`` after whitespace, gzip with 1f 8b)."""
    if path.name.endswith(XPLANE_SUFFIX):
        return True
    with open(path, "rb") as file:
        head = file.read(64)
    return bool(head) and head[0] == _PLANE_TAG and head.lstrip()[:1] not in (b"{", b"[")


def read_xspace(path: Path, max_bytes: int) -> Any:
    size = path.stat().st_size
    if size > max_bytes:
        raise TraceFormatError(
            f"the XPlane profile is larger than {max_bytes / 1e9:.3g} GB, the configured limit "
            "(TRACE_MAX_DECOMPRESSED_BYTES)"
        )
    space = XSpace()
    try:
        space.ParseFromString(path.read_bytes())
    except DecodeError as exc:
        raise TraceFormatError(
            f"it is not a readable XPlane profile (.xplane.pb): the protobuf is corrupt or "
            f"truncated ({exc})"
        ) from exc
    if not any(line.events for plane in space.planes for line in plane.lines):
        raise TraceFormatError(
            "it is not an XPlane profile with events: no plane of it holds a timed event "
            "(is it the .xplane.pb that tf.profiler or jax.profiler wrote?)"
        )
    return space


def _stat_value(stat: Any, names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return names.get(stat.ref_value, "")
    if which == "bytes_value":
        return None
    return getattr(stat, which) if which else None


def _stats(stats: Any, names: dict[int, str]) -> dict[str, Any]:
    out = {}
    for stat in stats:
        value = _stat_value(stat, names)
        if value is not None:
            out[names.get(stat.metadata_id, str(stat.metadata_id))] = value
    return out


def plane_stats(plane: Any) -> dict[str, Any]:
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    return _stats(plane.stats, names)


def profile_start_ns(space: Any) -> int:
    """What line times are relative to: the profile's start when the writer made them relative
    to it (JAX and TensorFlow write lines from 0), else 0 (times already unix-epoch)."""
    for plane in space.planes:
        start = plane_stats(plane).get("profile_start_time")
        if isinstance(start, int) and start >= _EPOCH_2000_NS:
            return start
    return 0


def _host_kind(name: str, stats: dict[str, Any]) -> str:
    if "step_num" in stats:
        return "user_annotation"
    if name.startswith("$"):
        return "python_function"
    return "cpu_op"


def _device_kind(name: str) -> str:
    lower = name.lower()
    return "gpu_memcpy" if any(word in lower for word in _COPY_WORDS) else "kernel"


def device_ordinal(plane: Any) -> int:
    """The device's number as its plane's name gives it ("/device:GPU:3" is 3), else the
    plane's id."""
    number = plane.name.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else int(plane.id)


def _device_lines(plane: Any) -> list[Any]:
    streams = [line for line in plane.lines if line.name not in _DERIVED_LINES]
    return streams or [line for line in plane.lines if line.name == "XLA Ops"]


def _thread_names(pid: int, tid: int, python_tid: int, label: str) -> list[dict[str, Any]]:
    return [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}},
        {
            "ph": "M",
            "name": "thread_name",
            "pid": pid,
            "tid": python_tid,
            "args": {"name": f"{label} (Python functions)"},
        },
    ]


def trace_events(space: Any, base_ns: int) -> Iterator[dict[str, Any]]:
    """The XSpace's events as Chrome-trace events, times in µs since ``base_ns``."""
    start_ns = profile_start_ns(space)
    for index, plane in enumerate(space.planes):
        on_device = plane.name.startswith(_DEVICE_PREFIX)
        if not on_device and plane.name != _HOST_PLANE:
            continue
        event_names = {k: v.name for k, v in plane.event_metadata.items()}
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        pid = device_ordinal(plane) if on_device else plane_stats(plane).get("process_id", index)
        if not on_device:
            yield {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": plane.name}}
        lines = _device_lines(plane) if on_device else plane.lines
        for number, line in enumerate(lines):
            tid = line.id
            # The Python tracer times its events apart from the runtime's TraceMe events, which
            # they overlap by a few hundred ns: on one thread they would not nest, so they get
            # a track beside the thread's (a small negative tid, which no thread id is).
            python_tid = -(number + 1)
            if not on_device:
                yield from _thread_names(pid, tid, python_tid, line.display_name or line.name)
            line_ns = line.timestamp_ns + start_ns - base_ns
            for event in line.events:
                name = event_names.get(event.metadata_id, "")
                meta = plane.event_metadata.get(event.metadata_id)
                stats = _stats(meta.stats, stat_names) if meta is not None else {}
                stats.update(_stats(event.stats, stat_names))
                begin_ns = line_ns + event.offset_ps // 1000
                out: dict[str, Any] = {
                    "ph": "X",
                    "name": name,
                    "pid": pid,
                    "tid": tid,
                    "ts": begin_ns / 1000,
                    "dur": (event.duration_ps // 1000) / 1000,
                }
                if on_device:
                    out["cat"] = _device_kind(name)
                    stats.update(device=pid, stream=tid)
                else:
                    out["cat"] = _host_kind(name, stats)
                if out["cat"] == "user_annotation":
                    stats["step_name"] = name
                    out["name"] = f"ProfilerStep#{int(stats['step_num'])}"
                elif out["cat"] == "python_function":
                    out["tid"] = python_tid
                out["args"] = stats
                yield out


def trace_base_ns(space: Any) -> int:
    """The earliest line start, unix-epoch: the converted trace's baseTimeNanoseconds."""
    start_ns = profile_start_ns(space)
    starts = [line.timestamp_ns for plane in space.planes for line in plane.lines if line.events]
    return start_ns + min(starts)


def framework(space: Any) -> dict[str, str]:
    """The framework (and its version where the profile says it): JAX names itself in its
    metadata plane; TensorFlow only by its runtime's events (eager execution, tf.function)."""
    for plane in space.planes:
        stats = plane_stats(plane)
        if "jax_version" in stats:
            return {"framework": "JAX", "framework_version": str(stats["jax_version"])}
    for plane in space.planes:
        events = {meta.name for meta in plane.event_metadata.values()}
        stats_named = {meta.name for meta in plane.stat_metadata.values()}
        if events & _TENSORFLOW_EVENTS or "tf_function_call" in stats_named:
            return {"framework": "TensorFlow", "framework_version": ""}
    return {}


def write_chrome_trace(space: Any, out: Path) -> int:
    """The XSpace as a Chrome-trace JSON file a Kineto reader reads; its event count."""
    base_ns = trace_base_ns(space)
    count = 0
    with open(out, "w") as file:
        file.write(json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": base_ns})[:-1])
        file.write(', "traceEvents": [\n')
        for event in trace_events(space, base_ns):
            file.write((",\n" if count else "") + json.dumps(event))
            count += 1
        file.write("\n]}\n")
    return count


def ingest_xplane(
    path: Path,
    store_dir: Path,
    limits: Limits,
    progress: Callable[[float], None] | None,
    executor: Executor | None,
    workers: int,
) -> IngestResult:
    space = read_xspace(path, limits.max_decompressed_bytes)
    # Beside the store, not in it: the store's folder holds only what the store is made of.
    converted = store_dir.with_name(f"{store_dir.name}.xplane.json")
    converted.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_chrome_trace(space, converted)
        result = ingest_kineto(converted, store_dir, limits, progress, executor, workers)
    finally:
        converted.unlink(missing_ok=True)
    metadata = {
        **result.metadata,
        "format": "xplane",
        "hostnames": list(space.hostnames),
        "xplane_errors": list(space.errors),
        **framework(space),
    }
    return replace(result, metadata=metadata)
