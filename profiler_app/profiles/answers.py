"""Finished page answers (the Dashboard's, the Cluster page's), kept in the shared cache
(Redis) under what they were computed from: a job's pages change only when one of its parts is
stored, fails, is added, reprocessed or deleted, when the job's status changes, or in another
window (and what a page adds to its key: the Cluster page's step and collective waits). Each of
these changes the key, so a stale answer is never read; old keys expire on their own.

Reading costs a few queries instead of a page's tens over every rank's rows (the soak's readers
open the same few jobs again and again while their parts are parsed; a 1,024-rank job's Cluster
page takes half a second to compute). The answer is kept as the JSON sent: a 1,024-rank job's
Dashboard is 660 KB, and unpickling and rendering it again took 25 ms a read, with garbage
collection pauses past 100 ms. With the cache unreachable the answer is computed as before."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer

from profiler_app.core.models import PartState, ProfilePart, TrainingJob

log = logging.getLogger(__name__)

# Bumped when the answer's shape or any figure's rule changes: answers of older code are not
# read again.
FORMAT = 3
KEEP_S = 600


def answer_key(job: TrainingJob, window: str, page: str, *more: object) -> str:
    """What the job's ``page`` in ``window`` is computed from, as a cache key, with ``more``
    that the page also depends on. A part's progress stamps do not count (its rows change only
    when it is stored, with finished_at)."""
    parts = ProfilePart.objects.filter(job=job).aggregate(
        n=Count("id"),
        last_id=Max("id"),
        unfinished=Count("id", filter=Q(state__in=(PartState.PENDING, PartState.PROCESSING))),
        finished_at=Max("finished_at"),
    )
    finished = parts["finished_at"].timestamp() if parts["finished_at"] else 0
    return (
        f"{page}:{FORMAT}:{job.pk}:{job.created_at.timestamp()}:{window}:{job.status}:"
        f"{parts['n']}:{parts['last_id']}:{parts['unfinished']}:{finished}"
        + "".join(f":{value}" for value in more)
    )


def response(key: str, compute: Callable[[], dict[str, Any]]) -> HttpResponse:
    """The JSON answer kept under ``key``, or ``compute()``'s, kept for the next reader."""
    return HttpResponse(cached_json(key, compute), content_type="application/json")


def cached_json(key: str, compute: Callable[[], dict[str, Any]]) -> bytes:
    """The answer kept under ``key``, or ``compute()``'s, as the API renders it."""
    try:
        found = cache.get(key)
    except redis.RedisError as exc:
        log.warning("Answer cache unreachable, computing the answer: %s", exc)
        return _rendered(compute())
    if found is not None:
        return found
    answer = _rendered(compute())
    try:
        cache.set(key, answer, KEEP_S)
    except redis.RedisError as exc:
        log.warning("Answer cache unreachable, answer not kept: %s", exc)
    return answer


def _rendered(answer: dict[str, Any]) -> bytes:
    return JSONRenderer().render(answer)
