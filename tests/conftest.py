"""Shared fixtures: a user, a teammate, an admin, API clients, and a real Celery worker process."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, transaction
from django.test.utils import override_settings
from rest_framework.test import APIClient

from profiler_app.accounts.logic import issue_token
from profiler_app.cli import WORKER_EVENTS_OFF
from profiler_app.core.health import redis_client
from profiler_app.testing import database_url

DATA_DIR = Path(__file__).resolve().parent / "data"

# A test that asks for one of these needs PostgreSQL, Redis or a browser.
SERVICE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_setup",
    "live_server",
    "celery_worker_process",
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items):
    """Marks `services` every test that needs a server; `make test-fast` runs the others."""
    for item in items:
        needs = SERVICE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if needs or item.get_closest_marker("django_db") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.services)


class SlowFilesFirst:
    """Files with slow tests first, each file's tests in their order: xdist hands out whole
    files in this order, so a process's last files are short ones, and no process runs a long
    file alone at the end of the run."""

    @pytest.hookimpl(trylast=True)  # after pytest-django's order (database tests first)
    def pytest_collection_modifyitems(self, items):
        slow = {item.path for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.path not in slow)


def pytest_configure(config):
    config.pluginmanager.register(SlowFilesFirst(), "slow-files-first")


def pytest_terminal_summary(terminalreporter):
    """Where the suite's time goes, by file: each file's set-up, calls and tear-down summed
    (--durations names single tests; a file's module fixtures and many small tests add up)."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if hasattr(report, "duration") and hasattr(report, "nodeid"):
                file = report.nodeid.split("::", 1)[0]
                seconds[file] = seconds.get(file, 0.0) + report.duration
    if not seconds:
        return
    terminalreporter.section(f"slowest files (of {sum(seconds.values()):,.0f} s in tests)")
    for file, total in sorted(seconds.items(), key=lambda item: -item[1])[:25]:
        terminalreporter.write_line(f"{total:8.1f} s  {file}")


@pytest.fixture(autouse=True)
def fresh_cache(request):
    """Each test that uses the servers starts with no throttle counts, demo slot or recorded
    worker count: the cache is this run's keys (prefixed like its queues) in the real Redis."""
    if request.node.get_closest_marker("services") is None:
        return
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    assert prefix, "tests need their own cache prefix (profiler_app.testing sets it)"
    client = redis_client()
    keys = list(client.scan_iter(f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture(scope="session", autouse=True)
def quick_password_hashing():
    """Django's hasher spends a million PBKDF2 rounds per password by design (0.4 s of CPU on a
    quiet core, seconds on a busy one), and most tests make or check one (the user fixtures,
    each sign-in). They test who may sign in, not the hash's cost: passwords are hashed with
    Django's quick test hasher (tests/accounts/test_login_throttle_parallel.py keeps the real
    one, whose cost is the race window it checks). A password some other process hashed the
    usual way still checks: the usual hasher stays second."""
    quick_first = ["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=quick_first):
        yield


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def teammate(django_user_model):
    return django_user_model.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user(
        "carol", password="carol-password-1", is_staff=True
    )


@pytest.fixture
def client_for():
    """client_for(user) → an APIClient authenticated as that user (None: anonymous)."""

    def make(who=None) -> APIClient:
        client = APIClient()
        if who is not None:
            client.force_authenticate(who)
        return client

    return make


@pytest.fixture
def api(user, client_for) -> APIClient:
    return client_for(user)


@pytest.fixture
def api_token(user) -> str:
    return issue_token(user, "tests")[1]


@pytest.fixture
def parsed_by_hand(monkeypatch):
    """Parts stored (or swept) by this test queue no parse: the test claims and parses them
    itself, and the run's worker (alive once any test started it) must not take them first."""
    from profiler_app.core import logic as core_logic
    from profiler_app.ingest import logic as ingest_logic

    for module in (core_logic, ingest_logic):
        monkeypatch.setattr(module, "send_ingest", lambda part_id: None)


# Written by migrate and never by a test: kept, so no flush has to write them again.
MIGRATE_TABLES = {"django_content_type", "auth_permission"}
# A table with this many rows is truncated; fewer rows are deleted (a TRUNCATE makes new files
# for the table and each index, which costs more than deleting a few hundred rows).
TRUNCATE_FROM_ROWS = 5000


def empty_tables(connection) -> None:
    """Every table a test may write, emptied in one transaction: only the tables that hold
    rows, deleted or truncated by their size. Foreign keys are checked at commit, so the order
    does not matter."""
    quote = connection.ops.quote_name
    names = connection.introspection.django_table_names(only_existing=True, include_views=False)
    tables = sorted(set(names) - MIGRATE_TABLES)
    sizes = " UNION ALL ".join(
        f"SELECT {i}, (SELECT count(*) FROM (SELECT FROM {quote(t)} LIMIT {TRUNCATE_FROM_ROWS}) s)"
        for i, t in enumerate(tables)
    )
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(sizes)
        used = {tables[i]: rows for i, rows in cursor.fetchall() if rows}
        large = [quote(t) for t, rows in used.items() if rows >= TRUNCATE_FROM_ROWS]
        if large:
            cursor.execute(f"TRUNCATE {', '.join(large)} CASCADE")
        for table, rows in used.items():
            if rows < TRUNCATE_FROM_ROWS:
                cursor.execute(f"DELETE FROM {quote(table)}")


@pytest.fixture(scope="session", autouse=True)
def transactional_tests_empty_only_used_tables():
    """A transactional test ends with its tables emptied by ``empty_tables`` in place of
    Django's flush, which truncates all 44 tables and writes the permissions again: 0.3 s a
    test on a quiet machine and over a second on a busy one, for a few rows.

    The run's worker may still be finishing a task the test queued; when Postgres breaks a
    deadlock with it, or a row it added meanwhile fails a foreign key at commit, the emptying
    is tried again (the next test would otherwise start on this one's rows)."""
    from django.db import connections
    from django.test import TransactionTestCase

    original = TransactionTestCase._fixture_teardown

    def teardown(self):
        for name in self._databases_names(include_mirrors=False):
            for attempt in range(1, 6):
                try:
                    empty_tables(connections[name])
                    break
                except (OperationalError, IntegrityError):
                    if attempt == 5:
                        raise

    TransactionTestCase._fixture_teardown = teardown
    yield
    TransactionTestCase._fixture_teardown = original


_run_worker: list[subprocess.Popen] = []  # the run's worker, once a test has started it


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real `celery worker` subprocess on the test database and this run's own queues."""
    env = dict(os.environ)
    env["DATABASE_URL"] = database_url(settings.DATABASES["default"])
    env["PYTHONUNBUFFERED"] = "1"
    log_path = Path(settings.MEDIA_ROOT) / "celery-worker.log"
    log = log_path.open("w")
    hostname = f"test-{os.getpid()}@{socket.gethostname()}"  # how tests address it
    process = subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "profiler_app.celery", "worker",
            "--queues", ",".join(settings.CELERY_WORKER_QUEUES),
            "--concurrency", "1", "--pool", "prefork", "--loglevel", "INFO",
            "--hostname", hostname, *WORKER_EVENTS_OFF,
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while "ready." not in log_path.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"Celery worker did not start:\n{log_path.read_text()}")
        time.sleep(0.2)
    process.log_path = log_path  # type: ignore[attr-defined]
    process.hostname = hostname  # type: ignore[attr-defined]
    _run_worker.append(process)
    yield process
    _run_worker.clear()
    process.terminate()
    process.wait(30)
    log.close()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Polls until predicate() is truthy; returns its value or fails with the last one."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            assert value, f"condition not met within {timeout}s"
            return value
        time.sleep(interval)


def wait_for_worker_at_rest(timeout: float = 300.0) -> None:
    """Returns once the run's worker (when a test has started it) holds no task: none queued
    on its queues, none taken or running. A task an earlier test queued may still be writing
    or removing files after that test ended (a late parse keeps its analyses, then removes
    them on finding its job deleted); what the data directory holds is counted after it."""
    if not _run_worker or _run_worker[0].poll() is not None:
        return
    hostname = _run_worker[0].hostname  # type: ignore[attr-defined]
    # Twice in a row: a task that ends as it is asked about may have queued another.
    wait_for(lambda: _worker_at_rest(hostname) and _worker_at_rest(hostname), timeout)


def _worker_at_rest(hostname: str) -> bool:
    from profiler_app.celery import app

    broker = redis_client()

    def queued() -> int:
        return sum(broker.llen(queue) for queue in settings.CELERY_WORKER_QUEUES)

    if queued():
        return False
    ask = app.control.inspect(destination=[hostname], timeout=10)
    # Taken before running: asked first, so a task moving between the two is seen in one.
    for held in (ask.reserved, ask.active):
        reply = held()
        if not reply or reply.get(hostname):  # no reply: not known to be at rest
            return False
    return not queued()
