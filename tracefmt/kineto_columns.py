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
``tracefmt.kineto_unpack`` decodes it, checking every size it is told against the bytes it
holds.
"""

from __future__ import annotations

import bz2
import json
import lzma
import re
import struct
import sys
import time
import zlib
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
HEADER_LEN = struct.Struct("<I")
# A decimal number text this encoding can carry as an integer: sign, digits, 1-9 decimals.
_DECIMAL = re.compile(r"(-?)(\d{1,18})\.(\d{1,9})")
LIMIT = 2**62  # values a column may reach once its differences are summed


class PackedTraceError(ValueError):
    """The bytes are not a packed Kineto window ``tracefmt.kineto_unpack`` can decode within
    its limits."""


class TraceNotPackable(ValueError):
    """The JSON is not a trace this encoding carries (the caller keeps it as JSON instead)."""


@dataclass(frozen=True, slots=True)
class Number:
    """A JSON number that is not an integer, kept as the text the trace wrote."""

    text: str


def is_packed(data: bytes) -> bool:
    return data[: len(MAGIC)] == MAGIC


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
    return HEADER_LEN.pack(len(head)) + head + b"".join(sections)


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
    return group_ids(sides[0], sides[1])


def _dictionary_texts(values: list[Any]) -> list[str]:
    """The JSON text of each value, each distinct value written once (``repr`` tells distinct
    values apart: 1, True, "1" and 1.0 all differ)."""
    keys = list(map(repr, values))
    texts = {k: dump(v) for k, v in zip(keys, values, strict=True)}
    return list(map(texts.__getitem__, keys))


def group_ids(pids: list[str], tids: list[str]) -> np.ndarray:
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
        if values and (max(values) >= LIMIT or min(values) <= -LIMIT):
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
    if np.abs(scaled).max() >= LIMIT:
        return None
    return scaled, decimals


def track_order(tracks: np.ndarray) -> np.ndarray:
    return np.argsort(tracks, kind="stable")


def _forward(values: np.ndarray, transform: str, tracks: np.ndarray) -> tuple[int, np.ndarray]:
    if not len(values):
        return 0, values
    if transform == "track":
        values = values[track_order(tracks)]
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


def serve(requests: IO[str], replies: IO[str]) -> None:
    """Pack trace files as asked: one request a line, ``["IN.json", "OUT"]``, one reply a line,
    ``{"ok": bool, "cpu_ns": int, "reason": str}``, where ``cpu_ns`` is this process's CPU time
    since its previous reply (its start-up included in the first). The collector keeps one such
    process for its windows, so the training process never parses JSON and the start-up (about
    0.1 s of CPU for Python and numpy) is paid once, not per window."""
    reported = 0
    for line in requests:
        reason = ""
        try:
            source, target = json.loads(line)
            with open(source, "rb") as fh:
                text = fh.read()
            packed = pack_trace(text)
            with open(target, "wb") as fh:
                fh.write(packed)
        except Exception as exc:  # noqa: BLE001 - a window it cannot pack is sent gzipped
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        now = time.process_time_ns()
        reply = {"ok": not reason, "cpu_ns": now - reported, "reason": reason}
        reported = now
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)
