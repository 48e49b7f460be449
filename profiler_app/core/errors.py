"""API errors always carry DRF's `detail` and a machine-readable `code`."""

import redis
from django.db import InterfaceError, OperationalError, connection
from django.http import JsonResponse
from django.views import defaults
from rest_framework.exceptions import APIException
from rest_framework.views import exception_handler as drf_exception_handler

from profiler_app.core.storage import StorageError


class StorageUnavailable(APIException):
    status_code = 503
    default_code = "storage_unavailable"


class BrokerUnavailable(APIException):
    status_code = 503
    default_code = "broker_unavailable"
    default_detail = "Redis (the task queue and cache) is unreachable just now; try again shortly."


class DatabaseUnavailable(APIException):
    status_code = 503
    default_code = "database_unavailable"
    default_detail = "The database is unreachable just now; try again shortly."


def exception_handler(exc, context):
    if isinstance(exc, StorageError):  # the bucket refused or is out of reach: try later
        exc = StorageUnavailable(str(exc))
    elif isinstance(exc, redis.ConnectionError | redis.TimeoutError):  # an outage, not a bug
        exc = BrokerUnavailable()
    elif isinstance(exc, OperationalError | InterfaceError) and not connection.is_usable():
        exc = DatabaseUnavailable()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, dict) and "detail" in data and "code" not in data:
        detail = data["detail"]
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        data["code"] = code
    return response


def not_found(request, exception):
    """Django's 404 for a URL no route matches: JSON like every API error under /api/."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)
