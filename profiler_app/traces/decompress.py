"""Read a plain or gzip-compressed file as a stream of bounded blocks of bytes.

The decompressed size is capped (a gzip bomb stops at the cap, not at the end of memory), every
block is at most ``block_bytes`` long, and decompression runs in a background thread: zlib
releases the GIL, so it overlaps with the JSON decoding on another core.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from profiler_app.traces.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
READ_BYTES = 1 << 20


def _gzip_blocks(raw, block_bytes: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    member_open = False
    pending = b""
    while True:
        if not pending:
            pending = raw.read(READ_BYTES)
            if not pending:
                break
        member_open = True
        try:
            out = inflater.decompress(pending, block_bytes)
        except zlib.error as exc:
            raise TraceFormatError(f"the gzip data is corrupt ({exc})") from exc
        pending = inflater.unconsumed_tail
        if inflater.eof:
            # Concatenated gzip members are one stream (what `cat a.gz b.gz` produces).
            member_open = False
            rest = inflater.unused_data + pending
            inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
            pending = rest if rest.strip(b"\0") else b""
        if out:
            yield out
    if member_open:
        raise TraceFormatError(
            "the gzip file is truncated: it ends in the middle of the compressed data "
            "(was the upload interrupted?)"
        )


def _plain_blocks(raw, first: bytes, block_bytes: int) -> Iterator[bytes]:
    block = first + raw.read(block_bytes - len(first))
    while block:
        yield block
        block = raw.read(block_bytes)


def _capped(blocks: Iterator[bytes], max_bytes: int) -> Iterator[bytes]:
    total = 0
    for block in blocks:
        total += len(block)
        if total > max_bytes:
            raise TraceFormatError(
                f"the trace is larger than {max_bytes / 1e9:.3g} GB once decompressed, the "
                "configured limit (TRACE_MAX_DECOMPRESSED_BYTES); a compressed file that expands "
                "this much is refused"
            )
        yield block


@dataclass
class ReadProgress:
    """How far through the (compressed) file reading has got; updated from the reader thread."""

    total_bytes: int = 0
    read_bytes: int = 0

    @property
    def fraction(self) -> float:
        return min(self.read_bytes / self.total_bytes, 1.0) if self.total_bytes else 0.0


class _CountingFile:
    def __init__(self, raw, progress: ReadProgress) -> None:
        self.raw, self.progress = raw, progress

    def read(self, n: int) -> bytes:
        data = self.raw.read(n)
        self.progress.read_bytes += len(data)
        return data


def iter_blocks(
    path: str | Path,
    max_bytes: int,
    block_bytes: int = 8 << 20,
    progress: ReadProgress | None = None,
) -> Iterator[bytes]:
    """Decompressed blocks of ``path`` (gzip detected by its magic number), in order."""
    progress = progress or ReadProgress()
    with open(path, "rb") as file:
        progress.total_bytes = Path(path).stat().st_size
        raw = _CountingFile(file, progress)
        first = file.read(2)
        progress.read_bytes = len(first)
        if first == GZIP_MAGIC:
            file.seek(0)
            progress.read_bytes = 0
            yield from _capped(_gzip_blocks(raw, block_bytes), max_bytes)
        else:
            yield from _capped(_plain_blocks(raw, first, block_bytes), max_bytes)


_DONE = object()


def prefetch(blocks: Iterator[bytes], depth: int = 2) -> Iterator[bytes]:
    """Runs ``blocks`` in a background thread, at most ``depth`` blocks ahead (bounded memory)."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for block in blocks:
                while not stop.is_set():
                    try:
                        slots.put(block, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slots.put(_DONE)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            slots.put(exc)

    worker = threading.Thread(target=produce, name="trace-decompress", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while worker.is_alive():
            try:
                slots.get_nowait()
            except queue.Empty:
                worker.join(0.05)
