"""What runs: the database, the broker and how many Celery workers answer."""

from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection

from profiler_app.celery import app as celery_app


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


def check() -> HealthReport:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        database = "ok"
    except Exception as err:  # any failure is what the report is for
        database = f"error: {err}"
    try:
        redis_client().ping()
        broker = "ok"
    except redis.RedisError as err:
        broker = f"error: {err}"
    workers = len(celery_app.control.ping(timeout=1.0)) if broker == "ok" else 0
    return HealthReport(database=database, redis=broker, workers=workers)
