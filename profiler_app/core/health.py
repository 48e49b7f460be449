"""What runs: the database, the broker and how many Celery workers answer.

Asking the workers takes a broadcast and a second of waiting, so only staff callers ask them
live; everyone else reads the count that beat records every ``HEALTH_WORKERS_SECONDS`` (and
each worker as it starts), so an anonymous health check costs two pings.
"""

from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from profiler_app.celery import app as celery_app

WORKERS_KEY = "health:workers"


@dataclass(frozen=True)
class HealthReport:
    database: str
    redis: str
    workers: int

    @property
    def ok(self) -> bool:
        return self.database == "ok" and self.redis == "ok"

    def as_dict(self) -> dict:
        return {"database": self.database, "redis": self.redis, "workers": self.workers}


def redis_client() -> redis.Redis:
    # kombu spells unix sockets redis+socket://, redis-py spells them unix://
    url = settings.REDIS_URL.replace("redis+socket://", "unix://", 1)
    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def record_workers() -> int:
    """Ask the workers now and keep the count for the cheap checks."""
    replies = celery_app.control.ping(timeout=1.0)
    # The sweeper runs no parse: it is not a worker the health check counts.
    sweeper = f"{settings.SWEEPER_NAME}@"
    workers = sum(1 for reply in replies for name in reply if not name.startswith(sweeper))
    cache.set(WORKERS_KEY, workers, timeout=3 * settings.HEALTH_WORKERS_SECONDS)
    return workers


def check(detailed: bool = False) -> HealthReport:
    """Database and Redis pinged now; workers asked live when ``detailed``, else as recorded
    (0 when nothing was recorded lately). Only a detailed report says what failed."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as err:  # any failure is what the report is for
        database = f"error: {err}" if detailed else "error"
    try:
        redis_client().ping()
        broker = "ok"
    except redis.RedisError as err:
        broker = f"error: {err}" if detailed else "error"
    if broker != "ok":
        workers = 0
    elif detailed:
        workers = record_workers()
    else:
        workers = int(cache.get(WORKERS_KEY, 0))
    return HealthReport(database=database, redis=broker, workers=workers)
