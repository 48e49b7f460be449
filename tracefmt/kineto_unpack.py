"""Unpacking a packed Kineto window (``tracefmt.kineto_columns``) back into its JSON.

Every size, count and code the packed bytes declare is checked against the bytes that hold them
before anything of that size is allocated, and the JSON's length is bounded from those sizes
before it is written: a hostile window is refused with ``PackedTraceError`` in bounded memory.
"""

from __future__ import annotations

import bz2
import json
import lzma
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from tracefmt import varint
from tracefmt.kineto_columns import (
    CODECS,
    HEADER_LEN,
    LIMIT,
    MAGIC,
    PackedTraceError,
    group_ids,
    is_packed,
    track_order,
)

_INT_TEXT_BYTES = 21  # the longest text of an int64 ("-9223372036854775808" and a comma)
_ROWS_PER_WRITE = 20_000
# The decompressed payload may take this share of the JSON's limit: real windows' JSON is 10 to
# 20 times their payload, and the decoded columns take up to 8 times it.
PAYLOAD_SHARE = 10


def unpack_trace(data: bytes, out: IO[bytes], max_bytes: int) -> int:
    """Write the window's JSON to ``out``; returns its length. Refuses, before it takes the
    memory, anything that would expand to more than ``max_bytes`` of JSON, or decompress to
    more than a ``PAYLOAD_SHARE`` of it (decoded, each byte may become an 8-byte number)."""
    payload = _decompress(data, max_bytes // PAYLOAD_SHARE)
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
        done = decompressor.eof
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
        (length,) = HEADER_LEN.unpack(bytes(self.take(HEADER_LEN.size, "the header size")))
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
            and abs(spec["base"]) < LIMIT
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
    """The JSON a batch of events at a time (only the columns' texts are held whole)."""
    texts = _column_texts(decoded, header["events"])
    shapes = [(_template(k, a), _shape_paths(k, a)) for k, a in header["shapes"]]
    top = [f"{json.dumps(k)}:{v}" for k, v in header["top"]]
    at = next(i for i, (_, v) in enumerate(header["top"]) if v is None)
    yield ("{" + ",".join([*top[:at], '"traceEvents":['])).encode()
    codes = decoded.shape_codes
    for first in range(0, len(codes), _ROWS_PER_WRITE):
        batch = codes[first : first + _ROWS_PER_WRITE]
        lines = np.empty(len(batch), dtype=object)
        for shape in np.unique(batch).tolist():
            local = np.flatnonzero(batch == shape)
            template, paths = shapes[shape]
            values = []
            for path in paths:
                where, column = texts[path]
                values.append(column[np.searchsorted(where, local + first)].tolist())
            if values:
                lines[local] = [template % t for t in zip(*values, strict=True)]
            else:  # events with no keys at all
                lines[local] = template
        yield (("," if first else "") + ",\n".join(lines)).encode()
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
    return group_ids(sides[0], sides[1])


def _inverse(diffs: np.ndarray, spec: dict[str, Any], tracks: np.ndarray | None) -> np.ndarray:
    if spec["transform"] == "raw" or not len(diffs):
        values = diffs
    else:
        # Summed in floats first: differences that would leave the 64-bit range are refused.
        approx = np.cumsum(diffs.astype(np.float64)) + spec["base"]
        if np.abs(approx).max() >= LIMIT:
            raise PackedTraceError(
                f"column {_name(spec)} has differences that leave the 64-bit range"
            )
        values = np.cumsum(diffs) + spec["base"]
        if spec["transform"] == "track":
            assert tracks is not None
            restored = np.empty_like(values)
            restored[track_order(tracks)] = values
            values = restored
    if len(values) and np.abs(values.astype(np.float64)).max() >= LIMIT:
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
