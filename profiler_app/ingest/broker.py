"""Which parts have an ingest task waiting in the broker, so that the sweep queues again only
the parts whose message was lost (an enqueue during a Redis outage, a Redis restarted without
its data) and never floods a long queue with copies of the parts still waiting in it.

Reads the Redis list the Celery Redis transport keeps per queue: each entry is a JSON message
whose headers name the task and whose body holds its arguments.
"""

from __future__ import annotations

import base64
import json
import logging

import redis
from celery import current_app

from profiler_app.core.logic import INGEST_TASK

log = logging.getLogger(__name__)
TIMEOUT_S = 2


def ingest_queue() -> str:
    return current_app.amqp.router.route({}, INGEST_TASK)["queue"].name


def waiting_part_ids() -> set[int] | None:
    """The parts with an ingest task in the queue now; None when the broker cannot be read."""
    url = current_app.conf.broker_url.replace("redis+socket://", "unix://", 1)
    try:
        with redis.Redis.from_url(
            url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
        ) as client:
            messages = client.lrange(ingest_queue(), 0, -1)
    except redis.RedisError as exc:
        log.warning("The ingest queue could not be read: %s", exc)
        return None
    return {part_id for raw in messages if (part_id := _part_of(raw)) is not None}


def _part_of(raw: bytes) -> int | None:
    try:
        message = json.loads(raw)
        if message["headers"]["task"] != INGEST_TASK:
            return None
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return int(args[0])
    except (ValueError, KeyError, IndexError, TypeError):  # not a message this app sent
        return None
