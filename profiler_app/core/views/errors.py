"""The answers the core API gives beyond DRF's own."""

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import (
    APIException,
)


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def refuse_oversized(size: int) -> None:
    limit = settings.PROFILE_UPLOAD_MAX_BYTES
    if size > limit:
        raise PayloadTooLarge(
            f"The file is {size:,} bytes; this server accepts profile files up to {limit:,} bytes "
            "(PROFILE_UPLOAD_MAX_BYTES)."
        )
