from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.core.query import query_params
from profiler_app.memory import queries
from profiler_app.memory.serializers import (
    MemoryEventsQuerySerializer,
    MemoryEventsSerializer,
    MemoryQuerySerializer,
    MemorySerializer,
)
from profiler_app.traces.memory import EventFilter


@extend_schema(parameters=[MemoryQuerySerializer], responses=MemorySerializer)
@api_view(["GET"])
def memory_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    query = query_params(MemoryQuerySerializer, request)
    return Response(queries.overview(job, query.get("part"), query.get("node")))


@extend_schema(parameters=[MemoryEventsQuerySerializer], responses=MemoryEventsSerializer)
@api_view(["GET"])
def memory_events_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    query = query_params(MemoryEventsQuerySerializer, request)
    where = EventFilter(
        query["min_bytes"], query.get("start_ns"), query.get("end_ns"), query.get("device")
    )
    return Response(queries.events(job, query.get("part"), where, query["offset"], query["limit"]))
