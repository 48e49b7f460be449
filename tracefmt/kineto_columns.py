"""A Kineto (Chrome-trace JSON) window as compressed columns, and back to the same JSON.

Kineto's JSON repeats every key, name and category on every event, and writes timestamps as
absolute microseconds. Here the events become columns, one per key (``args`` keys one level
down), each stored the way it compresses best:

* a column of integers, or of decimal numbers with a fixed count of decimals (``ts``, ``dur``),
  is stored as zigzag varints of the values, of the differences from the previous value, or of
  the differences from the previous value on the same track (pid, tid) — whichever is smallest;
* every other column (names, categories, nested values such as ``Input Dims``) holds codes into
  one dictionary of JSON texts shared by the whole window;
* which keys an event has, in which order, is one code per event into a list of shapes.

The whole is compressed with ``CODEC`` (lzma; chosen by ``bench/collector_overhead.py``, which
measures every codec of ``CODECS`` on real traces).

Decoding writes JSON whose values equal the original's exactly: numbers are carried as the text
the trace had (``1712195495519689.047`` is not a float64), strings and nesting as JSON values.
The decoder checks every size it is told against the bytes it holds and refuses, with
``PackedTraceError``, any input that would need more than the memory it is allowed.
"""

from __future__ import annotations

import bz2
import contextlib
import json
import lzma
import os
import re
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter, itemgetter, methodcaller
from typing import IO, Any

import numpy as np

from tracefmt import varint

MAGIC = b"KCOL"
# codec byte -> name; the encoder writes CODEC, the decoder reads all of them.
CODECS = {1: "zlib", 2: "lzma", 3: "bz2"}
CODEC = "lzma"
_CODEC_IDS = {name: i for i, name in CODECS.items()}
_HEADER_LEN = struct.Struct("<I")
# A decimal number text this encoding can carry as an integer: sign, digits, 1-9 decimals.
_DECIMAL = re.compile(r"(-?)(\d{1,18})\.(\d{1,9})")
_INT_TEXT_BYTES = 21  # the longest text of an int64 ("-9223372036854775808" and a comma)
_LIMIT = 2**62  # values a column may reach once its differences are summed
_ROWS_PER_WRITE = 20_000


class PackedTraceError(ValueError):
    """The bytes are not a packed Kineto window this reader can decode within its limits."""


class TraceNotPackable(ValueError):
    """The JSON is not a trace this encoding carries (the caller keeps it as JSON instead)."""


@dataclass(frozen=True, slots=True)
class Number:
    """A JSON number that is not an integer, kept as the text the trace wrote."""

    text: str


def parse(text: bytes | str) -> Any:
    """JSON with fractional numbers kept as ``Number`` (exact, whatever their digits)."""
    return json.loads(text, parse_float=Number, parse_constant=Number)


def dump(value: Any) -> str:
    """The JSON text of a value from ``parse``."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Number):
        return value.text
    if isinstance(value, list):
        return "[" + ",".join(map(dump, value)) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{dump(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# ---- encoding -------------------------------------------------------------------------------


def pack_trace(text: bytes, codec: str = CODEC, preset: int = 6) -> bytes:
    """The packed form of one Kineto JSON trace; ``TraceNotPackable`` if it is not one."""
    try:
        trace = parse(text)
    except (ValueError, RecursionError) as exc:
        raise TraceNotPackable(f"not JSON: {exc}") from exc
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise TraceNotPackable("not a Chrome trace (no traceEvents list)")
    events = trace["traceEvents"]
    if not all(isinstance(e, dict) for e in events):
        raise TraceNotPackable("an event is not a JSON object")
    payload = _payload(trace, events)
    return MAGIC + bytes([_CODEC_IDS[codec]]) + _compress(codec, payload, preset)


def _payload(trace: dict[str, Any], events: list[dict[str, Any]]) -> bytes:
    shapes, shape_codes, columns = _columns(events)
    tracks = _track_ids(len(events), columns)
    dictionary: dict[str, int] = {}
    sections = [varint.encode(shape_codes)]
    specs = []
    for path, (rows, values) in columns.items():
        spec, data = _encode_column(values, tracks[rows], dictionary)
        specs.append({"path": list(path), "values": len(values), "bytes": len(data), **spec})
        sections.append(data)
    texts = "\n".join(dictionary).encode()
    sections.append(texts)
    header = {
        "events": len(events),
        "top": [[k, None if k == "traceEvents" else dump(v)] for k, v in trace.items()],
        "shapes": [[list(keys), None if a is None else list(a)] for keys, a in shapes],
        "shape_bytes": len(sections[0]),
        "columns": specs,
        "dictionary": len(dictionary),
        "dictionary_bytes": len(texts),
    }
    head = json.dumps(header, separators=(",", ":")).encode()
    return _HEADER_LEN.pack(len(head)) + head + b"".join(sections)


Columns = dict[tuple[str, ...], tuple[np.ndarray, list[Any]]]


def _columns(events: list[dict[str, Any]]) -> tuple[list[tuple], np.ndarray, Columns]:
    """The events' shapes, each event's shape, and per key the events that have it (in order)
    with their values. Gathered a shape at a time, so the per-event work runs in C."""
    args = [e.get("args") for e in events]
    arg_keys = [tuple(a) if type(a) is dict else None for a in args]
    keyed: dict[tuple, int] = {}
    shape_codes = np.fromiter(
        (keyed.setdefault(s, len(keyed)) for s in zip(map(tuple, events), arg_keys, strict=True)),
        dtype=np.int64,
        count=len(events),
    )
    pieces: dict[tuple[str, ...], list[tuple[np.ndarray, list[Any]]]] = {}
    for code, (keys, shape_args) in enumerate(keyed):
        rows = np.flatnonzero(shape_codes == code)
        members = _pick(events, rows)
        for key in keys:
            values = list(map(itemgetter(key), members))
            if key == "args" and shape_args is not None:
                for arg in shape_args:
                    pieces.setdefault(("args", arg), []).append(
                        (rows, list(map(itemgetter(arg), values)))
                    )
            else:
                pieces.setdefault((key,), []).append((rows, values))
    columns: Columns = {}
    for path, parts in pieces.items():
        rows = np.concatenate([r for r, _ in parts])
        values = [v for _, vs in parts for v in vs]
        order = np.argsort(rows, kind="stable")
        columns[path] = (rows[order], _pick(values, order))
    return list(keyed), shape_codes, columns


def _pick(values: list[Any], positions: np.ndarray) -> list[Any]:
    if len(positions) == 1:
        return [values[int(positions[0])]]
    return list(itemgetter(*positions.tolist())(values)) if len(positions) else []


def _track_ids(n: int, columns: Columns) -> np.ndarray:
    """Per event, a number for its (pid, tid): the track whose times it continues."""
    sides = []
    for key in ("pid", "tid"):
        texts = np.full(n, "", dtype=object)
        if (key,) in columns:
            rows, values = columns[(key,)]
            texts[rows] = _dictionary_texts(values)
        sides.append(texts.tolist())
    return _group_ids(sides[0], sides[1])


def _dictionary_texts(values: list[Any]) -> list[str]:
    """The JSON text of each value, each distinct value written once (``repr`` tells distinct
    values apart: 1, True, "1" and 1.0 all differ)."""
    keys = list(map(repr, values))
    texts = {k: dump(v) for k, v in zip(keys, values, strict=True)}
    return list(map(texts.__getitem__, keys))


def _group_ids(pids: list[str], tids: list[str]) -> np.ndarray:
    seen: dict[tuple[str, str], int] = {}
    return np.fromiter(
        (seen.setdefault(k, len(seen)) for k in zip(pids, tids, strict=True)),
        dtype=np.int64,
        count=len(pids),
    )


def _encode_column(
    values: list[Any], tracks: np.ndarray, dictionary: dict[str, int]
) -> tuple[dict[str, Any], bytes]:
    numbers = _as_integers(values)
    if numbers is not None:
        scaled, decimals = numbers
        best: tuple[int, dict[str, Any], bytes] | None = None
        for transform in ("raw", "delta", "track"):
            base, diffs = _forward(scaled, transform, tracks)
            data = varint.encode(diffs)
            if best is None or len(data) < best[0]:
                spec = {"kind": "number", "decimals": decimals, "transform": transform}
                best = (len(data), {**spec, "base": base}, data)
        assert best is not None
        return best[1], best[2]
    texts = _dictionary_texts(values)
    codes = {t: dictionary.setdefault(t, len(dictionary)) for t in dict.fromkeys(texts)}
    return {"kind": "dictionary"}, varint.encode(
        np.fromiter(map(codes.__getitem__, texts), dtype=np.int64, count=len(texts))
    )


def _as_integers(values: list[Any]) -> tuple[np.ndarray, int] | None:
    """Ints as they are, or decimal texts with one count of decimals as scaled ints."""
    types = set(map(type, values))
    if types == {int}:
        ints = np.asarray(values, dtype=object)
        if values and (max(values) >= _LIMIT or min(values) <= -_LIMIT):
            return None
        return ints.astype(np.int64), 0
    if types != {Number}:
        return None
    texts = list(map(attrgetter("text"), values))
    first = _DECIMAL.fullmatch(texts[0])
    if first is None:
        return None
    decimals = len(first[3])
    joined = "\n".join(texts) + "\n"
    # One count of decimals for the column; "-0.0" would come back as "0.0".
    if not re.fullmatch(rf"(?:-?\d{{1,18}}\.\d{{{decimals}}}\n)*", joined) or re.search(
        r"(?:^|\n)-0+\.0+\n", joined
    ):
        return None
    scaled = np.fromiter(
        map(int, map(methodcaller("replace", ".", ""), texts)), dtype=np.int64, count=len(texts)
    )
    if np.abs(scaled).max() >= _LIMIT:
        return None
    return scaled, decimals


def _track_order(tracks: np.ndarray) -> np.ndarray:
    return np.argsort(tracks, kind="stable")


def _forward(values: np.ndarray, transform: str, tracks: np.ndarray) -> tuple[int, np.ndarray]:
    if not len(values):
        return 0, values
    if transform == "track":
        values = values[_track_order(tracks)]
    if transform == "raw":
        return 0, values
    diffs = np.empty_like(values)
    diffs[0] = 0
    np.subtract(values[1:], values[:-1], out=diffs[1:])
    return int(values[0]), diffs


def _compress(codec: str, payload: bytes, preset: int) -> bytes:
    if codec == "lzma":
        return lzma.compress(payload, preset=preset | lzma.PRESET_EXTREME)
    if codec == "bz2":
        return bz2.compress(payload, 9)
    return zlib.compress(payload, 9)


# ---- decoding -------------------------------------------------------------------------------


def is_packed(data: bytes) -> bool:
    return data[: len(MAGIC)] == MAGIC


def unpack_trace(data: bytes, out: IO[bytes], max_bytes: int) -> int:
    """Write the window's JSON to ``out``; returns its length. Refuses, before it takes the
    memory, anything that would decompress or expand to more than ``max_bytes``."""
    payload = _decompress(data, max_bytes)
    reader = _Reader(payload)
    header = reader.header()
    decoded = _decode_sections(header, reader)
    total = _output_bound(header, decoded)
    if total > max_bytes:
        raise PackedTraceError(
            f"the Kineto window would expand to {total:,} bytes of JSON, over the limit of "
            f"{max_bytes:,}"
        )
    written = 0
    for piece in _json_pieces(header, decoded):
        out.write(piece)
        written += len(piece)
    return written


def _decompress(data: bytes, max_bytes: int) -> bytes:
    if not is_packed(data) or len(data) < len(MAGIC) + 1:
        raise PackedTraceError("not a packed Kineto window")
    codec = CODECS.get(data[len(MAGIC)])
    if codec is None:
        raise PackedTraceError(f"unknown compression {data[len(MAGIC)]} in a packed Kineto window")
    body = data[len(MAGIC) + 1 :]
    decompressor: Any
    if codec == "zlib":
        decompressor = zlib.decompressobj()
    elif codec == "lzma":
        decompressor = lzma.LZMADecompressor()
    else:
        decompressor = bz2.BZ2Decompressor()
    try:
        payload = decompressor.decompress(body, max_bytes + 1)
        done = decompressor.eof if codec != "zlib" else decompressor.eof
    except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
        raise PackedTraceError(f"the packed Kineto window is corrupt: {exc}") from exc
    if len(payload) > max_bytes:
        raise PackedTraceError(
            f"the packed Kineto window decompresses to more than the limit of {max_bytes:,} bytes"
        )
    if not done:
        raise PackedTraceError("the packed Kineto window is truncated")
    return payload


class _Reader:
    """The payload's sections, each checked against the sizes the header declares."""

    def __init__(self, payload: bytes) -> None:
        self.payload = memoryview(payload)
        self.pos = 0

    def take(self, n: Any, what: str) -> memoryview:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise PackedTraceError(f"the packed Kineto window declares a bad size for {what}")
        if self.pos + n > len(self.payload):
            raise PackedTraceError(
                f"the packed Kineto window is truncated: {what} declares {n:,} bytes, "
                f"{len(self.payload) - self.pos:,} are left"
            )
        part = self.payload[self.pos : self.pos + n]
        self.pos += n
        return part

    def header(self) -> dict[str, Any]:
        (length,) = _HEADER_LEN.unpack(bytes(self.take(_HEADER_LEN.size, "the header size")))
        try:
            header = json.loads(bytes(self.take(length, "the header")))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise PackedTraceError(f"the packed Kineto window's header is not JSON: {exc}") from exc
        _check_header(header)
        return dict(header)

    def varints(self, nbytes: Any, count: int, what: str) -> np.ndarray:
        data = self.take(nbytes, what)
        # Every number takes a byte at least: a count beyond the bytes is refused here,
        # before anything of that size is allocated.
        if count > len(data):
            raise PackedTraceError(f"{what} declares {count:,} values in {len(data):,} bytes")
        try:
            return varint.decode(data, count)
        except varint.VarintError as exc:
            raise PackedTraceError(f"{what} is malformed: {exc}") from exc


def _check_header(header: Any) -> None:
    def fail(what: str) -> PackedTraceError:
        return PackedTraceError(f"the packed Kineto window's header has a bad {what}")

    if not isinstance(header, dict):
        raise fail("type")
    for key in ("events", "shape_bytes", "dictionary", "dictionary_bytes"):
        value = header.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail(key)
    top = header.get("top")
    if not (
        isinstance(top, list)
        and all(
            isinstance(t, list)
            and len(t) == 2
            and isinstance(t[0], str)
            and (t[1] is None or isinstance(t[1], str))
            for t in top
        )
        and sum(t[1] is None for t in top) == 1
    ):
        raise fail("top-level object")
    shapes = header.get("shapes")
    if not (
        isinstance(shapes, list)
        and all(
            isinstance(s, list)
            and len(s) == 2
            and _strings(s[0])
            and (s[1] is None or (_strings(s[1]) and "args" in s[0]))
            for s in shapes
        )
    ):
        raise fail("shape list")
    columns = header.get("columns")
    if not isinstance(columns, list):
        raise fail("column list")
    for spec in columns:
        if not (
            isinstance(spec, dict)
            and isinstance(spec.get("path"), list)
            and len(spec["path"]) in (1, 2)
            and _strings(spec["path"])
            and spec.get("kind") in ("number", "dictionary")
            and all(_count(spec.get(k)) for k in ("values", "bytes"))
        ):
            raise fail("column")
        if spec["kind"] == "number" and not (
            spec.get("transform") in ("raw", "delta", "track")
            and _count(spec.get("decimals"))
            and spec["decimals"] <= 9
            and isinstance(spec.get("base"), int)
            and abs(spec["base"]) < _LIMIT
        ):
            raise fail(f"column {spec['path']}")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass
class _Decoded:
    shape_codes: np.ndarray
    columns: dict[tuple[str, ...], tuple[np.ndarray, dict[str, Any], Any]]
    dictionary: list[str]


def _decode_sections(header: dict[str, Any], reader: _Reader) -> _Decoded:
    n = header["events"]
    shape_codes = reader.varints(header["shape_bytes"], n, "the event shapes")
    n_shapes = len(header["shapes"])
    if n and (int(shape_codes.min()) < 0 or int(shape_codes.max()) >= n_shapes):
        raise PackedTraceError("an event refers to a shape the packed Kineto window lacks")
    raw: list[tuple[dict[str, Any], np.ndarray]] = []
    for spec in header["columns"]:
        what = f"column {'.'.join(spec['path'])}"
        raw.append((spec, reader.varints(spec["bytes"], spec["values"], what)))
    texts = bytes(reader.take(header["dictionary_bytes"], "the dictionary"))
    if reader.pos != len(reader.payload):
        raise PackedTraceError("the packed Kineto window has bytes after its last section")
    try:
        dictionary = texts.decode().split("\n") if header["dictionary"] else []
    except UnicodeDecodeError as exc:
        raise PackedTraceError(
            f"the packed Kineto window's dictionary is not UTF-8: {exc}"
        ) from exc
    if len(dictionary) != header["dictionary"]:
        raise PackedTraceError(
            f"the dictionary declares {header['dictionary']:,} texts and holds {len(dictionary):,}"
        )
    rows = _column_rows(header, shape_codes)
    columns: dict[tuple[str, ...], tuple[np.ndarray, dict[str, Any], Any]] = {}
    for spec, values in raw:
        path = tuple(spec["path"])
        where = rows.get(path)
        if where is None or path in columns:
            raise PackedTraceError(f"column {'.'.join(path)} belongs to no shape or is repeated")
        if len(where) != len(values):
            raise PackedTraceError(
                f"column {'.'.join(path)} holds {len(values):,} values for {len(where):,} events"
            )
        if (
            spec["kind"] == "dictionary"
            and len(values)
            and (int(values.min()) < 0 or int(values.max()) >= len(dictionary))
        ):
            raise PackedTraceError(f"column {'.'.join(path)} refers past the dictionary")
        columns[path] = (where, spec, values)
    missing = set(rows) - set(columns)
    if missing:
        raise PackedTraceError(f"the packed Kineto window lacks column(s) {sorted(missing)}")
    return _Decoded(shape_codes, columns, dictionary)


def _column_rows(header: dict[str, Any], shape_codes: np.ndarray) -> dict[tuple, np.ndarray]:
    """Per column path, the events that have it, in order."""
    members: dict[tuple[str, ...], list[int]] = {}
    for code, (keys, arg_keys) in enumerate(header["shapes"]):
        if len(set(keys)) != len(keys) or (
            arg_keys is not None and len(set(arg_keys)) != len(arg_keys)
        ):
            raise PackedTraceError("a shape of the packed Kineto window repeats a key")
        for key in keys:
            if key == "args" and arg_keys is not None:
                for arg in arg_keys:
                    members.setdefault(("args", arg), []).append(code)
            else:
                members.setdefault((key,), []).append(code)
    return {path: np.flatnonzero(np.isin(shape_codes, codes)) for path, codes in members.items()}


def _output_bound(header: dict[str, Any], decoded: _Decoded) -> int:
    """An upper bound of the JSON's length, from sizes alone (nothing is expanded yet)."""
    text_lengths = np.fromiter(map(len, decoded.dictionary), np.int64, len(decoded.dictionary))
    total = sum(len(k) + len(v or "") + 8 for k, v in header["top"])
    per_shape = np.array(
        [
            2
            + sum(len(json.dumps(k)) + 2 for k in keys)
            + (sum(len(json.dumps(a)) + 2 for a in arg_keys) + 2 if arg_keys is not None else 0)
            for keys, arg_keys in header["shapes"]
        ]
        or [0],
        dtype=np.int64,
    )
    total += int(per_shape[decoded.shape_codes].sum())
    for _, spec, values in decoded.columns.values():
        if spec["kind"] == "dictionary":
            total += int(text_lengths[values].sum()) if len(values) else 0
        else:
            total += (_INT_TEXT_BYTES + 2) * len(values)
    return total


def _json_pieces(header: dict[str, Any], decoded: _Decoded) -> Iterator[bytes]:
    texts = _column_texts(decoded, header["events"])
    lines = np.empty(header["events"], dtype=object)
    for shape, (keys, arg_keys) in enumerate(header["shapes"]):
        rows = np.flatnonzero(decoded.shape_codes == shape)
        if not len(rows):
            continue
        template = _template(keys, arg_keys)
        values = []
        for path in _shape_paths(keys, arg_keys):
            where, column = texts[path]
            values.append(column[np.searchsorted(where, rows)].tolist())
        if values:
            lines[rows] = [template % t for t in zip(*values, strict=True)]
        else:  # events with no keys at all
            lines[rows] = template
    del texts
    top = [f"{json.dumps(k)}:{v}" for k, v in header["top"]]
    at = next(i for i, (_, v) in enumerate(header["top"]) if v is None)
    yield ("{" + ",".join([*top[:at], '"traceEvents":['])).encode()
    for first in range(0, len(lines), _ROWS_PER_WRITE):
        batch = ",\n".join(lines[first : first + _ROWS_PER_WRITE])
        yield (("," if first else "") + batch).encode()
    yield ("]" + "".join("," + p for p in top[at + 1 :]) + "}").encode()


def _column_texts(
    decoded: _Decoded, n: int
) -> dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]:
    """Per column, the events that have it and the JSON text of each one's value."""
    out: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {}
    tracks: np.ndarray | None = None
    dictionary = np.asarray(decoded.dictionary, dtype=object)
    # pid and tid first: the track of an event is told by their texts.
    for path in sorted(decoded.columns, key=lambda p: p not in (("pid",), ("tid",))):
        where, spec, values = decoded.columns[path]
        if spec["kind"] == "dictionary":
            column = dictionary[values] if len(values) else np.empty(0, dtype=object)
        else:
            if spec["transform"] == "track" and tracks is None:
                tracks = _decoded_tracks(out, n)
            numbers = _inverse(values, spec, None if tracks is None else tracks[where])
            column = np.asarray(_number_texts(numbers, spec["decimals"]), dtype=object)
        out[path] = (where, column)
    return out


def _decoded_tracks(
    out: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]], n: int
) -> np.ndarray:
    sides = []
    for key in ("pid", "tid"):
        texts = np.full(n, "", dtype=object)
        if (key,) in out:
            where, column = out[(key,)]
            texts[where] = column
        sides.append(texts.tolist())
    return _group_ids(sides[0], sides[1])


def _inverse(diffs: np.ndarray, spec: dict[str, Any], tracks: np.ndarray | None) -> np.ndarray:
    if spec["transform"] == "raw" or not len(diffs):
        values = diffs
    else:
        # Summed in floats first: differences that would leave the 64-bit range are refused.
        approx = np.cumsum(diffs.astype(np.float64)) + spec["base"]
        if np.abs(approx).max() >= _LIMIT:
            raise PackedTraceError(
                f"column {_name(spec)} has differences that leave the 64-bit range"
            )
        values = np.cumsum(diffs) + spec["base"]
        if spec["transform"] == "track":
            assert tracks is not None
            restored = np.empty_like(values)
            restored[_track_order(tracks)] = values
            values = restored
    if len(values) and np.abs(values.astype(np.float64)).max() >= _LIMIT:
        raise PackedTraceError(f"column {_name(spec)} has values out of range")
    return values


def _name(spec: dict[str, Any]) -> str:
    return ".".join(spec["path"])


def _number_texts(values: np.ndarray, decimals: int) -> list[str]:
    if not decimals:
        return list(map(str, values.tolist()))
    scale = 10**decimals
    whole, frac = np.divmod(np.abs(values), scale)
    signs = np.where(values < 0, "-", "")
    return [
        f"{s}{w}.{f:0{decimals}d}"
        for s, w, f in zip(signs.tolist(), whole.tolist(), frac.tolist(), strict=True)
    ]


def _template(keys: list[str], arg_keys: list[str] | None) -> str:
    def key(k: str) -> str:
        return json.dumps(k).replace("%", "%%")

    parts = []
    for k in keys:
        if k == "args" and arg_keys is not None:
            inner = ",".join(f"{key(a)}:%s" for a in arg_keys)
            parts.append(f"{key(k)}:{{{inner}}}")
        else:
            parts.append(f"{key(k)}:%s")
    return "{" + ",".join(parts) + "}"


def _shape_paths(keys: list[str], arg_keys: list[str] | None) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for k in keys:
        if k == "args" and arg_keys is not None:
            paths.extend(("args", a) for a in arg_keys)
        else:
            paths.append((k,))
    return paths


def main(argv: list[str]) -> int:
    """``python -m tracefmt.kineto_columns [--nice N] IN.json OUT``: pack a trace file. The
    collector runs this in a process of its own, so the training process never parses JSON."""
    if argv[:1] == ["--nice"]:
        with contextlib.suppress(OSError, AttributeError):
            os.nice(int(argv[1]))
        argv = argv[2:]
    source, target = argv
    with open(source, "rb") as fh:
        text = fh.read()
    try:
        packed = pack_trace(text)
    except TraceNotPackable as exc:
        print(f"not packed: {exc}", file=sys.stderr)
        return 3
    with open(target, "wb") as fh:
        fh.write(packed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
