"""Links into the timeline: where a finding, a call-tree node or any page points the user.

Pure: the rules name a ``TimeRange``; the pages turn it into the UI's address."""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import urlencode


class TimeRange(NamedTuple):
    """Where to look on the timeline: ``device`` is a GPU index, -1 for the whole node; a
    trace finding names its ``rank`` and, when it is about one event, that ``event``
    ("<part id>:@<row of the part's store>")."""

    start_ns: int
    end_ns: int
    node: str
    device: int
    rank: int = -1
    event: str = ""


def timeline_url(time_range: TimeRange, base_url: str = "", job_id: int | None = None) -> str:
    """Where the UI's timeline opens on ``time_range``, a little wider so its surroundings
    show, with the rank shown and the event selected when the finding names them."""
    margin = max((time_range.end_ns - time_range.start_ns) // 10, 1_000)
    query: dict[str, Any] = {"t": f"{time_range.start_ns - margin}_{time_range.end_ns + margin}"}
    if time_range.rank >= 0:
        query["ranks"] = time_range.rank
    if time_range.event:
        query["sel"] = time_range.event
    # The job's own address (the UI's /jobs/<id>/<page>); without one, the viewer's loaded job.
    page = "/timeline" if job_id is None else f"/jobs/{job_id}/timeline"
    return f"{base_url.rstrip('/')}{page}?{urlencode(query, safe=':@')}"
