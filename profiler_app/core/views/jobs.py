"""Training jobs and their parts."""

from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.http import FileResponse, Http404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import (
    NotFound,
    ValidationError,
)
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from profiler_app.core import logic
from profiler_app.core.admission import refuse_when_backlogged
from profiler_app.core.filters import JobFilter
from profiler_app.core.models import (
    Node,
    ProfilePart,
    TrainingJob,
    Upload,
)
from profiler_app.core.parsers import StrictJSONParser
from profiler_app.core.permissions import (
    IsOwnerOrStaffOrReadOnly,
    JobPermission,
)
from profiler_app.core.serializers import (
    DeletedJobSerializer,
    PartUploadSerializer,
    ProfilePartSerializer,
    TrainingJobSerializer,
    UploadsEndedSerializer,
    UploadSerializer,
    UploadStartSerializer,
)
from profiler_app.core.throttles import ReprocessThrottle
from profiler_app.core.views.errors import Conflict, refuse_oversized


class TrainingJobViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Training jobs are shared by the whole team: every signed-in user sees every job; its
    owner or staff change it, add parts to it and delete it."""

    serializer_class = TrainingJobSerializer
    permission_classes = [JobPermission]
    filterset_class = JobFilter
    ordering_fields = ["created_at", "name", "status", "state", "size_bytes", "parts_total"]
    ordering = ["-created_at", "-id"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return (
            TrainingJob.objects.select_related("owner")
            .prefetch_related(
                Prefetch("nodes", queryset=Node.objects.order_by("name")),
                Prefetch(
                    "parts",
                    queryset=ProfilePart.objects.exclude(warning="").order_by("id"),
                    to_attr="warned_parts",
                ),
            )
            .with_part_counts()
            .with_window_of(self.request.user)
        )

    def perform_update(self, serializer):
        # A teammate's PATCH holds the window alone (``JobPermission``): the job stays as it is.
        window = serializer.validated_data.pop("window", None)
        status = serializer.validated_data.get("status")
        if status is not None:
            serializer.validated_data.update(
                logic.with_status(serializer.instance, status, serializer.validated_data)
            )
        job = serializer.save() if serializer.validated_data else serializer.instance
        if window is not None:
            logic.choose_window(self.request.user, job, window)
            job.viewer_window = window

    @extend_schema(responses={200: TrainingJobSerializer, 410: DeletedJobSerializer})
    def retrieve(self, request, *args, **kwargs):
        """The job; 410 Gone, saying who deleted it and when, for a job deleted since."""
        try:
            return super().retrieve(request, *args, **kwargs)
        except Http404:
            gone = logic.deleted_job(self.kwargs["pk"])
            if gone is None:
                raise
            return Response(DeletedJobSerializer(gone).data, status=status.HTTP_410_GONE)

    @extend_schema(responses={204: None})
    def destroy(self, request, *args, **kwargs):
        """Deletes the job with its parts and every file of it on the server's disk."""
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance):
        logic.delete_job(instance, self.request.user)

    def perform_create(self, serializer):
        # Ranks of one job start together and race to create it; the loser gets the same 400 the
        # unique-name check gives, so the collector looks the job up instead of losing its parts.
        try:
            with transaction.atomic():
                serializer.save(owner=self.request.user)
        except IntegrityError as exc:
            if TrainingJob.objects.filter(name=serializer.validated_data["name"]).exists():
                raise ValidationError(
                    {"name": ["training job with this name already exists."]}
                ) from exc
            raise

    @extend_schema(methods=["GET"], responses=ProfilePartSerializer(many=True))
    @extend_schema(
        methods=["POST"],
        request=PartUploadSerializer,
        # 200: this content was already uploaded to the job (the stored part).
        # 429: the workers are far behind (core.admission): send again after Retry-After.
        # 503: the bucket is out of reach; 507: the server's disk is full (nothing is kept).
        responses={
            202: ProfilePartSerializer,
            200: ProfilePartSerializer,
            413: None,
            429: None,
            503: None,
            507: None,
        },
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path="parts",
        parser_classes=[MultiPartParser, StrictJSONParser],
        filter_backends=[],
    )
    def parts(self, request, pk=None):
        job = self.get_object()
        if request.method == "GET":
            parts = job.parts.select_related("node").order_by("created_at", "id")
            page = self.paginate_queryset(parts)
            return self.get_paginated_response(ProfilePartSerializer(page, many=True).data)
        refuse_oversized(int(request.META.get("CONTENT_LENGTH") or 0))
        refuse_when_backlogged()  # before the body is read: a refusal costs the web nothing
        data = PartUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        upload = fields["file"]
        refuse_oversized(upload.size)
        source = logic.PartSource(
            node_name=fields["node"],
            rank=fields["rank"],
            kind=fields["kind"],
            original_name=upload.name,
            pid=fields.get("pid"),
            hostname=fields.get("hostname", ""),
        )
        part, created = logic.store_part(job, source, upload)
        code = status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK
        return Response(ProfilePartSerializer(part).data, status=code)

    @extend_schema(
        request=UploadStartSerializer, responses={201: UploadSerializer, 413: None, 429: None}
    )
    @action(detail=True, methods=["post"], url_path="uploads")
    def start_upload(self, request, pk=None):
        job = self.get_object()
        data = UploadStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        refuse_oversized(fields["size_bytes"])
        refuse_when_backlogged()  # at the start: bytes already sent are never refused
        upload = Upload.objects.create(
            job=job,
            owner=request.user,
            node_name=fields["node"],
            hostname=fields.get("hostname", ""),
            rank=fields["rank"],
            pid=fields.get("pid"),
            kind=fields["kind"],
            original_name=fields["filename"],
            size_bytes=fields["size_bytes"],
        )
        return Response(UploadSerializer(upload).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: UploadsEndedSerializer})
    @action(detail=True, methods=["post"], url_path="uploads/finish")
    def finish_uploads(self, request, pk=None):
        """Ends the job's stopped uploads: those whose every byte arrived become parts, the
        others are dropped; a job still marked In Progress becomes Completed."""
        ended = logic.finish_uploads(self.get_object())
        return Response(UploadsEndedSerializer(ended).data)

    @extend_schema(request=None, responses={200: UploadsEndedSerializer})
    @action(detail=True, methods=["post"], url_path="uploads/abandon")
    def abandon_uploads(self, request, pk=None):
        """Deletes what arrived of the job's unfinished uploads; a job still marked In Progress
        becomes Stopped."""
        ended = logic.abandon_uploads(self.get_object())
        return Response(UploadsEndedSerializer(ended).data)


RAW_FILE_GONE = (
    "The raw file of this part is no longer stored (the server's raw-upload retention removes "
    "the uploaded files of parsed parts after some days; the parsed data stays). Upload the "
    "file again to parse it anew."
)


class ProfilePartViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ProfilePartSerializer
    permission_classes = [IsOwnerOrStaffOrReadOnly]
    queryset = ProfilePart.objects.select_related("node", "job").order_by("id")

    @extend_schema(request=None, responses={202: ProfilePartSerializer, 409: None})
    @action(detail=True, methods=["post"], throttle_classes=[ReprocessThrottle])
    def reprocess(self, request, pk=None):
        part = self.get_object()
        if not part.file or not part.file.storage.exists(part.file.name):
            raise Conflict(RAW_FILE_GONE, code="raw_file_gone")
        logic.reset_part_for_reprocess(part)
        part.refresh_from_db()
        return Response(ProfilePartSerializer(part).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    @action(detail=True, methods=["get"])
    def download(self, request, pk=None):
        part = self.get_object()
        if not part.file or not part.file.storage.exists(part.file.name):
            raise NotFound(RAW_FILE_GONE, code="raw_file_gone")
        return FileResponse(part.file.open("rb"), as_attachment=True, filename=part.original_name)
