"""`profiler-app`: start the whole product (up), one role of it (web, worker, beat), or ask status.

One module on purpose (near 460 lines): the launcher's children, their restarts, the watch on
the database and broker they depend on, and the run file that `status` and `manage.py` read are
one supervisor's state, read most easily side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from profiler_app.embedded import EmbeddedServices, data_dir

ADMIN_USER = "admin"
STOP_GRACE_SECONDS = 20
# How long the launcher waits for a healthy server before it says that it is not.
WELCOME_WAIT_S = 60
# A child that keeps crashing (its database or broker is down, say) is started again after a
# pause that doubles up to a minute: nothing is given up on.
FIRST_RESTART_DELAY_S = 1.0
MAX_RESTART_DELAY_S = 60.0


def say(message: str) -> None:
    print(f"[profiler-app] {message}", flush=True)


class StartUpFailed(Exception):
    """A start-up step (migrate, collectstatic, the first admin) did not succeed."""


def manage(command: str, **options) -> None:
    """A management command in the launcher's own process: Django is set up here already, and
    a child process would start Django again (a second or more each, two or three a start).
    The launcher holds no database connection afterwards while it watches its children."""
    from django.core.management import call_command
    from django.db import DatabaseError, connection

    try:
        call_command(command, interactive=False, **options)
    except Exception as exc:
        if not isinstance(exc, DatabaseError):  # a database away says it all in its message
            traceback.print_exc()
        raise StartUpFailed(f"{command}: {exc}") from exc
    finally:
        connection.close()


# A worker's main process sends the broker nothing on its own. Celery's worker heartbeat (and
# the gossip and mingle built on events) publishes every 2 s and, when Redis is gone at that
# moment, retries without end inside the main process: the worker neither notices the outage
# nor stops on SIGTERM until Redis is back. Nothing here reads those events (health asks the
# workers with a ping), so they are off.
WORKER_EVENTS_OFF = ["--without-heartbeat", "--without-gossip", "--without-mingle"]


def role_command(role: str, host: str, port: int) -> list[str]:
    if role == "web":
        from django.conf import settings

        return [
            sys.executable, "-m", "gunicorn", "profiler_app.wsgi:application",
            "--bind", f"{host}:{port}",
            "--workers", os.environ.get("WEB_CONCURRENCY", "2"),
            "--threads", "4",
            # Multi-GB uploads stream for minutes; never cut them off.
            "--timeout", "0",
            "--access-logfile", "-",
            # gunicorn's default is one path in the home folder: a second instance on the
            # host would take it over, and remove it when it stops.
            "--control-socket", str(control_socket(settings.DATA_DIR, port)),
        ]  # fmt: skip
    if role == "worker":
        from django.conf import settings

        # Parses yield the CPU to the web: pages stay quick while a backlog is parsed, and
        # the backlog still gets every cycle the web leaves.
        return [
            "nice", "-n", str(settings.WORKER_NICE),
            sys.executable, "-m", "celery", "-A", "profiler_app.celery", "worker",
            "--queues", ",".join(settings.CELERY_WORKER_QUEUES),
            "--concurrency", os.environ.get("WORKER_CONCURRENCY", "2"),
            "--loglevel", "INFO",
            *WORKER_EVENTS_OFF,
        ]  # fmt: skip
    if role == "sweeper":
        from django.conf import settings

        # One process on the sweep queue only: recovery runs within its period whatever
        # backlog the workers have.
        return [
            sys.executable, "-m", "celery", "-A", "profiler_app.celery", "worker",
            "--queues", settings.CELERY_SWEEP_QUEUE,
            "--pool", "solo",
            "--hostname", f"{settings.SWEEPER_NAME}@%h",
            "--loglevel", "INFO",
            *WORKER_EVENTS_OFF,
        ]  # fmt: skip
    if role == "beat":
        from django.conf import settings

        return [
            sys.executable, "-m", "celery", "-A", "profiler_app.celery", "beat",
            "--schedule", settings.CELERY_BEAT_SCHEDULE_FILENAME,
            "--loglevel", "INFO",
        ]  # fmt: skip
    raise ValueError(role)


def control_socket(root: Path, port: int) -> Path:
    """The web server's control socket (`gunicornc -s PATH`), one per instance and port."""
    return root / f"gunicorn-{port}.ctl"


@dataclass
class Child:
    role: str
    command: list[str]
    process: subprocess.Popen | None = None
    restart_delay_s: float = FIRST_RESTART_DELAY_S
    restart_at: float | None = None  # when a crashed child starts again
    started_at: float = 0.0
    restarts: int = 0  # started again after it exited (for /metrics, through run.json)

    def start(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(self.command, env=env)
        self.started_at = time.monotonic()
        self.restart_at = None
        say(f"started {self.role} (pid {self.process.pid})")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait_stopped(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"{self.role} did not stop in time; killing it")
            self.process.kill()
            self.process.wait()


def ensure_admin() -> str:
    """First start: an admin with a generated password, saved for the person who started it.
    Once any administrator exists, nothing changes.

    Returns how to log in."""
    from django.contrib.auth import get_user_model
    from django.db import DatabaseError, connection

    password_file = data_dir() / "admin-password.txt"
    users = get_user_model().objects
    password = secrets.token_urlsafe(12)
    try:
        created = not users.filter(is_superuser=True).exists()
        if created:
            users.create_superuser(ADMIN_USER, "", password)
    except DatabaseError as exc:
        raise StartUpFailed(f"creating the administrator: {exc}") from exc
    finally:
        connection.close()  # the launcher holds no connection while it watches its children
    if created:
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
        say(f"created the administrator account '{ADMIN_USER}'")
    if password_file.exists():
        return f"password {password_file.read_text().strip()}  (kept in {password_file})"
    return "the password you set (python manage.py changepassword admin changes it)"


def clear_request_metrics() -> None:
    """The web processes' request counts start from zero with each run (prometheus_client's
    multiprocess files outlive the processes that wrote them)."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        for file in Path(folder).glob("*.db"):
            file.unlink(missing_ok=True)


class Welcome:
    """How to log in, said once the server is healthy (a worker answers), or a warning after
    ``WELCOME_WAIT_S``. Asked on each turn of the supervisor: waiting for it never keeps the
    launcher from starting again what died meanwhile (an embedded PostgreSQL killed during the
    start waited a minute), nor from stopping when asked."""

    def __init__(self, base_url: str, login_hint: str, root: Path) -> None:
        self.base_url, self.login_hint, self.root = base_url, login_hint, root
        self.deadline: float | None = time.monotonic() + WELCOME_WAIT_S

    def check(self) -> None:
        if self.deadline is None:
            return
        if _has_a_worker(self.base_url):
            say("=" * 72)
            say(f"profiler-app is running: open {self.base_url}")
            say(f"log in as '{ADMIN_USER}' with {self.login_hint}")
            say("stop with Ctrl-C; data is kept in " + str(self.root))
            say("=" * 72)
        elif time.monotonic() < self.deadline:
            return
        else:
            say(
                f"the server did not become healthy; see the log above and "
                f"{self.base_url}/api/health/"
            )
        self.deadline = None


def _has_a_worker(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/api/health/", timeout=2) as response:
            return json.load(response).get("workers", 0) > 0
    except (OSError, ValueError):
        return False  # not listening yet, or not healthy yet (503)


def write_run_file(
    path: Path,
    urls: dict[str, str],
    base_url: str,
    children: list[Child],
    watch: DependencyWatch | None = None,
) -> None:
    """What `profiler-app status` shows and `/metrics` reads (the restarts) while it runs."""
    info = {
        "launcher_pid": os.getpid(),
        "url": base_url,
        "database": urls.get("DATABASE_URL", "DATABASE_URL from the environment"),
        "redis": urls.get("REDIS_URL", "REDIS_URL from the environment"),
        "children": {c.role: c.process.pid for c in children if c.process is not None},
        "restarts": {
            "embedded": dict(watch.restarts) if watch is not None else {},
            "processes": {c.role: c.restarts for c in children},
        },
    }
    text = json.dumps(info, indent=2)
    if text == _run_file_written.get(path):
        return
    # Written whole then renamed: a web process reading it never sees half of it.
    partial = path.with_suffix(".json.partial")
    try:
        partial.write_text(text)
        partial.replace(path)
    except OSError as error:  # a full disk: the server keeps running, the file waits for room
        if _run_file_written.get(path) is not None:
            say(f"could not write {path.name} ({error.strerror}); trying again")
        _run_file_written[path] = None
        return
    _run_file_written[path] = text


# What the launcher last wrote to each run file (None: its last write failed): the supervisor
# asks every half second, and writes only what changed.
_run_file_written: dict[Path, str | None] = {}


def up(host: str, port: int) -> int:
    root = data_dir()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
    os.environ["PROFILER_DATA_DIR"] = str(root)
    services = EmbeddedServices(root)
    urls = services.start()
    os.environ.update(urls)
    env = dict(os.environ)
    base_url = f"http://{host}:{port}"

    import django

    django.setup()
    clear_request_metrics()

    DependencyWatch().shutdown_request()  # one left from the last run
    run_file = root / "run.json"
    stopping = threading.Event()

    def on_signal(signum, _frame):
        stopping.set()
        say(f"received {signal.Signals(signum).name}; stopping")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    children: list[Child] = []
    exit_code = 0
    try:
        children, login_hint = _start(env, host, port, run_file, urls, base_url)
        welcome = Welcome(base_url, login_hint, root)
        watch = DependencyWatch(services)
        _supervise(children, env, watch, stopping, run_file, urls, base_url, welcome)
    except StartUpFailed as err:
        say(f"start-up step failed: {err}")
        exit_code = 1
    finally:
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children:
            child.stop()
        for child in children:
            child.wait_stopped(deadline)
        services.stop()
        run_file.unlink(missing_ok=True)
        say("stopped")
    return exit_code


def _start(
    env: dict[str, str],
    host: str,
    port: int,
    run_file: Path,
    urls: dict[str, str],
    base_url: str,
) -> tuple[list[Child], str]:
    """Migrates and starts worker, sweeper, beat and web; returns them and how the
    administrator logs in."""
    say("applying database migrations")
    manage("migrate")
    manage("collectstatic", verbosity=0)
    children = [
        Child(role, role_command(role, host, port)) for role in ("worker", "sweeper", "beat")
    ]
    children.append(Child("web", role_command("web", host, port)))
    login_hint = ensure_admin()
    for child in children:
        child.start(env)
    write_run_file(run_file, urls, base_url, children)
    return children, login_hint


def _supervise(
    children: list[Child],
    env: dict[str, str],
    watch: DependencyWatch,
    stopping: threading.Event,
    run_file: Path,
    urls: dict[str, str],
    base_url: str,
    welcome: Welcome,
) -> None:
    """Keeps the embedded services and the children up until asked to stop (a signal, or the
    idle auto-shutdown), and says how to log in once the server is up."""
    while not stopping.is_set():
        time.sleep(0.5)
        watch.keep_up()
        reason = watch.shutdown_request()
        if reason is not None:
            say(f"idle auto-shutdown: {reason}")
            say("all data is kept; start again with `make run`")
            return
        for child in children:
            if not stopping.is_set():
                restart_crashed(child, env)
        write_run_file(run_file, urls, base_url, children, watch)
        welcome.check()


def restart_crashed(child: Child, env: dict[str, str]) -> None:
    """Starts a child that exited again, after a pause that doubles while it keeps crashing
    (one that ran for a minute starts over from the shortest pause)."""
    if child.process is None or child.process.poll() is None:
        return
    now = time.monotonic()
    if child.restart_at is None:
        if now - child.started_at > MAX_RESTART_DELAY_S:
            child.restart_delay_s = FIRST_RESTART_DELAY_S
        say(
            f"{child.role} exited with code {child.process.returncode}; "
            f"starting it again in {child.restart_delay_s:.0f} s"
        )
        child.restart_at = now + child.restart_delay_s
        child.restart_delay_s = min(child.restart_delay_s * 2, MAX_RESTART_DELAY_S)
    elif now >= child.restart_at:
        child.restarts += 1
        child.start(env)


class DependencyWatch:
    """What the launcher's loop asks of Redis and PostgreSQL, riding out their outages: a
    request that fails is logged once per outage and asked again on the next turn; an embedded
    server that stopped is started again."""

    RESTART_EVERY_S = 5.0

    def __init__(self, services: EmbeddedServices | None = None) -> None:
        self.services = services
        self.down: set[str] = set()
        self.restarts: Counter[str] = Counter()  # embedded servers started again, by name
        self._next_restart = 0.0

    def shutdown_request(self) -> str | None:
        import redis

        from profiler_app.core.shutdown_request import take_shutdown_request

        try:
            reason = take_shutdown_request()
        except (redis.RedisError, OSError) as err:
            self._went_down("Redis", err)
            return None
        self._came_back("Redis")
        return reason

    def keep_up(self) -> None:
        """Starts an embedded server that is no longer running (at most every few seconds)."""
        if self.services is None or time.monotonic() < self._next_restart:
            return
        self._next_restart = time.monotonic() + self.RESTART_EVERY_S
        for name, server in self.services.stopped():
            self._went_down(name, "its process stopped")
            try:
                server.start()
            except Exception as err:  # noqa: BLE001 - a start that fails is tried again
                say(f"could not start the embedded {name} again: {err}")
            else:
                self.restarts[name] += 1
                say(f"started the embedded {name} again")
                self._came_back(name)  # its next outage is told again

    def _went_down(self, name: str, err: object) -> None:
        if name not in self.down:
            self.down.add(name)
            say(f"{name} is unreachable ({err}); everything keeps running and waits for it")

    def _came_back(self, name: str) -> None:
        if name in self.down:
            self.down.discard(name)
            say(f"{name} is reachable again")


def run_role(role: str, host: str, port: int) -> int:
    """One role in the foreground (a container's command). web exits 0 on idle shutdown."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "profiler_app.settings")
    import django

    django.setup()

    process = subprocess.Popen(role_command(role, host, port))
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    signal.signal(signal.SIGINT, lambda *_: process.terminate())
    watch = DependencyWatch()
    while process.poll() is None:
        time.sleep(1)
        reason = watch.shutdown_request() if role == "web" else None
        if reason is not None:
            print(f"idle auto-shutdown: {reason}", flush=True)
            process.terminate()
            process.wait()
            return 0
    return process.returncode


def status() -> int:
    run_file = data_dir() / "run.json"
    if not run_file.exists():
        print("profiler-app is not running (start it with `make run` or `profiler-app up`).")
        return 1
    info = json.loads(run_file.read_text())
    print(f"web:       {info['url']}")
    print(f"database:  {info['database']}")
    print(f"redis:     {info['redis']}")
    for role, pid in info["children"].items():
        alive = Path(f"/proc/{pid}").exists()
        print(f"{role + ':':<10} pid {pid} {'running' if alive else 'NOT RUNNING'}")
    try:
        with urllib.request.urlopen(f"{info['url']}/api/health/", timeout=5) as response:
            print(f"health:    {response.read().decode()}")
    except OSError as err:
        print(f"health:    unreachable ({err})")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    # What the server and the database and broker it starts write is private to this user.
    os.umask(0o077)
    parser = argparse.ArgumentParser(
        prog="profiler-app", description="Run the profiler-app server and its workers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in [
        ("up", "start database, broker, worker, sweeper, beat and web (Ctrl-C stops all)"),
        ("web", "run only the web server (for containers)"),
        ("worker", "run only a Celery worker (for containers; start several to scale)"),
        ("beat", "run only the periodic-task scheduler (for containers; exactly one)"),
        ("sweeper", "run only the recovery sweeps' worker (for containers; one is enough)"),
    ]:
        role = sub.add_parser(name, help=text)
        role.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        role.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    sub.add_parser("status", help="show what runs where and whether it is healthy")
    args = parser.parse_args(argv)
    if args.command == "status":
        return status()
    if args.command == "up":
        return up(args.host, args.port)
    return run_role(args.command, args.host, args.port)


if __name__ == "__main__":
    sys.exit(main())
