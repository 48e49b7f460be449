"""Ingest admission: new parts wait while the workers are far behind.

Parts are parsed in the order they arrive. When more arrives than the workers can parse, the
queue grows without bound: every upload waits longer before its pages show anything, and the
web shares the machine with an ever longer backlog. So past ``INGEST_MAX_BACKLOG_SECONDS`` of
parsing waiting, a new part is answered 429 with ``Retry-After``: the collector keeps its chunks
spooled and the browser's uploader waits and tries again, so nothing is lost and what was
accepted is parsed soon.

The backlog is estimated from the queue and the recent pace: the parts waiting or being parsed,
divided by the parts finished per second lately (those finished in the last minute, over the
time since the first of them started). With no recent finish (an idle server, or no worker
running) there is no pace to go by, and nothing is refused; a short queue is always admitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Min
from django.db.models.functions import Coalesce
from django.utils import timezone
from rest_framework.exceptions import Throttled

from profiler_app.core.models import PartState, ProfilePart

PACE_WINDOW_S = 60.0
# A pace is never judged over less than this (one part finished in a blink is no pace).
MIN_PACE_SPAN_S = 2.0
# A queue this short is always admitted, whatever the pace: a team's usual uploads never wait.
ALWAYS_ADMITTED = 16
RETRY_AFTER_S = (5, 60)


class IngestBusy(Throttled):
    default_code = "ingest_busy"


@dataclass(frozen=True)
class Backlog:
    waiting: int  # parts queued or being parsed
    pace: float  # parts finished per second lately (0: none)

    @property
    def seconds(self) -> float | None:
        """Estimated seconds of parsing waiting; None when there is no pace to go by."""
        return self.waiting / self.pace if self.pace > 0 else None


def measure_backlog(now: datetime | None = None) -> Backlog:
    now = now or timezone.now()
    waiting = ProfilePart.objects.filter(
        state__in=[PartState.PENDING, PartState.PROCESSING]
    ).count()
    recent = ProfilePart.objects.filter(
        finished_at__gte=now - timedelta(seconds=PACE_WINDOW_S)
    ).aggregate(n=Count("id"), since=Min(Coalesce("started_at", "finished_at")))
    if not recent["n"]:
        return Backlog(waiting, 0.0)
    # Over the time those parts took from the first one's start: after an idle spell the pace
    # is that of the burst, not diluted by the quiet minute before it.
    span = max(MIN_PACE_SPAN_S, (now - recent["since"]).total_seconds())
    return Backlog(waiting, recent["n"] / span)


def retry_after_s(backlog_s: float, bound_s: float) -> int:
    """How long a refused sender waits: until the backlog is back under the bound, within
    ``RETRY_AFTER_S`` (a sender never waits a minute for a part it could send now)."""
    low, high = RETRY_AFTER_S
    return int(min(high, max(low, backlog_s - bound_s)))


def refuse_when_backlogged() -> None:
    """Raises ``IngestBusy`` (429, with Retry-After) while the estimated backlog is over the
    bound; a no-op when the bound is 0."""
    bound = settings.INGEST_MAX_BACKLOG_SECONDS
    if bound <= 0:
        return
    backlog = measure_backlog()  # two indexed counts, beside an upload's own work
    seconds = backlog.seconds
    if backlog.waiting < ALWAYS_ADMITTED or seconds is None or seconds <= bound:
        return
    wait = retry_after_s(seconds, bound)
    raise IngestBusy(
        wait=wait,
        detail=(
            f"The server is busy parsing {backlog.waiting} parts (about {seconds:.0f} s of work) "
            f"and takes no new part for now; try again in {wait} s (nothing of this one was "
            "stored)."
        ),
    )
