"""A query run in a process of its own, whose memory the kernel bounds.

DuckDB's memory limit bounds what a query computes with, not the strings it builds:
``select repeat('x', 1e8) from range(20)`` grew the process that ran it by 512 MB, although
each value was cut to 64 KiB before it was handed over. So each query runs in a child
process (forked from a server that has the console loaded), whose memory is capped
(``RLIMIT_DATA``) at what it had loaded plus ``memory_mb``: past it, DuckDB fails the query
("out of memory"; that query needs 768 MB to 1 GB of it) and the web process has grown by
nothing but the answer's pieces on their way through. The child is killed when the answer is
closed or overruns its time.
"""

from __future__ import annotations

import multiprocessing
import resource
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection

from profiler_app.sql.pure import console
from profiler_app.sql.pure.answer import document_end
from profiler_app.sql.pure.console import (
    Limits,
    QueryFailed,
    QueryRefused,
    QueryTimedOut,
    StorePart,
)

# Started once per process that asks (a clean interpreter, the console imported), then forked.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["profiler_app.sql.pure.console"])
_REFUSALS = {e.__name__: e for e in (QueryFailed, QueryRefused, QueryTimedOut)}
# After its time limit the child still has this long to send its last piece and say why it
# stopped; past it, it is killed.
_GRACE_S = 5.0
_END = b""  # the pieces are never empty: an empty message ends the answer


def _data_size() -> int:
    """What ``RLIMIT_DATA`` counts of this process now (heap and private mappings), bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmData:")) << 10


def _serve(pipe: Connection, parts: list[StorePart], query: str, limits: Limits, memory_mb: int):
    """In the child: the query's answer, piece by piece, down ``pipe``."""
    cap = _data_size() + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
    try:
        answer = console.open_query(parts, query, limits)
    except (QueryFailed, QueryRefused, QueryTimedOut) as refused:
        message = str(refused)
        if message.startswith("Out of Memory"):  # DuckDB's, at the cap: say which bound
            message = f"{_out_of_memory(memory_mb)} ({message.splitlines()[0]})"
        pipe.send(("refused", type(refused).__name__, message))
        return
    except MemoryError:
        pipe.send(("refused", "QueryFailed", _out_of_memory(memory_mb)))
        return
    try:
        pipe.send(("answer",))
        for piece in answer:
            pipe.send_bytes(piece)
        pipe.send_bytes(_END)
    finally:
        answer.close()


def _out_of_memory(memory_mb: int) -> str:
    return (
        f"The query needed more than {memory_mb:,} MB of memory (SQL_PROCESS_MEMORY_MB) and "
        "was stopped. Select narrower values, fewer rows, or aggregate."
    )


def _stopped(memory_mb: int, limits: Limits, deadline: float) -> str:
    """Why the query's process went silent: its time, else its memory."""
    if time.monotonic() >= deadline:
        return f"The query ran past {limits.timeout_s:g} s and was stopped; narrow it or aggregate."
    return _out_of_memory(memory_mb)


class IsolatedAnswer:
    """The answer a child process sends, as ``Answer`` is read: its JSON pieces by iterating,
    ``close()`` (which ends the child), then ``on_close``."""

    def __init__(
        self, process, pipe: Connection, limits: Limits, memory_mb: int, started: float
    ) -> None:
        self.process, self.pipe, self.limits = process, pipe, limits
        self.memory_mb, self.started = memory_mb, started
        self.deadline = started + limits.timeout_s + _GRACE_S
        self.on_close: list[Callable[[], None]] = []
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        while True:
            piece = _receive(self.pipe, self.deadline, bytes_=True)
            if piece is None:
                yield self._broken_tail()
                return
            if piece == _END:
                return
            yield piece

    def _broken_tail(self) -> bytes:
        """The end of the JSON document when the child died after its first piece: the rows
        sent stand, and the note says why no more came."""
        return document_end(
            "error",
            False,
            _stopped(self.memory_mb, self.limits, self.deadline),
            round((time.monotonic() - self.started) * 1000, 1),
            "events",
            self.limits.max_rows,
            self.limits.max_bytes,
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.pipe.close()
            self.process.kill()
            self.process.join()
        finally:
            for callback in self.on_close:
                callback()


def _receive(pipe: Connection, deadline: float, bytes_: bool = False):
    """The child's next message, or None once it has died or run past ``deadline``."""
    if not pipe.poll(max(0.0, deadline - time.monotonic())):
        return None
    try:
        return pipe.recv_bytes() if bytes_ else pipe.recv()
    except (EOFError, OSError):
        return None


def open_isolated(
    parts: list[StorePart], query: str, limits: Limits, memory_mb: int
) -> IsolatedAnswer:
    """``console.open_query`` in a child process of at most ``memory_mb`` more than it loaded:
    refusals raise here as there; the answer streams from the child."""
    started = time.monotonic()
    receiving, sending = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(
        target=_serve, args=(sending, parts, query, limits, memory_mb), daemon=True
    )
    process.start()
    sending.close()
    answer = IsolatedAnswer(process, receiving, limits, memory_mb, started)
    first = _receive(receiving, answer.deadline)
    if first is None or first[0] == "refused":
        answer.close()
        if first is None:
            raise QueryFailed(_stopped(memory_mb, limits, answer.deadline))
        raise _REFUSALS[first[1]](first[2])
    return answer
