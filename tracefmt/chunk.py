"""Collector chunk format v3: a numpy ``.npz`` archive of columnar events and samples, plus the
profiler windows of the chunk. A PyTorch job's are Kineto windows: packed into compressed
columns (``tracefmt.kineto_columns``), or, where the collector could not pack one, as
torch.profiler wrote it (gzipped JSON). A JAX or TensorFlow job's are the XPlane profiles
(``.xplane.pb``) their own profilers wrote, stored deflated.

The collector writes it and the server reads it; both import this one module.
``docs/formats.md`` is the user-facing description; this module is the executable one.
"""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import numpy as np

from tracefmt import kineto_columns, kineto_unpack
from tracefmt.kinds import CHUNK_MAX_KIND, MemcpyKind, SampleKind

FORMAT_NAME = "profiler-app-chunk"
FORMAT_VERSION = 3
# Version 1 chunks carry Kineto's events as columns instead of members; version 2 chunks carry
# every window as gzipped JSON. They all read the same way.
READABLE_VERSIONS = (1, 2, 3)
FILE_SUFFIX = ".pcol"
ZIP_MAGIC = b"PK\x03\x04"


# column -> (dtype, trailing shape); every event column has N rows, every sample column M rows.
EVENT_COLUMNS: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {
    "ev_kind": (np.dtype(np.uint8), ()),
    "ev_name": (np.dtype(np.uint32), ()),
    "ev_start_ns": (np.dtype(np.int64), ()),
    "ev_dur_ns": (np.dtype(np.int64), ()),
    "ev_pid": (np.dtype(np.int32), ()),
    "ev_tid": (np.dtype(np.int64), ()),
    "ev_device": (np.dtype(np.int16), ()),
    "ev_stream": (np.dtype(np.int32), ()),
    "ev_correlation": (np.dtype(np.int64), ()),
    "ev_bytes": (np.dtype(np.int64), ()),
    "ev_memcpy_kind": (np.dtype(np.uint8), ()),
    "ev_grid": (np.dtype(np.int32), (3,)),
    "ev_block": (np.dtype(np.int32), (3,)),
    "ev_registers": (np.dtype(np.int32), ()),
    "ev_shared_mem": (np.dtype(np.int32), ()),
}

# Value of each event column for a row that has no such attribute.
EVENT_DEFAULTS: dict[str, int] = {
    "ev_kind": 0,
    "ev_name": 0,
    "ev_start_ns": 0,
    "ev_dur_ns": 0,
    "ev_pid": 0,
    "ev_tid": 0,
    "ev_device": -1,
    "ev_stream": -1,
    "ev_correlation": -1,
    "ev_bytes": -1,
    "ev_memcpy_kind": 0,
    "ev_grid": 0,
    "ev_block": 0,
    "ev_registers": -1,
    "ev_shared_mem": -1,
}

SAMPLE_COLUMNS: dict[str, tuple[np.dtype[Any], tuple[int, ...]]] = {
    "s_kind": (np.dtype(np.uint8), ()),
    "s_device": (np.dtype(np.int16), ()),
    "s_name": (np.dtype(np.uint32), ()),
    "s_time_ns": (np.dtype(np.int64), ()),
    "s_value": (np.dtype(np.float64), ()),
}

SOURCE_NAMES = ("kineto", "nvml", "psutil", "perf")

# meta key -> accepted Python types (bool is checked before int on purpose: bool is an int).
_META_TYPES: dict[str, tuple[type, ...]] = {
    "format": (str,),
    "version": (int,),
    "job": (str,),
    "node": (str,),
    "hostname": (str,),
    "rank": (int,),
    "local_rank": (int,),
    "world_size": (int,),
    "pid": (int,),
    "seq": (int,),
    "final": (bool,),
    "created_ns": (int,),
    "torch_version": (str, type(None)),
    "cuda": (bool,),
    "devices": (list,),
    "sources": (dict,),
}


# Keys a chunk may leave out (older collectors did not write them).
_OPTIONAL_META_TYPES: dict[str, tuple[type, ...]] = {
    "cpu_count": (int, type(None)),
    "kineto_windows": (list,),
    "thread_ids": (dict,),
}
# Linux thread ids lie below this (PID_MAX_LIMIT): a larger "tid" is not an OS thread's.
OS_TID_LIMIT = 1 << 22


def kineto_thread_alias(pthread_id: int) -> int | None:
    """How Kineto may write a thread it has not registered yet (its first window's CUDA
    runtime calls): the low 32 bits of its ``pthread_t``, as a signed int. None where that
    could be an OS thread id, so an alias is never taken for a real thread."""
    low = pthread_id & 0xFFFFFFFF
    alias = low - (1 << 32) if low >= 1 << 31 else low
    return None if 0 <= alias < OS_TID_LIMIT else alias


def thread_ids_of(meta: dict[str, Any]) -> dict[int, int]:
    """A chunk's ``thread_ids`` (Kineto's alias of a thread → its OS thread id), what of it is
    well formed."""
    found = meta.get("thread_ids") or {}
    out = {}
    for alias, tid in found.items():
        with contextlib.suppress(TypeError, ValueError):
            if isinstance(tid, int) and not isinstance(tid, bool):
                out[int(alias)] = tid
    return out


GZIP_MAGIC = b"\x1f\x8b"
# An XSpace's first field is a plane: protobuf tag 1, length-delimited.
XPLANE_MAGIC = b"\x0a"


class ChunkFormatError(ValueError):
    """The bytes are not a valid chunk; the message is meant for the person who uploaded it."""


@dataclass(frozen=True)
class KinetoWindow:
    """One profiler window: a Kineto window's Chrome-trace JSON, packed
    (``tracefmt.kineto_columns``) or gzipped, or an XPlane profile (JAX, TensorFlow); and the
    names of the collector's own annotations that were inside it (the profiler recorded host
    copies of them)."""

    data: bytes
    annotations: tuple[str, ...] = ()

    @property
    def packed(self) -> bool:
        return kineto_columns.is_packed(self.data)

    @property
    def xplane(self) -> bool:
        return self.data[:1] == XPLANE_MAGIC

    @property
    def file_suffix(self) -> str:
        """The suffix of the window as a trace file (``.json`` once unpacked)."""
        if self.xplane:
            return ".xplane.pb"
        return ".json" if self.packed else ".json.gz"

    def write_trace(self, out: IO[bytes], max_bytes: int) -> int:
        """Write the window as a trace file (JSON, or gzipped JSON as stored); returns the
        bytes written. A packed window that would expand past ``max_bytes`` is refused with
        ``ChunkFormatError`` before it takes the memory."""
        if self.xplane and len(self.data) > max_bytes:
            raise ChunkFormatError(
                f"an XPlane window of {len(self.data):,} bytes is over the limit of {max_bytes:,}"
            )
        if not self.packed:
            out.write(self.data)
            return len(self.data)
        try:
            return kineto_unpack.unpack_trace(self.data, out, max_bytes)
        except kineto_columns.PackedTraceError as exc:
            raise ChunkFormatError(str(exc)) from exc


@dataclass(frozen=True)
class Chunk:
    meta: dict[str, Any]
    strings: tuple[str, ...]
    events: dict[str, np.ndarray]
    samples: dict[str, np.ndarray]
    kineto: tuple[KinetoWindow, ...] = ()

    @property
    def n_events(self) -> int:
        return int(self.events["ev_kind"].shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.samples["s_kind"].shape[0])

    def event_names(self) -> np.ndarray:
        """Event names as an object array (decoded through ``strings``)."""
        lookup = np.asarray(self.strings, dtype=object)
        return lookup[self.events["ev_name"]] if len(lookup) else np.empty(0, dtype=object)


def empty_events(n: int = 0) -> dict[str, np.ndarray]:
    """Event columns of length ``n`` filled with each column's "absent" value."""
    return {
        col: np.full((n, *shape), EVENT_DEFAULTS[col], dtype=dtype)
        for col, (dtype, shape) in EVENT_COLUMNS.items()
    }


def empty_samples(n: int = 0) -> dict[str, np.ndarray]:
    return {
        col: np.zeros((n, *shape), dtype=dtype) for col, (dtype, shape) in SAMPLE_COLUMNS.items()
    }


def write_chunk(
    path: str | Path | IO[bytes],
    meta: dict[str, Any],
    strings: list[str] | tuple[str, ...],
    events: dict[str, np.ndarray],
    samples: dict[str, np.ndarray],
    kineto: list[KinetoWindow] | tuple[KinetoWindow, ...] = (),
) -> None:
    """Validate and write one chunk to ``path`` (a file name or a binary file object)."""
    data = chunk_bytes(meta, strings, events, samples, kineto)
    if isinstance(path, str | Path):
        Path(path).write_bytes(data)
    else:
        path.write(data)


def chunk_bytes(
    meta: dict[str, Any],
    strings: list[str] | tuple[str, ...],
    events: dict[str, np.ndarray],
    samples: dict[str, np.ndarray],
    kineto: list[KinetoWindow] | tuple[KinetoWindow, ...] = (),
) -> bytes:
    windows = [
        {"member": window_member_name(i, w), "annotations": sorted(w.annotations)}
        for i, w in enumerate(kineto)
    ]
    full_meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, **meta}
    full_meta["kineto_windows"] = windows
    _check_meta(full_meta)
    strings = tuple(strings)
    _check_strings(strings)
    _check_columns("event", events, EVENT_COLUMNS)
    _check_columns("sample", samples, SAMPLE_COLUMNS)
    _check_values(strings, events, samples)
    for window in kineto:
        if not (window.data.startswith(GZIP_MAGIC) or window.packed or window.xplane):
            raise ChunkFormatError(
                "a profiler window must be packed or gzipped JSON, or an XPlane profile"
            )
    arrays = {
        "meta": _json_bytes(full_meta),
        "strings": _json_bytes(list(strings)),
        **{col: events[col] for col in EVENT_COLUMNS},
        **{col: samples[col] for col in SAMPLE_COLUMNS},
    }
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    # Kineto windows are compressed already: stored as they are, read back without inflating.
    # An XPlane profile is not (protobuf): the archive deflates it.
    with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_STORED) as archive:
        for i, window in enumerate(kineto):
            compress = zipfile.ZIP_DEFLATED if window.xplane else zipfile.ZIP_STORED
            archive.writestr(window_member_name(i, window), window.data, compress)
    return buf.getvalue()


def kineto_member_name(index: int, packed: bool = False) -> str:
    return f"kineto-{index}.kcol" if packed else f"kineto-{index}.json.gz"


def xplane_member_name(index: int) -> str:
    return f"xplane-{index}.xplane.pb"


def window_member_name(index: int, window: KinetoWindow) -> str:
    if window.xplane:
        return xplane_member_name(index)
    return kineto_member_name(index, window.packed)


def read_chunk(source: str | Path | IO[bytes] | bytes) -> Chunk:
    """Read and validate a chunk; raises ``ChunkFormatError`` with a readable reason."""
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    if isinstance(source, str | Path):
        with open(source, "rb") as fh:
            return read_chunk(fh)
    with _archive(source) as npz:
        names = set(npz.files)
        meta = _meta_of(npz)
        strings = _json_array(npz["strings"], "strings") if "strings" in names else None
        if not isinstance(strings, list):
            raise ChunkFormatError("chunk 'strings' must be a JSON list of strings")
        missing = (set(EVENT_COLUMNS) | set(SAMPLE_COLUMNS)) - names
        if missing:
            raise ChunkFormatError(f"chunk is missing column(s): {', '.join(sorted(missing))}")
        events = {col: npz[col] for col in EVENT_COLUMNS}
        samples = {col: npz[col] for col in SAMPLE_COLUMNS}
        windows = meta.get("kineto_windows", [])
        absent = [w["member"] for w in windows if w["member"] not in names]
        if absent:
            raise ChunkFormatError(f"chunk is missing Kineto window(s): {', '.join(absent)}")
        kineto = tuple(
            KinetoWindow(npz.zip.read(w["member"]), tuple(w["annotations"])) for w in windows
        )
        for w, window in zip(windows, kineto, strict=True):
            if w["member"].endswith(".kcol") and not window.packed:
                raise ChunkFormatError(f"chunk member {w['member']} is not a packed window")
            if w["member"].endswith(".xplane.pb") and not window.xplane:
                raise ChunkFormatError(f"chunk member {w['member']} is not an XPlane profile")
    strings_t = tuple(strings)
    _check_strings(strings_t)
    _check_columns("event", events, EVENT_COLUMNS)
    _check_columns("sample", samples, SAMPLE_COLUMNS)
    _check_values(strings_t, events, samples)
    return Chunk(meta=meta, strings=strings_t, events=events, samples=samples, kineto=kineto)


def read_chunk_meta(path: str | Path) -> dict[str, Any]:
    """A chunk's meta alone, its columns and windows left unread (a spool's bookkeeping).
    Raises ``ChunkFormatError`` as ``read_chunk`` does."""
    with open(path, "rb") as fh, _archive(fh) as npz:
        return _meta_of(npz)


def chunk_written_at(path: str | Path) -> datetime:
    """When the chunk at ``path`` was written (its meta's ``created_ns``, to the microsecond):
    the last its process recorded, where it is the process's newest. Raises
    ``ChunkFormatError`` as ``read_chunk`` does."""
    created_ns = read_chunk_meta(path)["created_ns"]
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=created_ns // 1000)
    except OverflowError:  # past the years a datetime holds: a garbled or hostile meta
        raise ChunkFormatError(f"chunk meta 'created_ns' ({created_ns}) is not a time") from None


@contextlib.contextmanager
def _archive(source: IO[bytes]) -> Iterator[Any]:
    """The chunk's .npz archive; every way it (or what is read of it meanwhile) can be
    unreadable comes out as a ``ChunkFormatError``."""
    start = source.tell()
    magic = source.read(4)
    source.seek(start)
    # Checked first: np.load would read a bare array (or a pickle) instead.
    if magic != ZIP_MAGIC:
        raise ChunkFormatError("not a profiler-app chunk (not a readable .npz archive)")
    try:
        with np.load(source, allow_pickle=False) as npz:
            yield npz
    except ChunkFormatError:
        raise
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ChunkFormatError(
            f"not a profiler-app chunk (not a readable .npz archive): {exc}"
        ) from exc
    except ValueError as exc:
        raise ChunkFormatError(f"chunk contains an unreadable array: {exc}") from exc


def _meta_of(npz: Any) -> dict[str, Any]:
    if "meta" not in npz.files:
        raise ChunkFormatError("not a profiler-app chunk: the archive has no 'meta' array")
    meta = _json_array(npz["meta"], "meta")
    _check_meta(meta)
    result: dict[str, Any] = meta
    return result


def _json_bytes(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, separators=(",", ":")).encode(), dtype=np.uint8)


def _json_array(arr: np.ndarray, what: str) -> Any:
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise ChunkFormatError(f"chunk '{what}' must be a 1-D uint8 array of UTF-8 JSON")
    try:
        return json.loads(arr.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ChunkFormatError(f"chunk '{what}' is not valid UTF-8 JSON: {exc}") from exc


def _check_meta(meta: Any) -> None:
    if not isinstance(meta, dict):
        raise ChunkFormatError("chunk 'meta' must be a JSON object")
    if meta.get("format") != FORMAT_NAME:
        raise ChunkFormatError(f"not a profiler-app chunk: meta.format is {meta.get('format')!r}")
    if meta.get("version") not in READABLE_VERSIONS:
        raise ChunkFormatError(
            f"unsupported chunk version {meta.get('version')!r}; this reader understands versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (upgrade the server or the collector so "
            "they match)"
        )
    for key, types in (_META_TYPES | _OPTIONAL_META_TYPES).items():
        if key not in meta:
            if key in _OPTIONAL_META_TYPES:
                continue
            raise ChunkFormatError(f"chunk meta is missing '{key}'")
        value = meta[key]
        is_bool = isinstance(value, bool)
        if (is_bool and bool not in types) or not isinstance(value, types):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ChunkFormatError(f"chunk meta '{key}' must be {names}, got {value!r}")
    for dev in meta["devices"]:
        if not (isinstance(dev, dict) and {"index", "name", "total_memory_bytes"} <= dev.keys()):
            raise ChunkFormatError(
                "each chunk meta device needs 'index', 'name' and 'total_memory_bytes'"
            )
    # Packed and XPlane windows came with version 3; older chunks name gzipped members only.
    for i, window in enumerate(meta.get("kineto_windows", [])):
        members = [kineto_member_name(i)]
        if meta["version"] >= 3:
            members += [kineto_member_name(i, packed=True), xplane_member_name(i)]
        if not (
            isinstance(window, dict)
            and window.get("member") in members
            and isinstance(window.get("annotations"), list)
            and all(isinstance(name, str) for name in window["annotations"])
        ):
            raise ChunkFormatError(
                f"chunk meta kineto_windows[{i}] must be {{'member': "
                f"'{kineto_member_name(i)}', 'annotations': [names]}}"
            )


def _check_strings(strings: tuple[Any, ...]) -> None:
    if not all(isinstance(s, str) for s in strings):
        raise ChunkFormatError("chunk 'strings' must contain only strings")


def _check_columns(
    what: str, cols: dict[str, np.ndarray], spec: dict[str, tuple[np.dtype[Any], tuple[int, ...]]]
) -> None:
    missing = set(spec) - set(cols)
    if missing:
        raise ChunkFormatError(f"{what} column(s) missing: {', '.join(sorted(missing))}")
    n = None
    for col, (dtype, shape) in spec.items():
        arr = cols[col]
        if not isinstance(arr, np.ndarray) or arr.dtype != dtype:
            got = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
            raise ChunkFormatError(f"{what} column '{col}' must be {dtype}, got {got}")
        if arr.ndim != 1 + len(shape) or tuple(arr.shape[1:]) != shape:
            raise ChunkFormatError(
                f"{what} column '{col}' must have shape (N{''.join(f', {s}' for s in shape)}), "
                f"got {arr.shape}"
            )
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise ChunkFormatError(
                f"{what} columns differ in length: '{col}' has {arr.shape[0]} rows, expected {n}"
            )


def _check_values(
    strings: tuple[str, ...], events: dict[str, np.ndarray], samples: dict[str, np.ndarray]
) -> None:
    n_strings = len(strings)
    for col, arr in (("ev_name", events["ev_name"]), ("s_name", samples["s_name"])):
        if arr.size and int(arr.max()) >= n_strings:
            raise ChunkFormatError(
                f"'{col}' refers to string {int(arr.max())} but the chunk has {n_strings} strings"
            )
    limits = (
        ("ev_kind", events["ev_kind"], CHUNK_MAX_KIND),
        ("ev_memcpy_kind", events["ev_memcpy_kind"], max(MemcpyKind)),
        ("s_kind", samples["s_kind"], max(SampleKind)),
    )
    for col, arr, top in limits:
        if arr.size and int(arr.max()) > top:
            raise ChunkFormatError(
                f"'{col}' has unknown value {int(arr.max())} (maximum {int(top)})"
            )
    if events["ev_dur_ns"].size and int(events["ev_dur_ns"].min()) < 0:
        raise ChunkFormatError("'ev_dur_ns' has a negative duration")
