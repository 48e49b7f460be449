"""Read API over a job's aggregates: what arrived so far, its GPU kernels, what profiling cost."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.core.query import query_params
from profiler_app.profiles import figures, queries
from profiler_app.profiles.serializers import (
    GlossarySerializer,
    JobCaptureSerializer,
    JobKernelsSerializer,
    JobSummarySerializer,
    KernelQuerySerializer,
)


@extend_schema(responses=JobSummarySerializer)
@api_view(["GET"])
def job_summary(request, job_id: int):
    """Event counts per category, time span, ranks, nodes and parts by state (all ranks)."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    return Response(JobSummarySerializer(queries.job_summary(job)).data)


@extend_schema(responses=JobCaptureSerializer)
@api_view(["GET"])
def job_capture(request, job_id: int):
    """What profiling cost the training and which steps it captured, as the collector reported
    it per process, with the job's totals."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    return Response(JobCaptureSerializer(queries.capture(job)).data)


@extend_schema(parameters=[KernelQuerySerializer], responses=JobKernelsSerializer)
@api_view(["GET"])
def job_kernels(request, job_id: int):
    """Per GPU operation name (kernels, copies, sets) in the caller's window of the job, all ranks combined
    unless ``rank`` or ``node`` narrows it; with the job's totals."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    body = {
        "window": figures.window_info(job, window),
        "totals": figures.gpu_totals(job, window),
        "kernels": queries.job_kernels(job, window, **query_params(KernelQuerySerializer, request)),
    }
    return Response(JobKernelsSerializer(body).data)


@extend_schema(responses=GlossarySerializer)
@api_view(["GET"])
def glossary(request):
    """What each figure the pages show means, and the windows they cover."""
    return Response(GlossarySerializer(figures.glossary()).data)
