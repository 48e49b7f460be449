"""Decode one slice of Kineto's ``traceEvents`` array into columns.

A pure function of bytes (it can run in a worker process). Per-event Python work is limited to
C-level ``map``/``attrgetter`` passes, one per column, over the events that have that column;
each kind's ``args`` are decoded together in one msgspec call (see ``kineto_schema``).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter

import msgspec
import numpy as np
import pyarrow as pa

from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.exact import durations_to_ns, texts_to_ns
from profiler_app.traces.kineto_schema import (
    COUNTER_ARGS_DECODER,
    EVENTS_DECODER,
    KERNEL_ARGS_DECODER,
    LAUNCH_ARGS_DECODER,
    MEMORY_ARGS_DECODER,
    MEMORY_EVENT_ARGS_DECODER,
    METADATA_ARGS_DECODER,
    OPERATOR_ARGS_DECODER,
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
from tracefmt.names import memcpy_kind

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
_MEMCPY_DIRECTIONS = {"HtoD": 1, "DtoH": 2, "DtoD": 3, "HtoH": 4, "PtoP": 5}

_DEVICE_KIND_TABLE = np.zeros(256, dtype=bool)
_DEVICE_KIND_TABLE[[int(k) for k in DEVICE_KINDS]] = True
_NONE = np.empty(0, dtype=np.int64)
# Decoding a slice takes up to 10 times its bytes (measured: events without args, each on a
# thread of its own); 3-4 times on real traces.
_DECODE_BYTES_PER_BYTE = 16
_AT_INDEX = re.compile(r"`\$\[(\d+)\]((?:\.[\w.\[\]]+)?)`")

_PH = attrgetter("ph")
_NAME = attrgetter("name")
_CAT = attrgetter("cat")
_PID = attrgetter("pid")
_TID = attrgetter("tid")
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_ARGS = attrgetter("args")
_EXTERNAL_ID = attrgetter("external_id")
_EXTERNAL_ID_LOWER = attrgetter("external_id_lower")
_CORRELATION = attrgetter("correlation")


@dataclass(frozen=True)
class StringColumn:
    """Per-event codes into ``values`` (this chunk's own dictionary); -1 where absent."""

    codes: np.ndarray
    values: list[str]


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


def _pick(seq: list | tuple, positions: np.ndarray) -> list | tuple:
    if len(positions) == 0:
        return []
    if len(positions) == len(seq):
        return seq
    picked = itemgetter(*positions.tolist())(seq)
    return picked if len(positions) > 1 else [picked]


def _ints(values: list | tuple, absent: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """int64 array for mostly-int values; strings holding numbers ("0x0", "7") are parsed.

    Returns the array and the positions whose value was not a number at all.
    """
    n = len(values)
    try:
        return np.fromiter(values, dtype=np.int64, count=n), _NONE
    except (TypeError, ValueError, OverflowError):
        pass
    is_int = np.fromiter(map(isinstance, values, repeat(int)), dtype=bool, count=n)
    fixed = list(values)
    bad: list[int] = []
    for i in np.flatnonzero(~is_int).tolist():
        try:
            fixed[i] = int(str(values[i]), 0)
        except ValueError:
            fixed[i] = absent
            bad.append(i)
        if not -(2**63) <= fixed[i] < 2**63:
            fixed[i] = absent
            bad.append(i)
    return np.fromiter(fixed, dtype=np.int64, count=n), np.asarray(bad, dtype=np.int64)


def _dictionary(values: list | tuple) -> StringColumn:
    """Dictionary-encode strings in C (Arrow's hash kernel)."""
    encoded = pa.array(values, type=pa.string()).dictionary_encode()
    return StringColumn(
        encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
        encoded.dictionary.to_pylist(),
    )


def _dictionary_raw(raws: list | tuple) -> StringColumn:
    """``_dictionary`` for ``msgspec.Raw`` JSON texts, without a Python object per item."""
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    texts = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(raws),
        [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))],
    )
    encoded = texts.dictionary_encode()
    return StringColumn(
        encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
        [v.decode("utf-8", errors="replace") for v in encoded.dictionary.to_pylist()],
    )


def _scatter(
    strings: dict[str, StringColumn], col: str, n: int, positions: np.ndarray, part: StringColumn
) -> None:
    """Put ``part`` (codes for ``positions``) into column ``col``, keeping earlier entries."""
    existing = strings.get(col)
    if existing is None:
        codes = np.full(n, -1, dtype=np.int32)
        codes[positions] = part.codes
        strings[col] = StringColumn(codes, part.values)
    else:
        existing.codes[positions] = part.codes + len(existing.values)
        strings[col] = StringColumn(existing.codes, existing.values + part.values)


def _decode_args(decoder: msgspec.json.Decoder, raws: list | tuple, numbers: np.ndarray) -> list:
    """Decode many events' args with one call; errors name the event they came from."""
    try:
        return decoder.decode(b"[" + b",".join(raws) + b"]")
    except msgspec.ValidationError as exc:
        found = _AT_INDEX.search(str(exc))
        where = f"event #{numbers[int(found.group(1))]}" if found else "an event"
        detail = _AT_INDEX.sub(lambda m: f"`args{m.group(2) or ''}`", str(exc))
        raise TraceFormatError(f"{where} has malformed args: {detail}") from exc
    except RecursionError as exc:
        raise TraceFormatError("a value in args is nested too deeply") from exc


def _track_keys(
    on_device: np.ndarray,
    pids: list | tuple,
    tids: list | tuple,
    device_ids: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, list[TrackKey]]:
    """Local track codes. ``device_ids`` = (positions, device, stream) replaces pid/tid for GPU
    events. String pids/tids (Kineto's "Spans") become a labelled track of their own."""
    pid_arr, bad_pid = _ints(pids)
    tid_arr, bad_tid = _ints(tids)
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
    # Factorise each key part on its own (fast int64 sorts), then the combined code.
    parts = [np.unique(a, return_inverse=True) for a in (pid_arr, tid_arr, hints)]
    combined = on_device.astype(np.int64)
    for uniq, inverse in parts:
        combined = combined * len(uniq) + inverse.reshape(-1)
    codes, inverse = np.unique(combined, return_inverse=True)
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
    categories = _dictionary(list(map(_CAT, timed)))
    category_kinds = np.fromiter(map(kind_of, categories.values), np.uint8, len(categories.values))
    kind = category_kinds[categories.codes] if n else np.empty(0, np.uint8)
    kind[phase == _INSTANT] = EventKind.INSTANT
    cols["kind"] = kind
    unrecognised = _unrecognised(timed, categories, phase)
    cols["start_ns"] = texts_to_ns(list(map(_TS, timed)), "ts", numbers)
    cols["dur_ns"] = durations_to_ns(np.fromiter(map(_DUR, timed), np.float64, n), numbers)
    strings = {"name": _dictionary(list(map(_NAME, timed)))}
    _steps_recorded_as_operators(kind, strings["name"])
    _device_ops_by_name(kind, categories, strings["name"])
    raw_args = list(map(_ARGS, timed))
    groups = _all_args(cols, raw_args, kind, numbers)

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
                pos, decoded = pos[keep], _pick(decoded, keep)
            device[pos] = _ints(list(map(attrgetter("device"), decoded)))[0]
            stream[pos] = _ints(list(map(attrgetter("stream"), decoded)))[0]
        # GPU-side annotations carry no args: Kineto puts device and stream in pid and tid.
        dev_pid, _ = _ints(_pick(pids, dev_pos))
        dev_tid, _ = _ints(_pick(tids, dev_pos))
        cols["device"][dev_pos] = np.where(device[dev_pos] >= 0, device[dev_pos], dev_pid)
        cols["stream"][dev_pos] = np.where(stream[dev_pos] >= 0, stream[dev_pos], dev_tid)
        device_ids = (dev_pos, cols["device"][dev_pos], cols["stream"][dev_pos])
    cols["track"], tracks = _track_keys(on_device, pids, tids, device_ids)

    _kernel_columns(cols, strings, *groups["kernel"])
    _memory_columns(cols, *groups["memory"])
    _copy_directions_from_names(cols, strings["name"])
    _launch_columns(cols, *groups["other"])
    _copy_sizes_from_calls(cols)
    _operator_columns(cols, strings, *groups["operator"])
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
    decoded = _decode_args(MEMORY_EVENT_ARGS_DECODER, _pick(raw_args, pos), numbers[pos])
    out = {"time_ns": cols["start_ns"][pos], "track": cols["track"][pos]}
    for col in MEMORY_EVENT_COLUMNS[2:]:
        out[col] = _ints(list(map(attrgetter(col), decoded)))[0]
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
    """Copies, sets and waits of an accelerator that records every device op in one category
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
        map(looks_like_device_work, map(_NAME, _pick(timed, rows)), map(_TID, _pick(timed, rows)))
    )
    return counts, int(device_like)


def _all_args(
    cols: dict[str, np.ndarray], raw_args: list, kind: np.ndarray, numbers: np.ndarray
) -> dict[str, tuple[np.ndarray, list | tuple]]:
    """Each event's args decoded once, by the struct of its kind; fills the link columns.

    Returns, per group, the positions of its events and their decoded args.
    """
    is_operator = kind == EventKind.CPU_OP
    is_kernel = kind == EventKind.KERNEL
    is_memory = (kind == EventKind.GPU_MEMCPY) | (kind == EventKind.GPU_MEMSET)
    groups: dict[str, tuple[np.ndarray, msgspec.json.Decoder]] = {
        "operator": (is_operator, OPERATOR_ARGS_DECODER),
        "kernel": (is_kernel, KERNEL_ARGS_DECODER),
        "memory": (is_memory, MEMORY_ARGS_DECODER),
        "other": (~(is_operator | is_kernel | is_memory), LAUNCH_ARGS_DECODER),
    }
    out: dict[str, tuple[np.ndarray, list | tuple]] = {}
    for group, (mask, decoder) in groups.items():
        pos = np.flatnonzero(mask)
        if not len(pos):
            out[group] = (pos, [])
            continue
        decoded = _decode_args(decoder, _pick(raw_args, pos), numbers[pos])
        external = np.fromiter(map(_EXTERNAL_ID, decoded), np.int64, len(pos))
        older = np.fromiter(map(_EXTERNAL_ID_LOWER, decoded), np.int64, len(pos))
        cols["external_id"][pos] = np.where(external >= 0, external, older)
        cols["correlation"][pos] = np.fromiter(map(_CORRELATION, decoded), np.int64, len(pos))
        out[group] = (pos, decoded)
    return out


def _kernel_columns(
    cols: dict[str, np.ndarray],
    strings: dict[str, StringColumn],
    pos: np.ndarray,
    kargs: list | tuple,
) -> None:
    if not len(pos):
        return
    for col in ("grid", "block"):
        dims = [
            v if v is not None and len(v) == 3 else (0, 0, 0) for v in map(attrgetter(col), kargs)
        ]
        arr = np.asarray(dims, dtype=np.int64).reshape(-1, 3)
        for axis, suffix in enumerate("xyz"):
            cols[f"{col}_{suffix}"][pos] = arr[:, axis]
    cols["registers"][pos] = np.fromiter(map(attrgetter("registers"), kargs), np.int64, len(pos))
    cols["shared_mem"][pos] = _ints(list(map(attrgetter("shared_memory"), kargs)))[0]
    cols["occupancy_pct"][pos] = np.fromiter(map(attrgetter("occupancy"), kargs), np.float64)
    _collective_columns(cols, strings, kargs, pos)


def _collective_columns(
    cols: dict[str, np.ndarray],
    strings: dict[str, StringColumn],
    sub_args: list | tuple,
    pos: np.ndarray,
) -> None:
    n = len(cols["kind"])
    names = list(map(attrgetter("collective"), sub_args))
    has = np.flatnonzero(np.fromiter(map(bool, names), bool, len(names)))
    if not len(has):
        return
    rows = pos[has]
    picked = _pick(sub_args, has)
    _scatter(
        strings, "collective", n, rows, _dictionary(list(map(attrgetter("collective"), picked)))
    )
    _scatter(strings, "dtype", n, rows, _dictionary([a.dtype for a in picked]))
    groups = [a.pg_name if a.pg_name is not None else a.pg_id for a in picked]
    _scatter(
        strings,
        "process_group",
        n,
        rows,
        _dictionary(["" if g is None else str(g) for g in groups]),
    )
    for col in ("in_nelems", "out_nelems", "group_size"):
        cols[col][rows] = [getattr(a, col) for a in picked]


def _memory_columns(cols: dict[str, np.ndarray], pos: np.ndarray, margs: list | tuple) -> None:
    if not len(pos):
        return
    cols["bytes"][pos] = np.fromiter(map(attrgetter("bytes"), margs), np.int64, len(pos))
    cols["bandwidth_gbps"][pos] = np.fromiter(
        map(attrgetter("bandwidth_gbps"), margs), np.float64, len(pos)
    )
    # The direction is normally read from the name ("Memcpy HtoD (Host -> Device)") later;
    # ROCm also states it in args.kind.
    cols["memcpy_kind"][pos] = [
        _MEMCPY_DIRECTIONS.get(k, 0) if isinstance(k, str) else 0
        for k in map(attrgetter("kind"), margs)
    ]


def _copy_directions_from_names(cols: dict[str, np.ndarray], names: StringColumn) -> None:
    """A copy's direction from its name ("Memcpy HtoD (Pageable -> Device)") where its args
    did not state one (CUDA traces; ROCm writes ``args.kind``)."""
    todo = np.flatnonzero((cols["kind"] == EventKind.GPU_MEMCPY) & (cols["memcpy_kind"] == 0))
    if len(todo):
        by_name = np.fromiter(map(memcpy_kind, names.values), np.uint8, len(names.values))
        cols["memcpy_kind"][todo] = by_name[names.codes[todo]]


def _launch_columns(cols: dict[str, np.ndarray], pos: np.ndarray, largs: list | tuple) -> None:
    """Bytes of a runtime copy call (ROCm); the aggregates give them to the copy it launched."""
    if not len(pos):
        return
    size = _ints(list(map(attrgetter("size"), largs)))[0]
    runtime = (cols["kind"][pos] == EventKind.CUDA_RUNTIME) & (size >= 0)
    cols["bytes"][pos[runtime]] = size[runtime]


def _copy_sizes_from_calls(cols: dict[str, np.ndarray]) -> None:
    """ROCm writes a copy's size only on the runtime call that enqueued it (``args.size`` of
    ``hipMemcpyWithStream``); the copy takes it through the shared correlation id, and its
    bandwidth follows (bytes per ns = GB/s). A call in another slice of the file is not seen
    here: the analyses look it up again (``insights.pure.analyses.counters``)."""
    kind, correlation = cols["kind"], cols["correlation"]
    copies = np.flatnonzero(
        (kind == EventKind.GPU_MEMCPY) & (cols["bytes"] < 0) & (correlation >= 0)
    )
    calls = np.flatnonzero((kind == EventKind.CUDA_RUNTIME) & (cols["bytes"] >= 0))
    if not len(copies) or not len(calls):
        return
    calls = calls[np.argsort(correlation[calls], kind="stable")]
    at = np.minimum(np.searchsorted(correlation[calls], correlation[copies]), len(calls) - 1)
    found = correlation[calls[at]] == correlation[copies]
    copies, sizes = copies[found], cols["bytes"][calls[at[found]]]
    cols["bytes"][copies] = sizes
    dur = cols["dur_ns"][copies]
    derivable = np.isnan(cols["bandwidth_gbps"][copies]) & (dur > 0)
    cols["bandwidth_gbps"][copies[derivable]] = sizes[derivable] / dur[derivable]


def _operator_columns(
    cols: dict[str, np.ndarray],
    strings: dict[str, StringColumn],
    pos: np.ndarray,
    oargs: list | tuple,
) -> None:
    n = len(cols["kind"])
    if not len(pos):
        return
    for col, key in (("input_types", "input_type"), ("input_dims", "input_dims")):
        raws = list(map(attrgetter(key), oargs))
        has = np.flatnonzero(np.fromiter(map(len, raws), np.int64, len(raws)))
        if len(has):
            _scatter(strings, col, n, pos[has], _dictionary_raw(_pick(raws, has)))
    _collective_columns(cols, strings, oargs, pos)


def _flows(
    events: list[Event], phase: np.ndarray, numbers: np.ndarray
) -> tuple[dict[str, np.ndarray], list[TrackKey], StringColumn]:
    candidates = np.flatnonzero((phase >= _FLOW_START) & (phase <= _FLOW_END))
    # Launch flows repeat the launch→kernel link that ``correlation`` already records.
    cats = map(_CAT, _pick(events, candidates))
    wanted = ~np.fromiter(map(is_launch_flow, cats), bool, len(candidates))
    keep = candidates[wanted]
    flows = list(_pick(events, keep))
    ids, bad = _ints([e.id for e in flows])
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
    return columns, tracks, _dictionary([e.cat for e in flows])


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
            _AT_INDEX.sub(
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
        _pick(events, timed_idx), phase[timed_idx], numbers[timed_idx]
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
