"""Decode one slice of Kineto's ``traceEvents`` array into columns.

A pure function of bytes (it can run in a worker process). Per-event Python work is limited to
C-level ``map``/``attrgetter`` passes, one per column, over the events that have that column;
each kind's ``args`` are decoded together in one msgspec call (see ``kineto_schema``).
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

import msgspec
import numpy as np

from profiler_app.traces.arrays import factorize_sorted
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.exact import durations_to_ns, texts_to_ns
from profiler_app.traces.kineto_args import (
    AT_INDEX,
    all_args,
    copy_directions_from_names,
    copy_sizes_from_calls,
    decode_args,
    kernel_columns,
    launch_columns,
    memory_columns,
    operator_columns,
)
from profiler_app.traces.kineto_encode import (
    StringColumn,
    dictionary,
    ints,
    pick,
)
from profiler_app.traces.kineto_schema import (
    COUNTER_ARGS_DECODER,
    EVENTS_DECODER,
    MEMORY_EVENT_ARGS_DECODER,
    METADATA_ARGS_DECODER,
    Event,
)
from profiler_app.traces.model import TrackKey
from tracefmt.categories import (
    ONE_CATEGORY_DEVICE_OPS,
    device_op_kind,
    is_launch_flow,
    is_recognised,
    kind_of,
    kind_of_event,
    looks_like_device_work,
)
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import DEVICE_KINDS, EventKind

# Phase letter -> code. "X" (complete) and "i"/"I" (instant) events become timeline rows.
PHASE_CODES = {"X": 1, "i": 2, "I": 2, "s": 3, "t": 4, "f": 5, "C": 6, "M": 7}
_X, _INSTANT, _FLOW_START, _FLOW_END, _COUNTER, _META = 1, 2, 3, 5, 6, 7
_PHASE_NAMES = {1: "X", 2: "i", 3: "s", 4: "t", 5: "f", 6: "C", 7: "M"}
# Kineto's allocator events (``profile_memory=True``): instants of this name.
MEMORY_EVENT_NAME = "[memory]"
# Columns of the memory events a chunk yields ("track" holds codes into the chunk's tracks).
MEMORY_EVENT_COLUMNS = (
    "time_ns",
    "track",
    "device_type",
    "device_id",
    "addr",
    "bytes",
    "total_allocated",
    "total_reserved",
)

_DEVICE_KIND_TABLE = np.zeros(256, dtype=bool)
_DEVICE_KIND_TABLE[[int(k) for k in DEVICE_KINDS]] = True
# Decoding a slice takes up to 10 times its bytes (measured: events without args, each on a
# thread of its own); 3-4 times on real traces.
_DECODE_BYTES_PER_BYTE = 16

_PH = attrgetter("ph")
_NAME = attrgetter("name")
_CAT = attrgetter("cat")
_PID = attrgetter("pid")
_TID = attrgetter("tid")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_ARGS = attrgetter("args")


@dataclass(frozen=True)
class DecodedChunk:
    n_events: int
    columns: dict[str, np.ndarray]  # timeline rows; "track" holds codes into ``tracks``
    strings: dict[str, StringColumn]
    tracks: list[TrackKey]
    flows: dict[str, np.ndarray]  # "track" codes index ``flow_tracks``
    flow_tracks: list[TrackKey]
    flow_categories: StringColumn
    counters: list[tuple[str, int | str, int, float]]  # (series, pid, time_ns, value)
    memory: dict[str, np.ndarray]  # MEMORY_EVENT_COLUMNS; empty when the slice has none
    metadata: list[tuple[str, int | str, int | str, str]]  # (kind, pid, tid, value)
    phase_counts: dict[str, int]
    unknown_categories: dict[str, int]  # complete events of categories this reader does not know
    device_like_unknown: int  # ...of which look like device work


@dataclass(frozen=True)
class ChunkFailure:
    """The slice did not decode as an array of events; ``message`` says why."""

    message: str


def _track_keys(
    on_device: np.ndarray,
    pids: list | tuple,
    tids: list | tuple,
    device_ids: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, list[TrackKey]]:
    """Local track codes. ``device_ids`` = (positions, device, stream) replaces pid/tid for GPU
    events. String pids/tids (Kineto's "Spans") become a labelled track of their own."""
    pid_arr, bad_pid = ints(pids)
    tid_arr, bad_tid = ints(tids)
    hints = np.zeros(len(pids), dtype=np.int64)
    hint_texts = [""]
    for i in sorted(set(bad_pid.tolist()) | set(bad_tid.tolist())):
        hints[i] = len(hint_texts)
        hint_texts.append(f"{pids[i]} / {tids[i]}".strip(" /") or "(unnamed)")
        pid_arr[i] = tid_arr[i] = -1
    if device_ids is not None:
        positions, device, stream = device_ids
        pid_arr[positions] = device
        tid_arr[positions] = stream
    # Factorise each key part on its own (a few distinct values each), then the combined code.
    parts = [factorize_sorted(a) for a in (pid_arr, tid_arr, hints)]
    combined = on_device.astype(np.int64)
    for uniq, inverse in parts:
        combined = combined * len(uniq) + inverse.reshape(-1)
    codes, inverse = factorize_sorted(combined)
    (pid_u, _), (tid_u, _), (hint_u, _) = parts
    rest, h = np.divmod(codes, len(hint_u))
    rest, t = np.divmod(rest, len(tid_u))
    d, p = np.divmod(rest, len(pid_u))
    tracks = list(
        map(
            TrackKey,
            (d != 0).tolist(),
            pid_u[p].tolist(),
            tid_u[t].tolist(),
            [hint_texts[i] for i in hint_u[h].tolist()],
        )
    )
    return inverse.astype(np.int32).reshape(-1), tracks


def _timed_columns(
    timed: list | tuple, phase: np.ndarray, numbers: np.ndarray
) -> tuple[
    dict[str, np.ndarray],
    dict[str, StringColumn],
    list[TrackKey],
    tuple[dict[str, int], int],
    dict[str, np.ndarray],
]:
    n = len(timed)
    cols: dict[str, np.ndarray] = {
        c: np.full(n, absent, dtype=dtype) for c, (dtype, absent) in EVENT_COLUMNS.items()
    }
    categories = dictionary(list(map(_CAT, timed)))
    category_kinds = np.fromiter(map(kind_of, categories.values), np.uint8, len(categories.values))
    kind = category_kinds[categories.codes] if n else np.empty(0, np.uint8)
    kind[phase == _INSTANT] = EventKind.INSTANT
    cols["kind"] = kind
    unrecognised = _unrecognised(timed, categories, phase)
    cols["start_ns"] = texts_to_ns(list(map(_TS, timed)), "ts", numbers)
    cols["dur_ns"] = durations_to_ns(np.fromiter(map(_DUR, timed), np.float64, n), numbers)
    strings = {"name": dictionary(list(map(_NAME, timed)))}
    _steps_recorded_as_operators(kind, strings["name"])
    _device_ops_by_name(kind, categories, strings["name"])
    raw_args = list(map(_ARGS, timed))
    groups = all_args(cols, raw_args, kind, numbers)

    on_device = _DEVICE_KIND_TABLE[kind]
    pids, tids = list(map(_PID, timed)), list(map(_TID, timed))
    dev_pos = np.flatnonzero(on_device)
    device_ids = None
    if len(dev_pos):
        device = np.full(n, -1, dtype=np.int64)
        stream = np.full(n, -1, dtype=np.int64)
        for group in ("kernel", "memory", "other"):
            pos, decoded = groups[group]
            if group == "other":  # only its GPU-side members (annotations, syncs)
                keep = np.flatnonzero(on_device[pos])
                pos, decoded = pos[keep], pick(decoded, keep)
            device[pos] = ints(list(map(attrgetter("device"), decoded)))[0]
            stream[pos] = ints(list(map(attrgetter("stream"), decoded)))[0]
        # GPU-side annotations carry no args: Kineto puts device and stream in pid and tid.
        dev_pid, _ = ints(pick(pids, dev_pos))
        dev_tid, _ = ints(pick(tids, dev_pos))
        cols["device"][dev_pos] = np.where(device[dev_pos] >= 0, device[dev_pos], dev_pid)
        cols["stream"][dev_pos] = np.where(stream[dev_pos] >= 0, stream[dev_pos], dev_tid)
        device_ids = (dev_pos, cols["device"][dev_pos], cols["stream"][dev_pos])
    cols["track"], tracks = _track_keys(on_device, pids, tids, device_ids)

    kernel_columns(cols, strings, *groups["kernel"])
    memory_columns(cols, *groups["memory"])
    copy_directions_from_names(cols, strings["name"])
    launch_columns(cols, *groups["other"])
    copy_sizes_from_calls(cols)
    operator_columns(cols, strings, *groups["operator"])
    memory = _memory_events(cols, strings["name"], raw_args, numbers)
    return cols, strings, tracks, unrecognised, memory


def _memory_events(
    cols: dict[str, np.ndarray], names: StringColumn, raw_args: list, numbers: np.ndarray
) -> dict[str, np.ndarray]:
    """Kineto's ``[memory]`` instants with their allocator args (they stay instants on the
    timeline too)."""
    if MEMORY_EVENT_NAME not in names.values:
        return {}
    code = names.values.index(MEMORY_EVENT_NAME)
    pos = np.flatnonzero((names.codes == code) & (cols["kind"] == EventKind.INSTANT))
    if not len(pos):
        return {}
    decoded = decode_args(MEMORY_EVENT_ARGS_DECODER, pick(raw_args, pos), numbers[pos])
    out = {"time_ns": cols["start_ns"][pos], "track": cols["track"][pos]}
    for col in MEMORY_EVENT_COLUMNS[2:]:
        out[col] = ints(list(map(attrgetter(col), decoded)))[0]
    return out


def _steps_recorded_as_operators(kind: np.ndarray, names: StringColumn) -> None:
    """PyTorch 1.8–1.9 recorded ``ProfilerStep#<n>`` as an operator; later ones as the
    annotation it is (``tracefmt.categories.kind_of_event``)."""
    is_step = np.fromiter(
        (kind_of_event("cpu_op", n) != EventKind.CPU_OP for n in names.values),
        bool,
        len(names.values),
    )
    if is_step.any():
        kind[(kind == EventKind.CPU_OP) & is_step[names.codes]] = EventKind.USER_ANNOTATION


def _device_ops_by_name(kind: np.ndarray, categories: StringColumn, names: StringColumn) -> None:
    """Copies and sets of an accelerator that records every device op in one category
    (``tracefmt.categories.device_op_kind``), judged once per distinct name."""
    for code, category in enumerate(categories.values):
        if category.lower() not in ONE_CATEGORY_DEVICE_OPS:
            continue
        pos = np.flatnonzero((categories.codes == code) & (kind != EventKind.INSTANT))
        used = np.unique(names.codes[pos])
        by_name = np.zeros(len(names.values), dtype=np.uint8)
        by_name[used] = [device_op_kind(category, names.values[c]) for c in used]
        kind[pos] = by_name[names.codes[pos]]


def _unrecognised(
    timed: list | tuple, categories: StringColumn, phase: np.ndarray
) -> tuple[dict[str, int], int]:
    """Complete events of categories this reader does not know: count per category, and how
    many of them look like device work (kernel-like names, "stream" threads)."""
    unknown = [not is_recognised(c) for c in categories.values]
    if not any(unknown):
        return {}, 0
    per_code = np.bincount(categories.codes[phase == _X], minlength=len(categories.values))
    counts = {
        c: int(per_code[i]) for i, c in enumerate(categories.values) if unknown[i] and per_code[i]
    }
    rows = np.flatnonzero(np.asarray(unknown)[categories.codes] & (phase == _X))
    device_like = sum(
        map(looks_like_device_work, map(_NAME, pick(timed, rows)), map(_TID, pick(timed, rows)))
    )
    return counts, int(device_like)


def _flows(
    events: list[Event], phase: np.ndarray, numbers: np.ndarray
) -> tuple[dict[str, np.ndarray], list[TrackKey], StringColumn]:
    candidates = np.flatnonzero((phase >= _FLOW_START) & (phase <= _FLOW_END))
    # Launch flows repeat the launch→kernel link that ``correlation`` already records.
    cats = dictionary(list(map(_CAT, pick(events, candidates))))
    launch = np.fromiter(map(is_launch_flow, cats.values), bool, len(cats.values))
    wanted = ~launch[cats.codes] if len(candidates) else np.zeros(0, dtype=bool)
    keep = candidates[wanted]
    flows = list(pick(events, keep))
    ids, bad = ints([e.id for e in flows])
    for i in bad.tolist():
        # Chrome allows string flow ids; a stable negative number keeps them distinct.
        ids[i] = -(zlib.crc32(str(flows[i].id).encode()) + 1)
    track, tracks = _track_keys(
        np.zeros(len(flows), dtype=bool), [e.pid for e in flows], [e.tid for e in flows]
    )
    columns = {
        "flow_id": ids,
        "phase": (phase[keep] - _FLOW_START).astype(np.uint8),
        "time_ns": texts_to_ns([e.ts for e in flows], "ts", numbers[keep]),
        "track": track,
    }
    return columns, tracks, dictionary([e.cat for e in flows])


def _counters(events: list[Event], phase: np.ndarray, numbers: np.ndarray) -> list:
    out = []
    for i in np.flatnonzero(phase == _COUNTER).tolist():
        event = events[i]
        try:
            values = COUNTER_ARGS_DECODER.decode(event.args)
        except msgspec.DecodeError as exc:
            raise TraceFormatError(f"counter event #{numbers[i]} is malformed: {exc}") from exc
        time_ns = int(texts_to_ns([event.ts], "ts", numbers[i : i + 1])[0])
        for key, value in values.items():
            out.append((f"{event.name}.{key}" if event.name else key, event.pid, time_ns, value))
    return out


def _metadata(events: list[Event], phase: np.ndarray) -> list:
    out = []
    for i in np.flatnonzero(phase == _META).tolist():
        event = events[i]
        try:
            args = METADATA_ARGS_DECODER.decode(event.args)
        except msgspec.DecodeError:
            continue  # a name we cannot read only costs a track label
        out.append((event.name, event.pid, event.tid, args.name or args.labels))
    return out


def _phase_counts(events: list[Event], counts: np.ndarray) -> dict[str, int]:
    if counts[0]:  # phases this parser ignores ("B"/"E" pairs, async events...)
        return dict(Counter(map(_PH, events)))
    return {name: int(counts[code]) for code, name in _PHASE_NAMES.items() if counts[code]}


def decode_chunk(text: bytes | bytearray, first_event: int) -> DecodedChunk | ChunkFailure:
    """Columns for ``text``, a JSON array holding a whole number of trace events.

    Event numbers in messages count from ``first_event``.
    """
    # msgspec crashes the process (SIGSEGV) where an allocation fails part way through a
    # decode; asked for first, the memory a decode takes fails cleanly with a MemoryError.
    np.empty(len(text) * _DECODE_BYTES_PER_BYTE, dtype=np.uint8)
    try:
        events = EVENTS_DECODER.decode(text)
    except msgspec.ValidationError as exc:
        return ChunkFailure(
            AT_INDEX.sub(
                lambda m: f"event #{first_event + int(m.group(1))}{m.group(2) or ''}", str(exc)
            )
        )
    except msgspec.DecodeError as exc:
        return ChunkFailure(str(exc))
    except RecursionError:
        return ChunkFailure("a value is nested too deeply (more than a thousand levels)")
    phase = np.fromiter(map(PHASE_CODES.get, map(_PH, events), repeat(0)), np.int8, len(events))
    counts = np.bincount(phase, minlength=8)
    numbers = np.arange(first_event, first_event + len(events), dtype=np.int64)
    timed_idx = np.flatnonzero((phase == _X) | (phase == _INSTANT))
    columns, strings, tracks, (unknown_categories, device_like), memory = _timed_columns(
        pick(events, timed_idx), phase[timed_idx], numbers[timed_idx]
    )
    if counts[_FLOW_START : _FLOW_END + 1].any():
        flows, flow_tracks, flow_cats = _flows(events, phase, numbers)
    else:
        flows, flow_tracks, flow_cats = {}, [], StringColumn(np.empty(0, np.int32), [])
    return DecodedChunk(
        n_events=len(events),
        columns=columns,
        strings=strings,
        tracks=tracks,
        flows=flows,
        flow_tracks=flow_tracks,
        flow_categories=flow_cats,
        counters=_counters(events, phase, numbers) if counts[_COUNTER] else [],
        memory=memory,
        metadata=_metadata(events, phase) if counts[_META] else [],
        phase_counts=_phase_counts(events, counts),
        unknown_categories=unknown_categories,
        device_like_unknown=device_like,
    )
