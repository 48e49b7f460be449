"""Signed 64-bit integers as zigzag LEB128 varints, vectorised with numpy.

Small values (the deltas of timestamps, ids that count up) take one byte, rare large ones up to
ten, so one outlier does not widen a whole column as a fixed-width dtype would.
"""

from __future__ import annotations

import numpy as np

MAX_BYTES = 10  # 64 bits in 7-bit groups


class VarintError(ValueError):
    """The bytes are not a sequence of well-formed varints."""


def zigzag(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def unzigzag(values: np.ndarray) -> np.ndarray:
    u = values.astype(np.uint64, copy=False)
    return ((u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))).view(np.int64)


def encoded_lengths(values: np.ndarray) -> np.ndarray:
    """Bytes each value takes (1 to 10)."""
    u = zigzag(values)
    lengths = np.ones(len(u), dtype=np.int64)
    for k in range(1, MAX_BYTES):
        lengths += u >= np.uint64(1 << (7 * k))
    return lengths


def encode(values: np.ndarray) -> bytes:
    u = zigzag(values)
    lengths = encoded_lengths(values)
    starts = np.zeros(len(u), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    out = np.zeros(int(lengths.sum()), dtype=np.uint8)
    for k in range(MAX_BYTES):
        rows = np.flatnonzero(lengths > k)
        if not len(rows):
            break
        group = (u[rows] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = (lengths[rows] > k + 1).astype(np.uint64) << np.uint64(7)
        out[starts[rows] + k] = (group | more).astype(np.uint8)
    return out.tobytes()


def decode(data: bytes | memoryview, count: int) -> np.ndarray:
    """Exactly ``count`` varints filling ``data``; raises ``VarintError`` otherwise. Decoded a
    block at a time: beside the result, the memory taken does not grow with ``count``."""
    raw = np.frombuffer(data, dtype=np.uint8)
    found = int(np.count_nonzero(raw < 0x80))
    if found != count or (count and raw[-1] >= 0x80):
        raise VarintError(f"expected {count} numbers in {len(raw)} bytes, found {found}")
    out = np.empty(count, dtype=np.int64)
    done, start = 0, 0
    for block in range(0, len(raw), _BLOCK_BYTES):
        ends = np.flatnonzero(raw[block : block + _BLOCK_BYTES] < 0x80) + block
        if not len(ends):
            continue
        starts = np.empty_like(ends)
        starts[0] = start
        starts[1:] = ends[:-1] + 1
        out[done : done + len(ends)] = _decode_block(raw, starts, ends - starts + 1)
        done += len(ends)
        start = int(ends[-1]) + 1
    return out


_BLOCK_BYTES = 1 << 18


def _decode_block(raw: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    if int(lengths.max()) > MAX_BYTES:
        raise VarintError(f"a number is longer than {MAX_BYTES} bytes")
    last = raw[starts + lengths - 1]
    if np.any((lengths == MAX_BYTES) & (last > 1)):
        raise VarintError("a number does not fit in 64 bits")
    u = np.zeros(len(starts), dtype=np.uint64)
    for k in range(MAX_BYTES):
        rows = np.flatnonzero(lengths > k)
        if not len(rows):
            break
        u[rows] |= (raw[starts[rows] + k].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * k)
    return unzigzag(u)
