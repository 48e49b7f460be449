from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from profiler_app.cluster import compare, queries
from profiler_app.cluster.serializers import ClusterSerializer, CompareSerializer
from profiler_app.core.models import TrainingJob
from profiler_app.traces.window import WINDOWS


def _integer(request, name: str, required: bool) -> int | None:
    text = request.query_params.get(name, "")
    if not text and not required:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValidationError({name: "Give a whole number."}) from None


@extend_schema(
    parameters=[OpenApiParameter("step", int, description="one step; left out: the mean")],
    responses=ClusterSerializer,
)
@api_view(["GET"])
def cluster_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    step = _integer(request, "step", required=False)
    return Response(queries.cluster(job, job.window_for(request.user), step))


@extend_schema(
    parameters=[
        OpenApiParameter("a", int, required=True, description="the baseline job"),
        OpenApiParameter("b", int, required=True, description="the job compared with it"),
        OpenApiParameter(
            "window",
            str,
            enum=list(WINDOWS),
            description="both jobs' window; left out: the window the caller views job A in",
        ),
    ],
    responses=CompareSerializer,
)
@api_view(["GET"])
def compare_view(request):
    a = get_object_or_404(TrainingJob, pk=_integer(request, "a", required=True))
    b = get_object_or_404(TrainingJob, pk=_integer(request, "b", required=True))
    window = request.query_params.get("window") or a.window_for(request.user)
    if window not in WINDOWS:
        raise ValidationError({"window": f"Use one of {', '.join(WINDOWS)}."})
    return Response(compare.compare(a, b, window))
