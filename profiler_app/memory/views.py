from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.memory import queries
from profiler_app.memory.serializers import MemoryEventsSerializer, MemorySerializer
from profiler_app.traces.memory import EventFilter, parse_device

MAX_LIMIT = 1000


def _integer(request, name: str, default: int | None = None, minimum: int | None = None):
    text = request.query_params.get(name, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValidationError({name: "Give a whole number."}) from None
    if minimum is not None and value < minimum:
        raise ValidationError({name: f"Give a number of at least {minimum}."})
    return value


@extend_schema(
    parameters=[
        OpenApiParameter("part", int, description="the part drawn; left out: the highest peak"),
        OpenApiParameter("node", int, description="the node whose NVML samples are drawn"),
    ],
    responses=MemorySerializer,
)
@api_view(["GET"])
def memory_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    return Response(queries.overview(job, _integer(request, "part"), _integer(request, "node")))


@extend_schema(
    parameters=[
        OpenApiParameter("part", int, description="left out: the part with the highest peak"),
        OpenApiParameter("min_bytes", int, description="only events of at least this size"),
        OpenApiParameter("start_ns", int, description="only events at or after (unix ns)"),
        OpenApiParameter("end_ns", int, description="only events at or before (unix ns)"),
        OpenApiParameter("device", str, description='"CPU" or "GPU <index>"'),
        OpenApiParameter("offset", int),
        OpenApiParameter("limit", int, description=f"at most {MAX_LIMIT}"),
    ],
    responses=MemoryEventsSerializer,
)
@api_view(["GET"])
def memory_events_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    device = None
    label = request.query_params.get("device", "")
    if label:
        device = parse_device(label)
        if device is None:
            raise ValidationError({"device": 'Give "CPU" or "GPU <index>", e.g. "GPU 0".'})
    start, end = _integer(request, "start_ns"), _integer(request, "end_ns")
    if start is not None and end is not None and end < start:
        raise ValidationError({"end_ns": "The end is before the start."})
    where = EventFilter(_integer(request, "min_bytes", 0, minimum=0), start, end, device)
    offset = _integer(request, "offset", 0, minimum=0)
    limit = _integer(request, "limit", 100, minimum=1)
    if limit > MAX_LIMIT:
        raise ValidationError({"limit": f"Give at most {MAX_LIMIT}."})
    return Response(queries.events(job, _integer(request, "part"), where, offset, limit))
