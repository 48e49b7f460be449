"""API errors always carry DRF's `detail` and a machine-readable `code`."""

import redis
from boto3.exceptions import Boto3Error
from botocore.exceptions import BotoCoreError, ClientError
from django.db import InterfaceError, OperationalError, connection
from django.http import JsonResponse
from django.views import defaults
from rest_framework.exceptions import APIException
from rest_framework.views import exception_handler as drf_exception_handler

from profiler_app.core.bucket import storage_error
from profiler_app.core.storage import StorageError
from profiler_app.lib.disk import disk_full
from profiler_app.traces.store_layout import StoreAwaitsUpgrade


class StorageUnavailable(APIException):
    status_code = 503
    default_code = "storage_unavailable"


class DiskFull(APIException):
    status_code = 507
    default_code = "disk_full"
    default_detail = (
        "The server's disk is full, so this could not be stored; nothing of it was kept. Free "
        "some space (or ask an administrator to), then send it again."
    )


class AnswerTooLarge(APIException):
    """A download over the server's size limit for it (the message names the setting)."""

    status_code = 413
    default_code = "answer_too_large"


def size_text(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB" if n_bytes >= 2**20 else f"{n_bytes:,} bytes"


class BrokerUnavailable(APIException):
    status_code = 503
    default_code = "broker_unavailable"
    default_detail = "Redis (the task queue and cache) is unreachable just now; try again shortly."


class DatabaseUnavailable(APIException):
    status_code = 503
    default_code = "database_unavailable"
    default_detail = "The database is unreachable just now; try again shortly."


class StoreUpgrading(APIException):
    """A part's store of an older format lacks what the page reads until the store sweep adds
    it (a reader never writes a store)."""

    status_code = 503
    default_code = "store_awaits_upgrade"


def exception_handler(exc, context):
    if isinstance(exc, StoreAwaitsUpgrade):
        exc = StoreUpgrading(str(exc))
    elif isinstance(exc, StorageError):  # the bucket refused or is out of reach: try later
        exc = StorageUnavailable(str(exc))
    elif isinstance(exc, BotoCoreError | ClientError | Boto3Error):  # a raw upload's request
        exc = StorageUnavailable(str(storage_error(exc)))
    elif disk_full(exc):  # the data directory's disk: what the request wrote is gone again
        exc = DiskFull()
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
