"""What each Kineto event's ``args`` add to the columns: decoded once per kind by its msgspec
struct (``kineto_schema``), then the link, kernel, collective, copy and operator columns."""

from __future__ import annotations

import re
from operator import attrgetter

import msgspec
import numpy as np

from profiler_app.traces.correlation import copies_sized_by_calls
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.kineto_encode import (
    StringColumn,
    dictionary,
    dictionary_raw,
    ints,
    pick,
    scatter,
)
from profiler_app.traces.kineto_schema import (
    KERNEL_ARGS_DECODER,
    LAUNCH_ARGS_DECODER,
    MEMORY_ARGS_DECODER,
    OPERATOR_ARGS_DECODER,
)
from tracefmt.kinds import EventKind
from tracefmt.names import memcpy_kind

_MEMCPY_DIRECTIONS = {"HtoD": 1, "DtoH": 2, "DtoD": 3, "HtoH": 4, "PtoP": 5}
# Where msgspec's message names an item of the array (`$[i]...`): the event it came from.
AT_INDEX = re.compile(r"`\$\[(\d+)\]((?:\.[\w.\[\]]+)?)`")
_EXTERNAL_ID = attrgetter("external_id")
_EXTERNAL_ID_LOWER = attrgetter("external_id_lower")
_CORRELATION = attrgetter("correlation")


def decode_args(decoder: msgspec.json.Decoder, raws: list | tuple, numbers: np.ndarray) -> list:
    """Decode many events' args with one call; errors name the event they came from."""
    try:
        return decoder.decode(b"[" + b",".join(raws) + b"]")
    except msgspec.ValidationError as exc:
        found = AT_INDEX.search(str(exc))
        where = f"event #{numbers[int(found.group(1))]}" if found else "an event"
        detail = AT_INDEX.sub(lambda m: f"`args{m.group(2) or ''}`", str(exc))
        raise TraceFormatError(f"{where} has malformed args: {detail}") from exc
    except RecursionError as exc:
        raise TraceFormatError("a value in args is nested too deeply") from exc


def all_args(
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
        decoded = decode_args(decoder, pick(raw_args, pos), numbers[pos])
        external = np.fromiter(map(_EXTERNAL_ID, decoded), np.int64, len(pos))
        older = np.fromiter(map(_EXTERNAL_ID_LOWER, decoded), np.int64, len(pos))
        cols["external_id"][pos] = np.where(external >= 0, external, older)
        cols["correlation"][pos] = np.fromiter(map(_CORRELATION, decoded), np.int64, len(pos))
        out[group] = (pos, decoded)
    return out


def kernel_columns(
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
    cols["shared_mem"][pos] = ints(list(map(attrgetter("shared_memory"), kargs)))[0]
    cols["occupancy_pct"][pos] = np.fromiter(map(attrgetter("occupancy"), kargs), np.float64)
    collective_columns(cols, strings, kargs, pos)


def collective_columns(
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
    picked = pick(sub_args, has)
    scatter(strings, "collective", n, rows, dictionary(list(map(attrgetter("collective"), picked))))
    scatter(strings, "dtype", n, rows, dictionary([a.dtype for a in picked]))
    groups = [a.pg_name if a.pg_name is not None else a.pg_id for a in picked]
    scatter(
        strings,
        "process_group",
        n,
        rows,
        dictionary(["" if g is None else str(g) for g in groups]),
    )
    for col in ("in_nelems", "out_nelems", "group_size"):
        cols[col][rows] = [getattr(a, col) for a in picked]


def memory_columns(cols: dict[str, np.ndarray], pos: np.ndarray, margs: list | tuple) -> None:
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


def copy_directions_from_names(cols: dict[str, np.ndarray], names: StringColumn) -> None:
    """A copy's direction from its name ("Memcpy HtoD (Pageable -> Device)") where its args
    did not state one (CUDA traces; ROCm writes ``args.kind``)."""
    todo = np.flatnonzero((cols["kind"] == EventKind.GPU_MEMCPY) & (cols["memcpy_kind"] == 0))
    if len(todo):
        by_name = np.fromiter(map(memcpy_kind, names.values), np.uint8, len(names.values))
        cols["memcpy_kind"][todo] = by_name[names.codes[todo]]


def launch_columns(cols: dict[str, np.ndarray], pos: np.ndarray, largs: list | tuple) -> None:
    """Bytes of a runtime copy call (ROCm); the aggregates give them to the copy it launched."""
    if not len(pos):
        return
    size = ints(list(map(attrgetter("size"), largs)))[0]
    runtime = (cols["kind"][pos] == EventKind.CUDA_RUNTIME) & (size >= 0)
    cols["bytes"][pos[runtime]] = size[runtime]


def size_copies(
    nbytes: np.ndarray,
    bandwidth_gbps: np.ndarray,
    dur_ns: np.ndarray,
    copies: np.ndarray,
    sizes: np.ndarray,
) -> None:
    """Gives ``copies`` their ``sizes``, and a bandwidth where none was recorded (bytes per ns
    = GB/s)."""
    nbytes[copies] = sizes
    dur = dur_ns[copies]
    derivable = np.isnan(bandwidth_gbps[copies]) & (dur > 0)
    bandwidth_gbps[copies[derivable]] = sizes[derivable] / dur[derivable]


def copy_sizes_from_calls(cols: dict[str, np.ndarray]) -> None:
    """``copies_sized_by_calls`` within one slice; a call in another slice of the file sizes
    its copy when the store is finished (``timeline_store``)."""
    copies, sizes = copies_sized_by_calls(cols["kind"], cols["correlation"], cols["bytes"])
    size_copies(cols["bytes"], cols["bandwidth_gbps"], cols["dur_ns"], copies, sizes)


def operator_columns(
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
            scatter(strings, col, n, pos[has], dictionary_raw(pick(raws, has)))
    collective_columns(cols, strings, oargs, pos)
