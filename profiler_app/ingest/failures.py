"""What went wrong with a parse, in words its user can act on, and whether it was an outage
(the database or the bucket went away: wait or retry) rather than a problem with the file."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BucketConnectionError
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from profiler_app.core import storage
from profiler_app.core.heartbeat import close_connection
from profiler_app.core.models import ProfilePart
from profiler_app.lib.disk import disk_full

log = logging.getLogger(__name__)
T = TypeVar("T")


def part_exists(part_id: int) -> bool:
    return ProfilePart.objects.filter(id=part_id).exists()


def disk_full_message(exc: BaseException) -> str | None:
    """What a parse that met a full disk says, whichever step met it (reading, the store, its
    totals, its index, the results' rows); None for any other failure."""
    if any(isinstance(e, psycopg.errors.DiskFull) for e in _causes(exc)):
        whose = "the database's disk"
    elif disk_full(exc):
        whose = "the server's disk"
    else:
        return None
    log.warning("A parse met a full disk: %s", exc)
    return (
        f"This part could not be parsed: {whose} is full. Nothing of this part was changed; "
        "free some space (or ask an administrator to), then reprocess it."
    )


def unexpected_failure_message(part_id: int, exc: Exception) -> str:
    if full := disk_full_message(exc):
        return full
    if part_exists(part_id):
        log.exception("Parsing part %s failed", part_id)  # the details, for the admins
    else:  # deleted during the parse, its files from under it: nothing went wrong
        log.info("Part %s was deleted while it was parsed", part_id)
    return (
        "This file could not be parsed: the server met an unexpected problem with it "
        f"(part {part_id}; the worker's log has the details). Reprocess it to try again."
    )


def _causes(exc: BaseException):
    """The exception and those it was raised from or while handling (a wrapper's cause)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def database_lost(exc: BaseException) -> bool:
    """The connection to PostgreSQL broke (an outage, a restart), as opposed to a refusal."""
    if not isinstance(
        exc, OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError
    ):
        return False
    try:
        usable = connection.connection is not None and connection.is_usable()
    except DatabaseError:
        usable = False
    if not usable:
        close_connection()  # the next query connects afresh
    return not usable


def storage_unreachable(exc: BaseException) -> bool:
    """The bucket did not answer (refused, timed out), as opposed to refusing a request."""
    kinds = (BucketConnectionError, ReadTimeoutError, ConnectionClosedError)
    return any(isinstance(e, kinds) for e in _causes(exc))


def patiently(action: Callable[[], T], what: str) -> T:
    """``action()``, tried again while the bucket is out of reach (a restart, a network
    outage) for up to INGEST_BUCKET_RETRY_SECONDS; then its StorageError. A refusal (denied,
    no such bucket) is raised at once: waiting would not change it."""
    deadline = time.monotonic() + settings.INGEST_BUCKET_RETRY_SECONDS
    wait_s = 1.0
    while True:
        try:
            return action()
        except storage.StorageError as exc:
            left_s = deadline - time.monotonic()
            if not storage_unreachable(exc) or left_s <= 0:
                raise
            log.warning("The bucket is out of reach for %s; trying again: %s", what, exc)
        time.sleep(min(wait_s, left_s))  # the last try falls on the deadline, not before it
        wait_s = min(wait_s * 2, 15.0)


def storage_failure_message(exc: storage.StorageError) -> str:
    if storage_unreachable(exc):
        return (
            "This part could not be parsed: the storage bucket could not be reached (tried "
            f"for {settings.INGEST_BUCKET_RETRY_SECONDS:.0f} s; {exc}) Nothing of this part was "
            "changed; reprocess it once the bucket is back."
        )
    if full := disk_full_message(exc):
        return full
    return f"{exc} Nothing of this part was changed; reprocess it to try again."


def storage_gone_message(part_id: int, exc: FileNotFoundError) -> str:
    if part_exists(part_id):  # else deleted during the parse: the failure is never shown
        log.warning("Part %s: a file went missing while it was parsed (%s)", part_id, exc)
    return (
        "The uploaded file is no longer in the server's storage (removed by retention, or "
        "by hand), so this part cannot be parsed. Upload the file again."
    )


def store_failure_message(exc: Exception) -> str:
    if full := disk_full_message(exc):
        return full
    # COPY runs on psycopg's own cursor, whose errors Django does not wrap.
    if isinstance(exc, DatabaseError | psycopg.Error):
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            "This file was read, but its results could not be stored: the database refused "
            f"a value ({reason})."
        )
    return f"This file was read, but its results could not be stored ({type(exc).__name__})."
