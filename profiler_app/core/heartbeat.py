"""A running task's sign of life: a thread that stamps the task's row every few seconds, so a
sweep tells a dead task from a slow one by the stamp's age, never by how long ago it started
(a parse writing its results, or a store on its way to a bucket, reports no progress).

The stamp is an UPDATE that only matches while the row is still the task's claim: once it
matches nothing (reprocessed, swept, deleted), ``lost`` is set and the task may stop early,
after checking on its own connection (a test's transaction hides its rows from this one).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from types import TracebackType

from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connection

log = logging.getLogger(__name__)
# The thread's stack: a few queries need little, and the default (8 MB) counts against the
# worker's memory ceiling.
STACK_BYTES = 512 * 1024
_stack_size_lock = threading.Lock()


class Heartbeat:
    """``with Heartbeat(stamp, "part 12"):`` calls ``stamp()`` (rows updated) every
    INGEST_HEARTBEAT_SECONDS on a thread of its own (and its own database connection)."""

    def __init__(self, stamp: Callable[[], int], what: str) -> None:
        self.stamp = stamp
        self.what = what
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat {what}", daemon=True)

    def __enter__(self) -> Heartbeat:
        with _stack_size_lock:
            previous = threading.stack_size(STACK_BYTES)
            try:
                self._thread.start()
            finally:
                threading.stack_size(previous)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        failing = False
        try:
            while not self._stop.wait(settings.INGEST_HEARTBEAT_SECONDS):
                try:
                    self.lost = self.stamp() == 0
                except DatabaseError as exc:  # an outage: the task goes on, the stamp retries
                    if not failing:
                        log.warning("Heartbeat of %s cannot reach the database: %s", self.what, exc)
                    failing = True
                    close_connection()  # the next try connects afresh
                    continue
                if failing:
                    log.warning("Heartbeat of %s reaches the database again", self.what)
                failing = False
        finally:
            close_connection()


def close_connection() -> None:
    """This thread's database connection, closed (quietly when the database is gone)."""
    with contextlib.suppress(DatabaseError):
        connection.close()
