"""Synthetic Kineto traces whose size is the point: many tracks, or one very long thread.

Written as gzipped Kineto JSON, streamed (never whole in memory), so the benchmark can make an
18-million-event file with the same code the tests use at a small size.
"""

from __future__ import annotations

import gzip
from pathlib import Path

_HEAD = b'{"schemaVersion": 1, "traceEvents": [\n'
_TAIL = b"\n]}\n"
_OP = (
    '{"ph": "X", "cat": "cpu_op", "name": "aten::op%d", "pid": %d, "tid": %d, "ts": %d, "dur": %d}'
)
_BLOCK = 100_000


def _write(path: Path, lines) -> Path:
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(_HEAD)
        first = True
        block: list[str] = []
        for line in lines:
            block.append(line)
            if len(block) == _BLOCK:
                out.write(((",\n" if not first else "") + ",\n".join(block)).encode())
                first, block = False, []
        if block:
            out.write(((",\n" if not first else "") + ",\n".join(block)).encode())
        out.write(_TAIL)
    return path


def many_tracks(path: Path, n: int, by: str = "tid") -> Path:
    """``n`` operators, each alone on its own thread (``by="tid"``) or process (``"pid"``)."""

    def lines():
        for i in range(n):
            pid, tid = (1, i + 1) if by == "tid" else (i + 1, 1)
            yield _OP % (i % 7, pid, tid, 1000 + 3 * i, 2 + i % 5)

    return _write(path, lines())


def one_thread(path: Path, n: int, depth: int) -> Path:
    """``n`` operators on one thread, in stacks ``depth`` deep: stack ``g`` spans
    ``2 * depth + 1`` µs from ``g * (2 * depth + 1)``, its ``j``-th operator starts ``j`` µs in
    and ends ``j + 1`` µs before the stack's end (so it nests ``j`` deep)."""
    span = 2 * depth + 1

    def lines():
        for i in range(n):
            stack, j = divmod(i, depth)
            yield _OP % (j, 1, 1, stack * span + j, span - 2 * j - 1)

    return _write(path, lines())


def complete_event(cat: str, name: str, ts: float, dur: float, pid=1, tid=1, **args) -> dict:
    """One Chrome-trace complete event ("ph": "X"), its args only when given."""
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    return {**event, "args": args} if args else event


def chunk_meta(**fields) -> dict:
    """The meta of a one-chunk collector capture (rank 0 of 1, final), as the collector's
    ``ChunkBuilder`` writes it; ``fields`` override any entry (e.g. ``job``, ``torch_version``)."""
    return {
        "job": "capture",
        "node": "algo-1",
        "hostname": "gpu-7",
        "rank": 0,
        "local_rank": 0,
        "world_size": 1,
        "pid": 1102,
        "seq": 0,
        "final": True,
        "created_ns": 0,
        "torch_version": "2.11",
        "cuda": True,
        "devices": [],
        "sources": {"kineto": "ok"},
    } | fields
