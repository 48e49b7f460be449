"""Stream a Kineto (PyTorch profiler) Chrome-trace JSON file into decoded event chunks.

The file is never held whole: decompressed blocks accumulate until about ``chunk_bytes`` of the
``traceEvents`` array is buffered, the buffer is cut after the last complete event, and that
slice is decoded by msgspec into typed structs and then into columns (``kineto_chunk``).

Finding a cut: the text between two top-level events is ``}`` ``,`` ``{`` ``"`` with only
whitespace between. Inside a JSON string a quote is always escaped, so that pattern can only
appear in a string right before its closing quote; when a cut lands there (or inside a nested
array of objects) the slice fails to decode and is merged with the next one. A slice that
decodes as a JSON array on its own always ended between two top-level events, so a successful
decode proves the cut was right.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from profiler_app.traces.decompress import ReadProgress, iter_blocks, prefetch
from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.kineto_chunk import ChunkFailure, DecodedChunk, decode_chunk
from profiler_app.traces.kineto_schema import HEADER_DECODER, RAW_LIST_DECODER, Header

_EVENT_GAP = re.compile(rb"\s*,\s*\{\s*\"")
_BYTE_POS = re.compile(r"\(byte (\d+)\)")
_EVENT_NO = re.compile(r"event #(\d+)")
HEADER_MAX_BYTES = 64 << 20
# 2100-01-01 in unix nanoseconds: times stay far from the int64 limit (year 2262).
MAX_BASE_TIME_NS = 4_102_444_800 * 10**9
# A slice that fails to decode is merged with the next one at most this many times before the
# failure is reported as invalid JSON.
MAX_MERGES = 4


@dataclass
class KinetoFile:
    """What the top-level object says besides ``traceEvents``; filled in while streaming."""

    header: Header = field(default_factory=Header)
    trailer: Header = field(default_factory=Header)
    n_events: int = 0
    decompressed_bytes: int = 0

    @property
    def base_time_ns(self) -> int:
        base = self.header.baseTimeNanoseconds or self.trailer.baseTimeNanoseconds or 0
        if not 0 <= base <= MAX_BASE_TIME_NS:
            raise TraceFormatError(
                f"its baseTimeNanoseconds ({base}) is not a time this trace can have been "
                "recorded at (nanoseconds since 1970, before the year 2100)"
            )
        return base

    def get(self, key: str):
        return getattr(self.header, key) or getattr(self.trailer, key)


class _Blocks:
    """Decompressed bytes on demand, with a count of how many have been consumed."""

    def __init__(self, path: Path, max_bytes: int, progress: ReadProgress | None) -> None:
        self._it = prefetch(iter_blocks(path, max_bytes, progress=progress))
        self.total = 0

    def next(self) -> bytes | None:
        block = next(self._it, None)
        if block is not None:
            self.total += len(block)
        return block

    def close(self) -> None:
        close = getattr(self._it, "close", None)
        if close is not None:
            close()


_SPECIAL = re.compile(rb'["{}\[\]]')
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_SPACE = re.compile(rb"[ \t\r\n]*")
_EVENTS_KEY_TEXT = b'"traceEvents"'


class _HeaderScan:
    """Finds ``"traceEvents": [`` as a key of the top-level object, however the text arrives.

    One pass: each byte is looked at once, whatever the blocks (a crafted header that repeats
    the key inside strings or nested values would otherwise be re-read for each repetition).
    Strings are skipped whole, brackets counted, and only a key at depth 1 counts.
    """

    def __init__(self) -> None:
        self.pos = 0
        self.depth = 0
        self.string_start = -1  # inside a string that began here
        self.key_start = -1  # just after the key "traceEvents" that began here
        self.seen_colon = False

    def feed(self, buf: bytearray) -> tuple[Header, int] | None:
        """(header, offset just past the array's ``[``), or None until more text arrives."""
        while True:
            if self.string_start >= 0:
                end = _STRING_BODY.match(buf, self.pos).end()  # type: ignore[union-attr]
                self.pos = end
                if end >= len(buf) or buf[end] != ord('"'):
                    return None  # the string (or an escape in it) goes on in the next block
                start, self.string_start, self.pos = self.string_start, -1, end + 1
                if self.depth == 1 and buf[start : end + 1] == _EVENTS_KEY_TEXT:
                    self.key_start = start
            elif self.key_start >= 0:
                self.pos = _SPACE.match(buf, self.pos).end()  # type: ignore[union-attr]
                if self.pos >= len(buf):
                    return None
                char = buf[self.pos]
                if not self.seen_colon and char == ord(":"):
                    self.seen_colon, self.pos = True, self.pos + 1
                elif self.seen_colon and char == ord("["):
                    return _header(buf, self.key_start), self.pos + 1
                else:  # a value, or a key with another value: not the events
                    self.key_start, self.seen_colon = -1, False
            else:
                found = _SPECIAL.search(buf, self.pos)
                if found is None:
                    self.pos = len(buf)
                    return None
                char, self.pos = buf[found.start()], found.end()
                if char == ord('"'):
                    self.string_start = found.start()
                elif char in b"{[":
                    self.depth += 1
                else:
                    self.depth -= 1


def _header(buf: bytearray, key_start: int) -> Header:
    """The top-level fields before the ``traceEvents`` key at ``key_start``."""
    before = bytes(buf[:key_start]).strip()
    if before == b"{":
        return Header()
    if not before.endswith(b","):
        raise TraceFormatError(
            "the trace is not valid JSON: its top-level object is malformed before 'traceEvents'"
        )
    try:
        return HEADER_DECODER.decode(before[:-1] + b"}")
    except msgspec.ValidationError as exc:
        raise TraceFormatError(f"the trace's top-level fields are malformed: {exc}") from exc
    except (msgspec.DecodeError, RecursionError) as exc:
        raise TraceFormatError(
            f"the trace is not valid JSON: its top-level fields before 'traceEvents' are "
            f"malformed ({exc})"
        ) from exc


_CONTENT = re.compile(rb"[^ \t\r\n]")


def _first_char(buf: bytearray) -> int:
    """The first character that is not whitespace; -1: none yet."""
    found = _CONTENT.search(buf)
    return buf[found.start()] if found else -1


def _read_header(blocks: _Blocks) -> tuple[Header, bytearray, bool]:
    """Returns the header, the buffered text after the array's ``[``, and whether the file is a
    bare JSON array of events (Chrome's "JSON Array Format") rather than an object."""
    buf = bytearray()
    scan = _HeaderScan()
    while True:
        block = blocks.next()
        if block is not None:
            buf += block
            if buf.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
                del buf[:3]
        first = _first_char(buf)
        if first == ord("["):
            start = buf.index(b"[") + 1
            return Header(), buf[start:], True
        if first not in (-1, ord("{")):
            shown = bytes(buf[:16])
            raise TraceFormatError(
                f"this is not a JSON trace: it starts with {shown!r} instead of '{{' "
                "(is it the right file?)"
            )
        found = scan.feed(buf) if first == ord("{") else None
        if found is not None:
            header, end = found
            return header, buf[end:], False
        if block is None or len(buf) > HEADER_MAX_BYTES:
            break
    if first == -1:
        raise TraceFormatError("the file is empty (or holds only whitespace)")
    if block is None:
        try:
            msgspec.json.decode(bytes(buf))
        except (msgspec.DecodeError, RecursionError) as exc:
            raise TraceFormatError(f"the file is not valid JSON ({exc})") from exc
        raise TraceFormatError(
            "this JSON file is not a PyTorch profiler trace: it has no 'traceEvents' array"
        )
    raise TraceFormatError(
        f"no 'traceEvents' array in the first {HEADER_MAX_BYTES >> 20} MB: this is not a "
        "PyTorch profiler trace"
    )


def _cut(buf: bytearray, limit: int, floor: int) -> tuple[int, int] | None:
    """(end of the last complete event, start of the next) with floor < end <= limit."""
    end = limit
    while True:
        pos = buf.rfind(b"}", floor, end)
        if pos < 0:
            return None
        gap = _EVENT_GAP.match(buf, pos + 1)
        if gap is not None:
            return pos + 1, buf.index(b"{", gap.start())
        end = pos


class _Decoder:
    """Decodes slices in order, in this process or in an executor's worker processes."""

    def __init__(self, executor: Executor | None, in_flight: int) -> None:
        self.executor = executor
        # At least one slice is held back so a failed one can be merged with its successor.
        self.in_flight = max(2, in_flight)
        self.queue: list[tuple[bytearray, int, Future | None]] = []

    def submit(self, text: bytearray, offset: int) -> None:
        future = self.executor.submit(decode_chunk, text, 0) if self.executor else None
        self.queue.append((text, offset, future))

    def full(self) -> bool:
        return len(self.queue) >= self.in_flight

    def pop(self, first_event: int) -> tuple[bytearray, int, DecodedChunk | ChunkFailure]:
        text, offset, future = self.queue.pop(0)
        try:
            result = future.result() if future is not None else decode_chunk(text, 0)
        except TraceFormatError as exc:
            raise TraceFormatError(_renumber(str(exc), first_event)) from exc
        return text, offset, result


def _renumber(message: str, first_event: int) -> str:
    """Slices number their events from 0; messages should count from the start of the file."""
    return _EVENT_NO.sub(lambda m: f"event #{first_event + int(m.group(1))}", message)


def _failure_message(failure: ChunkFailure, offset: int, first_event: int) -> str:
    # Byte positions count from the "[" prepended to the slice.
    text = _BYTE_POS.sub(lambda m: f"(byte {offset + int(m.group(1)) - 1})", failure.message)
    return _renumber(text, first_event)


def iter_chunks(
    path: str | Path,
    info: KinetoFile,
    max_bytes: int,
    chunk_bytes: int = 16 << 20,
    executor: Executor | None = None,
    in_flight: int = 1,
    progress: ReadProgress | None = None,
) -> Iterator[DecodedChunk]:
    """Decoded chunks of ``path`` in file order; fills ``info`` as the header and trailer pass."""
    blocks = _Blocks(Path(path), max_bytes, progress)
    try:
        header, buf, bare_array = _read_header(blocks)
        info.header = header
        decoder = _Decoder(executor, in_flight)
        yield from _stream_events(blocks, buf, bare_array, info, chunk_bytes, decoder)
        info.decompressed_bytes = blocks.total
    finally:
        blocks.close()


def _stream_events(
    blocks: _Blocks,
    buf: bytearray,
    bare_array: bool,
    info: KinetoFile,
    chunk_bytes: int,
    decoder: _Decoder,
) -> Iterator[DecodedChunk]:
    offset = blocks.total - len(buf)  # absolute offset of buf[0] in the decompressed file
    read_bytes = chunk_bytes
    eof = False
    while not eof:
        while len(buf) < read_bytes:
            block = blocks.next()
            if block is None:
                eof = True
                break
            buf += block
        if eof:
            break
        cut = _cut(buf, len(buf), 0)
        if cut is None:
            if len(buf) >= MAX_MERGES * chunk_bytes:
                raise TraceFormatError(
                    f"no complete trace event found in {len(buf) >> 20} MB starting at byte "
                    f"{offset}: the traceEvents array is malformed"
                )
            read_bytes += chunk_bytes  # one huge event: read more before cutting
            continue
        read_bytes = chunk_bytes
        end, nxt = cut
        decoder.submit(_array_text(buf, end), offset)
        del buf[:nxt]
        offset += nxt
        while decoder.full():
            yield from _drain_one(decoder, info)
    end = _find_array_end(buf, bare_array, info)
    if buf[:end].strip():
        decoder.submit(_array_text(buf, end), offset)
    while decoder.queue:
        yield from _drain_one(decoder, info)
    if info.n_events == 0:
        raise TraceFormatError("the trace contains no events (its traceEvents array is empty)")


def _array_text(buf: bytearray, end: int) -> bytearray:
    """``[`` + buf[:end] + ``]`` with a single copy."""
    text = bytearray(b"[")
    with memoryview(buf) as view:
        text += view[:end]
    text += b"]"
    return text


def _drain_one(decoder: _Decoder, info: KinetoFile) -> Iterator[DecodedChunk]:
    text, offset, result = decoder.pop(info.n_events)
    merges = 0
    while isinstance(result, ChunkFailure):
        # A wrong cut or bad JSON: retry with the next slice appended (removing that cut).
        if merges >= MAX_MERGES or not decoder.queue:
            where = "" if decoder.queue else " or truncated"
            raise TraceFormatError(
                f"the trace is not valid JSON{where}: "
                + _failure_message(result, offset, info.n_events)
            )
        next_text, _, _ = decoder.queue.pop(0)
        text = text[:-1] + b"," + next_text[1:]
        try:
            result = decode_chunk(text, 0)
        except TraceFormatError as exc:
            raise TraceFormatError(_renumber(str(exc), info.n_events)) from exc
        merges += 1
    info.n_events += result.n_events
    yield result


_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")


def _find_array_end(buf: bytearray, bare_array: bool, info: KinetoFile) -> int:
    """Position of the ``]`` closing traceEvents in the final buffer; parses what follows.

    The parser itself finds the bracket: decoding the rest as an array stops exactly there and
    reports the trailing text (``, "traceName": …}``), which is then read as the trailer.
    """
    text = b"[" + bytes(buf)
    try:
        RAW_LIST_DECODER.decode(text)
    except msgspec.DecodeError as exc:
        found = _TRAILING.search(str(exc))
        if found is None:
            raise TraceFormatError(
                "the trace is not valid JSON or is truncated near its end: "
                + _BYTE_POS.sub(lambda m: f"(byte {int(m.group(1))})", str(exc))
            ) from exc
        # msgspec points just past the first trailing character; "[" was prepended.
        end = buf.rfind(b"]", 0, int(found.group(1)) - 1)
        if bare_array:
            raise TraceFormatError("unexpected text after the trace's event array") from exc
        _read_trailer(bytes(buf[end + 1 :]).strip(), info)
        return end
    except RecursionError as exc:
        raise TraceFormatError(
            "a value is nested too deeply (more than a thousand levels)"
        ) from exc
    if bare_array:
        return buf.rfind(b"]")
    raise TraceFormatError(
        "the trace ends unexpectedly: the top-level object is never closed (the file looks "
        "truncated)"
    )


def _read_trailer(rest: bytes, info: KinetoFile) -> None:
    if not (rest.startswith((b",", b"}")) and rest.endswith(b"}")):
        raise TraceFormatError("the trace's top-level object is malformed after traceEvents")
    trailer = b"{}" if rest == b"}" else b"{" + rest[1:]
    try:
        info.trailer = HEADER_DECODER.decode(trailer)
    except msgspec.ValidationError as exc:
        raise TraceFormatError(f"the trace's top-level fields are malformed: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise TraceFormatError(
            "the trace is not valid JSON after its traceEvents array (truncated?)"
        ) from exc
