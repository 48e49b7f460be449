"""Work that one process at a time should do, across every host that shares the database: a
PostgreSQL advisory lock, held by the database session of the process doing it, so that a
process that dies lets it go with its connection."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

from django.db import OperationalError, connection, transaction


@contextlib.contextmanager
def one_at_a_time(name: str, wait_s: float) -> Iterator[bool]:
    """Holds the lock named ``name`` within the block, once whoever holds it lets it go; after
    ``wait_s`` the block runs without it (yielding False), so that a holder that hangs delays
    the others, never stops them."""
    key = lock_key(name)
    held = _lock(key, wait_s)
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def lock_key(name: str) -> int:
    """The advisory lock's number for ``name`` (PostgreSQL's locks are numbered, 64 bits)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _lock(key: int, wait_s: float) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        if cursor.fetchone()[0]:
            return True  # nobody held it (most times): one query, no wait to bound
    try:
        # A wait that runs out fails only this (sub)transaction, and takes the lock_timeout
        # set for it along; a lock taken is the session's and outlives it.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('lock_timeout')")
            [previous] = cursor.fetchone()
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true)", [f"{max(round(wait_s * 1000), 1)}ms"]
            )
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
            cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
        return True
    except OperationalError:  # the wait ran out (lock_timeout)
        return False
