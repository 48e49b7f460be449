"""``lib.one_at_a_time``: a PostgreSQL advisory lock across processes and hosts. Another
session (a process elsewhere) holds it; the block waits for it, runs without it once its wait
runs out, and takes it when the holder's session ends (a process that died)."""

import threading

import pytest
from django.db import connection, connections, transaction

from profiler_app.lib.one_at_a_time import lock_key, one_at_a_time
from tests.conftest import wait_for

NAME = "rank-facts/1/0"


@pytest.fixture
def holder():
    """Another database session, as another process has: it takes the lock first."""
    other = connections.create_connection("default")
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [lock_key(NAME)])
    yield other
    other.close()


def waiting_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0]


def lock_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('lock_timeout')")
        return cursor.fetchone()[0]


def in_a_thread(wait_s: float) -> tuple[threading.Thread, list]:
    """The block run in a thread of its own (its own session), inside a transaction of its
    caller's, recording what it yielded and whether the wait's own timeout outlasted it."""
    entered: list = []

    def run() -> None:
        try:
            with transaction.atomic():
                before = lock_timeout()
                with one_at_a_time(NAME, wait_s) as held:
                    entered.append(held)
                    entered.append("same timeout" if lock_timeout() == before else "changed")
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, entered


@pytest.mark.django_db(transaction=True)
def test_the_block_waits_for_the_holder(holder):
    thread, entered = in_a_thread(wait_s=600)
    wait_for(waiting_sessions)  # asked for the lock, and waits
    assert entered == []
    with holder.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [lock_key(NAME)])
    thread.join()
    assert entered == [True, "same timeout"]


@pytest.mark.django_db(transaction=True)
def test_a_holder_that_dies_lets_it_go(holder):
    thread, entered = in_a_thread(wait_s=600)
    wait_for(waiting_sessions)
    holder.close()  # its session ends, as a killed process's does
    thread.join()
    assert entered == [True, "same timeout"]


@pytest.mark.django_db(transaction=True)
def test_once_the_wait_runs_out_the_block_runs_without_it(holder):
    before = lock_timeout()
    with one_at_a_time(NAME, wait_s=0.05) as held:
        assert held is False
        assert lock_timeout() == before  # the wait's own timeout went with it
    assert waiting_sessions() == 0


@pytest.mark.django_db(transaction=True)
def test_the_lock_is_let_go_after_the_block():
    # Inside a transaction of the caller's: the wait's own timeout does not outlast the wait.
    with transaction.atomic():
        before = lock_timeout()
        with one_at_a_time(NAME, wait_s=600) as held:
            assert held is True
            assert lock_timeout() == before
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(NAME)])
            assert cursor.fetchone() == (True,)
    finally:
        other.close()
