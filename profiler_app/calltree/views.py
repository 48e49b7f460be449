"""Call tree API: one part's host threads as a tree of frames, and where a frame occurs."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from profiler_app.calltree import queries
from profiler_app.calltree.serializers import (
    CallTreeOccurrencesQuerySerializer,
    CallTreeOccurrencesSerializer,
    CallTreeQuerySerializer,
    CallTreeSerializer,
)
from profiler_app.core.models import TrainingJob
from profiler_app.core.query import query_params


def _answer(compute):
    try:
        return compute()
    except queries.UnknownPart as exc:
        raise ValidationError({"part": f"No parsed part {exc.args[0]} in this job."}) from None
    except queries.UnknownRank as exc:
        rank, node = exc.args
        where = f" on node {node!r}" if node else ""
        raise ValidationError({"rank": f"No parsed part of rank {rank}{where}."}) from None
    except queries.UnknownThreads as exc:
        listed = ", ".join(map(str, exc.args[0]))
        raise ValidationError({"threads": f"No host thread {listed} in this part."}) from None


@extend_schema(parameters=[CallTreeQuerySerializer], responses=CallTreeSerializer)
@api_view(["GET"])
def calltree_view(request, job_id: int):
    """The call tree of one part's host threads, or of one process's parts summed, in the
    caller's window of the job, top-down or bottom-up."""
    job = get_object_or_404(TrainingJob, pk=job_id)  # the team shares every job
    window = job.window_for(request.user)
    p = query_params(CallTreeQuerySerializer, request)
    body = _answer(
        lambda: queries.tree(
            job,
            window,
            p.get("part"),
            p.get("threads"),
            p["inverted"],
            p["min_ns"],
            p.get("rank"),
            p.get("node"),
        )
    )
    return Response(CallTreeSerializer(body).data)


@extend_schema(
    parameters=[CallTreeOccurrencesQuerySerializer], responses=CallTreeOccurrencesSerializer
)
@api_view(["GET"])
def occurrences_view(request, job_id: int):
    """The events at one frame of the tree, in time order, each with its timeline link."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    window = job.window_for(request.user)
    p = query_params(CallTreeOccurrencesQuerySerializer, request)
    body = _answer(
        lambda: queries.occurrences(
            job,
            window,
            p.get("part"),
            p.get("threads"),
            p["inverted"],
            p["path"],
            p["limit"],
            p.get("rank"),
            p.get("node"),
        )
    )
    return Response(CallTreeOccurrencesSerializer(body).data)
