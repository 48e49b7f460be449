"""Timeline API: the track tree, viewport queries (binary), search, event details, range totals,
export."""

import gzip
import time

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import (
    api_view,
    content_negotiation_class,
    renderer_classes,
    throttle_classes,
)
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.response import Response

from profiler_app.core.errors import AnswerTooLarge, size_text
from profiler_app.core.models import TrainingJob
from profiler_app.core.negotiation import JsonErrors
from profiler_app.core.query import query_params
from profiler_app.core.throttles import ExportThrottle
from profiler_app.lib.filenames import attachment
from profiler_app.lib.renderers import FastJSONRenderer
from profiler_app.timeline import logic
from profiler_app.timeline.pure import payload
from profiler_app.timeline.pure.details import UnknownEvent, event_details
from profiler_app.timeline.pure.export import chrome_trace, least_bytes
from profiler_app.timeline.pure.query import UnknownTrack
from profiler_app.timeline.pure.ranges import event_lanes, range_events, range_totals
from profiler_app.timeline.pure.search import search
from profiler_app.timeline.pure.viewport import Window
from profiler_app.timeline.serializers import (
    EventDetailsSerializer,
    EventQuerySerializer,
    ExportQuerySerializer,
    RangeEventsQuerySerializer,
    RangeEventsSerializer,
    RangeQuerySerializer,
    RangeTotalsSerializer,
    SearchQuerySerializer,
    SearchResultSerializer,
    TimelineTracksSerializer,
    TrackChildrenQuerySerializer,
    TrackChildrenSerializer,
    ViewportQuerySerializer,
)

# Worth compressing: viewport payloads shrink five to ten times at the fastest level.
GZIP_MIN_BYTES = 4096


def _job(job_id: int) -> TrainingJob:
    """Every signed-in user sees every job (the team shares them)."""
    return get_object_or_404(TrainingJob, pk=job_id)


class TimelineNotReady(APIException):
    status_code = 503
    default_code = "timeline_not_ready"
    default_detail = (
        "This job's timeline is being prepared (its parts were parsed before timelines were "
        "indexed at parse time); it opens within a few minutes."
    )


def _timeline_of(job: TrainingJob):
    try:
        return logic.job_timeline(job)
    except logic.TimelineNotReady:
        raise TimelineNotReady() from None


def _timeline(job_id: int):
    return _timeline_of(_job(job_id))


@extend_schema(responses=TimelineTracksSerializer)
@api_view(["GET"])
def tracks_view(request, job_id: int):
    """The track tree of the job's processed parts, its time span and its steps. A group of
    more than 200 children comes collapsed (``children_count``): read them from
    tracks/children/."""
    job = _job(job_id)
    timeline = _timeline_of(job)
    parts = [
        {"id": p.id, "node": p.node, "rank": p.rank, "pid": p.pid} for p in timeline.parts.values()
    ]
    body = {
        "job": job_id,
        "origin_ns": str(timeline.origin_ns),
        "start_ns": str(timeline.start_ns),
        "end_ns": str(timeline.end_ns),
        "n_events": timeline.n_events,
        "parts": parts,
        "tracks": timeline.tree(),
        "steps": logic.step_marks(job),
    }
    return Response(TimelineTracksSerializer(body).data)


@extend_schema(parameters=[TrackChildrenQuerySerializer], responses=TrackChildrenSerializer)
@api_view(["GET"])
def track_children_view(request, job_id: int):
    """A page of a group's children, in tree order: how a collapsed group of the tree (one
    with ``children_count``) is read."""
    params = query_params(TrackChildrenQuerySerializer, request)
    try:
        count, children = _timeline(job_id).children(
            params["group"], params["offset"], params["limit"]
        )
    except UnknownTrack as exc:
        raise ValidationError({"group": [f"no track {exc.args[0]!r} in this job"]}) from exc
    body = {"group": params["group"], "count": count, "offset": params["offset"]}
    return Response(TrackChildrenSerializer({**body, "children": children}).data)


@extend_schema(
    parameters=[ViewportQuerySerializer],
    responses={(200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY)},
)
@api_view(["GET"])
def viewport_view(request, job_id: int):
    """What a screen of the timeline draws: per track the events at least a pixel wide and
    merged blocks for the rest, counters per pixel, aggregates of collapsed groups, and the
    launch→run pairs. Binary: see ``profiler_app/timeline/pure/payload.py``."""
    params = query_params(ViewportQuerySerializer, request)
    timeline = _timeline(job_id)
    began = time.perf_counter()
    window = Window.for_view(params["start_ns"], params["end_ns"], params["width_px"])
    ids = [t for t in params["tracks"].split(",") if t]
    try:
        view = timeline.viewport(window, ids, params["width_px"])
    except UnknownTrack as exc:
        raise _unknown_track(exc) from exc
    body = payload.encode(timeline, view)
    query_ms = (time.perf_counter() - began) * 1000
    logic.read_ahead(timeline)
    response = HttpResponse(content_type="application/octet-stream")
    if len(body) >= GZIP_MIN_BYTES and "gzip" in request.headers.get("Accept-Encoding", ""):
        body = gzip.compress(body, compresslevel=1)
        response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["Server-Timing"] = f"query;dur={query_ms:.1f}"
    response.content = body
    return response


@extend_schema(parameters=[SearchQuerySerializer], responses=SearchResultSerializer)
@api_view(["GET"])
def search_view(request, job_id: int):
    """Events whose name contains ``q`` (any case): the earliest ``limit``, and every matching
    name with its count."""
    params = query_params(SearchQuerySerializer, request)
    found = search(_timeline(job_id), params["q"], params["limit"])
    body = {
        "count": found.total,
        "names": [{"name": n, "count": c} for n, c in found.names],
        "results": found.events,
    }
    return Response(SearchResultSerializer(body).data)


@extend_schema(parameters=[EventQuerySerializer], responses=EventDetailsSerializer)
@api_view(["GET"])
def event_view(request, job_id: int):
    """One event with every recorded field, its connected launch or run, and launch latency."""
    params = query_params(EventQuerySerializer, request)
    try:
        details = event_details(_timeline(job_id), params["id"])
    except UnknownEvent as exc:
        raise NotFound(f"No event {params['id']} in this job.") from exc
    return Response(EventDetailsSerializer(details).data)


# What the export streams (profiler_app/timeline/pure/export.py): Chrome's trace-event JSON.
CHROME_TRACE = inline_serializer(
    "ChromeTrace",
    fields={
        "displayTimeUnit": serializers.CharField(),
        "otherData": inline_serializer(
            "ChromeTraceRange",
            fields={
                "origin_ns": serializers.CharField(help_text="ts 0, ns since the unix epoch"),
                "start_ns": serializers.CharField(),
                "end_ns": serializers.CharField(),
            },
        ),
        "traceEvents": serializers.ListField(
            child=serializers.DictField(),
            help_text="Chrome trace events (ph M, X, s, f); ts and dur in µs from origin_ns",
        ),
        "truncated": serializers.BooleanField(
            required=False, help_text="present (true) when the export ended at its size limit"
        ),
        "note": serializers.CharField(required=False, help_text="why the export ended early"),
    },
)


@extend_schema(
    parameters=[ExportQuerySerializer],
    # 413: the range holds more than EXPORT_MAX_MB of events; 503: the timeline is being
    # prepared, or the bucket holding it is out of reach.
    responses={200: CHROME_TRACE, 413: None, 503: None},
)
@api_view(["GET"])
@throttle_classes([ExportThrottle])
@content_negotiation_class(JsonErrors)
def export_view(request, job_id: int):
    """The job, or [start_ns, end_ns) of it, as Chrome-trace JSON (opens in Perfetto), streamed;
    refused (413) when its events alone would pass EXPORT_MAX_MB."""
    params = query_params(ExportQuerySerializer, request)
    job = _job(job_id)
    timeline = _timeline_of(job)
    start, end, limit = params.get("start_ns"), params.get("end_ns"), settings.EXPORT_MAX_BYTES
    events, least = least_bytes(timeline, start, end)
    if least > limit:
        raise AnswerTooLarge(
            f"This export holds {events:,} events, at least {size_text(least)}: over this "
            f"server's limit of {size_text(limit)} (EXPORT_MAX_MB). Export a shorter range "
            "(start_ns and end_ns)."
        )
    chunks = chrome_trace(timeline, start, end, max_bytes=limit)
    response = StreamingHttpResponse(chunks, content_type="application/json")
    response["Content-Disposition"] = attachment(f"{job.name}-timeline.json")
    return response


def _unknown_track(exc: UnknownTrack) -> ValidationError:
    return ValidationError({"tracks": [f"no track {exc.args[0]!r} in this job"]})


@extend_schema(parameters=[RangeQuerySerializer], responses=RangeTotalsSerializer)
@api_view(["GET"])
@renderer_classes([FastJSONRenderer])
def range_view(request, job_id: int):
    """The events of [start_ns, end_ns) on the tracks, per track and name: count, total, self
    time (CPU threads), average, min, max and share of the range. Durations are clipped to the
    range (see ``profiler_app/timeline/pure/ranges.py``)."""
    params = query_params(RangeQuerySerializer, request)
    timeline = _timeline(job_id)
    logic.read_ahead(timeline)
    start, end = params["start_ns"], params["end_ns"]
    try:
        lanes = event_lanes(timeline, params["track_ids"])
        rows = range_totals(timeline, start, end, params["track_ids"])
    except UnknownTrack as exc:
        raise _unknown_track(exc) from exc
    span = end - start
    body = {
        "start_ns": str(start),
        "end_ns": str(end),
        "tracks": [lane.id for lane in lanes],
        "rows": [
            {
                "track": r.track,
                "name": r.name,
                "count": r.count,
                "total_ns": r.total_ns,
                "self_ns": r.self_ns,
                "avg_ns": r.total_ns / r.count,
                "min_ns": r.min_ns,
                "max_ns": r.max_ns,
                "pct_of_range": r.total_ns / span * 100.0,
            }
            for r in rows
        ],
    }
    # Already the schema's types: a serializer's pass over thousands of rows cost more than
    # computing them (2 s of DRF per 40 ranges of a 100M-event job, against 1.7 s of totals).
    return Response(body)


@extend_schema(parameters=[RangeEventsQuerySerializer], responses=RangeEventsSerializer)
@api_view(["GET"])
def range_events_view(request, job_id: int):
    """The events named ``name`` in the range on the tracks (the earliest ``limit``), to
    highlight them."""
    params = query_params(RangeEventsQuerySerializer, request)
    timeline = _timeline(job_id)
    try:
        count, events = range_events(
            timeline,
            params["start_ns"],
            params["end_ns"],
            params["track_ids"],
            params["name"],
            params["limit"],
        )
    except UnknownTrack as exc:
        raise _unknown_track(exc) from exc
    return Response(RangeEventsSerializer({"count": count, "results": events}).data)
