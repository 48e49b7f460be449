"""Resumable uploads."""

import re

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import (
    ValidationError,
)
from rest_framework.parsers import FileUploadParser
from rest_framework.response import Response

from profiler_app.core import logic
from profiler_app.core.models import (
    Upload,
)
from profiler_app.core.permissions import (
    IsOwnerOrStaffOrReadOnly,
)
from profiler_app.core.serializers import (
    ProfilePartSerializer,
    UploadSerializer,
)
from profiler_app.core.views.errors import Conflict

CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+)$")


class UploadViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Resumable uploads: GET tells how many bytes arrived, PUT appends a range, complete stores,
    DELETE cancels."""

    serializer_class = UploadSerializer
    parser_classes = [FileUploadParser]
    # Only on a job its sender may still change (they could when they started it).
    permission_classes = [IsOwnerOrStaffOrReadOnly]

    def get_queryset(self):
        return Upload.objects.filter(owner_id=self.request.user.pk)

    @extend_schema(
        request={"application/octet-stream": bytes},
        parameters=[
            OpenApiParameter(
                "Content-Range",
                location="header",
                required=True,
                description="bytes START-END/TOTAL",
            )
        ],
        responses={200: UploadSerializer, 409: None, 503: None, 507: None},
    )
    def update(self, request, pk=None):
        upload = self.get_object()
        match = CONTENT_RANGE.match(request.headers.get("Content-Range", ""))
        if match is None:
            raise ValidationError({"detail": "Send a Content-Range header: bytes START-END/TOTAL."})
        start, end, total = (int(g) for g in match.groups())
        if total != upload.size_bytes or end < start:
            raise ValidationError(
                {"detail": f"The range must lie within the declared size {upload.size_bytes}."}
            )
        length = end - start + 1
        if int(request.META.get("CONTENT_LENGTH") or 0) != length:
            raise ValidationError({"detail": "Content-Length must equal the range's length."})
        try:
            logic.append_to_upload(upload, start, request._request, length)
        except logic.UploadRangeError as err:
            raise Conflict(str(err)) from None
        return Response(UploadSerializer(upload).data)

    @extend_schema(
        request=None,
        responses={
            202: ProfilePartSerializer,
            200: ProfilePartSerializer,
            409: None,
            503: None,
            507: None,
        },
    )
    @action(detail=True, methods=["post"])
    def complete(self, request, pk=None):
        upload = self.get_object()
        try:
            part, created = logic.complete_upload(upload)
        except logic.UploadRangeError as err:
            raise Conflict(str(err)) from None
        code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
        return Response(ProfilePartSerializer(part).data, status=code)

    # 503: the bucket holding the bytes sent so far is out of reach (nothing is removed).
    @extend_schema(responses={204: None, 503: None})
    def destroy(self, request, pk=None):
        """Cancels the upload: the bytes sent so far are removed and no part is stored."""
        logic.abandon_upload(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
