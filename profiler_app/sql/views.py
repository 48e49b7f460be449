"""SQL console API: one read-only query over a job's events, and the schema it can read."""

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from profiler_app.core.models import TrainingJob
from profiler_app.sql import logic
from profiler_app.sql.pure.console import (
    EXAMPLES,
    SCHEMA,
    QueryFailed,
    QueryRefused,
    QueryTimedOut,
)
from profiler_app.sql.serializers import (
    SqlQuerySerializer,
    SqlResultSerializer,
    SqlSchemaSerializer,
)


class QueryTimeout(APIException):
    # Not 408: browsers send a request that got 408 again, running the query twice.
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "query_timeout"


class ConsoleBusy(APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "console_busy"
    default_detail = "Other queries are running; try again in a few seconds."


class QueryError(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "query_failed"


@extend_schema(
    request=SqlQuerySerializer,
    responses={
        200: SqlResultSerializer,
        400: OpenApiResponse(description="not one SELECT statement, or DuckDB refused it"),
        422: OpenApiResponse(description="the query ran past the time limit (it stopped)"),
    },
)
@api_view(["POST"])
def query_view(request, job_id: int):
    """Runs one read-only SELECT over the job's views (see /api/sql/schema/). Every signed-in
    user may query every job (the team shares them). The rows stream; an answer past
    SQL_MAX_ROWS rows or SQL_MAX_BYTES bytes is cut, and ``truncated_by`` and ``note`` say so."""
    job = get_object_or_404(TrainingJob, pk=job_id)
    params = SqlQuerySerializer(data=request.data)
    params.is_valid(raise_exception=True)
    try:
        answer = logic.query_job(job, params.validated_data["query"])
    except QueryRefused as error:
        raise QueryError(str(error), "query_refused") from None
    except QueryFailed as error:
        raise QueryError(str(error), "query_failed") from None
    except QueryTimedOut as error:
        raise QueryTimeout(str(error)) from None
    except logic.ConsoleBusy:
        raise ConsoleBusy() from None
    return StreamingHttpResponse(answer, content_type="application/json")


@extend_schema(responses=SqlSchemaSerializer)
@api_view(["GET"])
def schema_view(request):
    """The views a query can read, their columns, types and meaning (times in ns)."""
    views = [
        {
            "name": name,
            "description": view["description"],
            "columns": [{"name": c, "type": t, "description": d} for c, t, d in view["columns"]],
        }
        for name, view in SCHEMA.items()
    ]
    limits = logic.limits()
    examples = [{"name": name, "query": query} for name, query in EXAMPLES]
    return Response(
        {
            "views": views,
            "examples": examples,
            "timeout_s": limits.timeout_s,
            "max_rows": limits.max_rows,
            "max_bytes": limits.max_bytes,
        }
    )
