from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from profiler_app.cluster import compare, queries
from profiler_app.cluster.serializers import (
    ClusterQuerySerializer,
    ClusterSerializer,
    CompareQuerySerializer,
    CompareSerializer,
)
from profiler_app.core.models import TrainingJob
from profiler_app.core.query import query_params
from profiler_app.profiles import answers


@extend_schema(parameters=[ClusterQuerySerializer], responses=ClusterSerializer)
@api_view(["GET"])
def cluster_view(request, job_id: int):
    job = get_object_or_404(TrainingJob, pk=job_id)
    step = query_params(ClusterQuerySerializer, request).get("step")
    window = job.window_for(request.user)
    key = answers.answer_key(job, window, "cluster", step, queries.waits_stamp(job))
    return answers.response(key, lambda: queries.cluster(job, window, step))


@extend_schema(parameters=[CompareQuerySerializer], responses=CompareSerializer)
@api_view(["GET"])
def compare_view(request):
    query = query_params(CompareQuerySerializer, request)
    a = get_object_or_404(TrainingJob, pk=query["a"])
    b = get_object_or_404(TrainingJob, pk=query["b"])
    return Response(compare.compare(a, b, query.get("window") or a.window_for(request.user)))
