import datetime as dt
import re

import django_filters
from django import forms
from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import Prefetch
from django.http import FileResponse
from django.views.decorators.csrf import ensure_csrf_cookie
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import (
    APIException,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
    Throttled,
    ValidationError,
)
from rest_framework.parsers import FileUploadParser, MultiPartParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from profiler_app.core import demo, health, logic, queries, retention, storage
from profiler_app.core.models import (
    AppSettings,
    JobState,
    LoadedProfile,
    Node,
    ProfilePart,
    TrainingJob,
    Upload,
)
from profiler_app.core.parsers import StrictJSONParser
from profiler_app.core.permissions import (
    IsOwnerOrStaffOrReadOnly,
    IsStaff,
    IsStaffOrReadOnly,
    JobPermission,
)
from profiler_app.core.serializers import (
    AppSettingsSerializer,
    DemoSerializer,
    DiskUseSerializer,
    HealthSerializer,
    LoadedProfileSerializer,
    LoginSerializer,
    PartUploadSerializer,
    ProfilePartSerializer,
    RetentionPreviewSerializer,
    TagCountSerializer,
    TrainingJobSerializer,
    UploadsEndedSerializer,
    UploadSerializer,
    UploadStartSerializer,
    UserSerializer,
    tag_problem,
)
from profiler_app.core.tasks import run_demo_job
from profiler_app.core.throttles import DemoThrottle, ReprocessThrottle, login_refusal


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


@extend_schema(responses={200: HealthSerializer, 503: HealthSerializer})
@api_view(["GET"])
@permission_classes([AllowAny])
def health_view(request):
    """Database and Redis now, the worker count as beat last saw it; staff get the workers
    asked live and the errors spelled out."""
    try:
        detailed = request.user.is_staff
    except (OperationalError, InterfaceError):  # the database is down: that is the report
        detailed = False
    report = health.check(detailed=detailed)
    code = status.HTTP_200_OK if report.ok else status.HTTP_503_SERVICE_UNAVAILABLE
    return Response(report.as_dict(), status=code)


@extend_schema(
    request=LoginSerializer,
    responses={
        200: UserSerializer,
        429: OpenApiResponse(
            description="too many wrong passwords for this account or from this address "
            "(core/throttles.py); Retry-After says when to try again"
        ),
    },
)
@api_view(["POST"])
@permission_classes([AllowAny])
def login_view(request):
    # DRF exempts views from CSRF and checks it only for signed-in sessions; a login form
    # needs the check too, or another site could sign a visitor into an attacker's account.
    SessionAuthentication().enforce_csrf(request)
    data = LoginSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    refused = login_refusal(request, data.validated_data["username"])
    if refused:
        raise Throttled(wait=refused.wait_s, detail=refused.detail)
    user = authenticate(request, **data.validated_data)
    if user is None:
        raise ValidationError({"detail": "Wrong user name or password."}, code="bad_credentials")
    login(request, user)
    return Response(UserSerializer(user).data)


@extend_schema(request=None, responses={204: None})
@api_view(["POST"])
def logout_view(request):
    logout(request)
    return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(responses=UserSerializer)
@api_view(["GET"])
@permission_classes([AllowAny])
@ensure_csrf_cookie
def me_view(request):
    # Anonymous callers get 401 but also the CSRF cookie the login form needs.
    if not request.user.is_authenticated:
        raise NotAuthenticated()
    return Response(UserSerializer(request.user).data)


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, converted to UTC. Postgres refuses offsets beyond ±15:59, and a time
    such as ``9999-12-31T23:59-23:59`` is past the year 9999 in UTC (an OverflowError): both
    are a 400, not a 500."""

    def to_python(self, value):
        try:
            moment = super().to_python(value)
            return None if moment is None else moment.astimezone(dt.UTC)
        except OverflowError as exc:
            raise DjangoValidationError(
                "Enter a date/time between the years 1 and 9999 in UTC.", code="invalid"
            ) from exc


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class TagsField(forms.MultipleChoiceField):
    """Any number of tags (``?tag=a&tag=b``), each of them a well-formed tag."""

    default_error_messages = {
        "invalid_choice": "“%(value)s” is not a tag: use letters, digits and - _ . : only.",
    }

    def valid_value(self, value):
        return tag_problem(value) is None


class TagsFilter(django_filters.MultipleChoiceFilter):
    field_class = TagsField


class JobFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    name = django_filters.CharFilter(field_name="name", lookup_expr="exact")
    status = django_filters.MultipleChoiceFilter(
        choices=JobState.choices,
        method="filter_state",
        label="Jobs in any of these states (as the list shows them); failed includes partly failed",
    )
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lte")
    mine = django_filters.BooleanFilter(method="filter_mine", label="Only my jobs (I own them)")
    tag = TagsFilter(method="filter_tags", label="Jobs that have all of these tags")

    class Meta:
        model = TrainingJob
        fields = ["search", "name", "status", "created_after", "created_before", "mine", "tag"]

    def filter_state(self, queryset, name, value: list[str]):
        states = set(value)
        if JobState.FAILED in states:
            states.add(JobState.PARTIAL)
        return queryset.filter(state__in=sorted(states)) if states else queryset

    def filter_mine(self, queryset, name, value):
        return queryset.filter(owner_id=self.request.user.pk) if value else queryset

    def filter_tags(self, queryset, name, value: list[str]):
        # tags @> ARRAY[...]: the GIN index on tags serves it.
        return queryset.filter(tags__contains=list(value)) if value else queryset


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
        job = serializer.save() if serializer.validated_data else serializer.instance
        if window is not None:
            logic.choose_window(self.request.user, job, window)
            job.viewer_window = window

    @extend_schema(responses={204: None})
    def destroy(self, request, *args, **kwargs):
        """Deletes the job with its parts and every file of it on the server's disk."""
        return super().destroy(request, *args, **kwargs)

    def perform_destroy(self, instance):
        logic.delete_job(instance)

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
        # 503: the bucket is out of reach; 507: the server's disk is full (nothing is kept).
        responses={
            202: ProfilePartSerializer,
            200: ProfilePartSerializer,
            413: None,
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

    @extend_schema(request=UploadStartSerializer, responses={201: UploadSerializer, 413: None})
    @action(detail=True, methods=["post"], url_path="uploads")
    def start_upload(self, request, pk=None):
        job = self.get_object()
        data = UploadStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        refuse_oversized(fields["size_bytes"])
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

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        """Cancels the upload: the bytes sent so far are removed and no part is stored."""
        logic.abandon_upload(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


def loaded_profile_data(loaded: LoadedProfile) -> dict:
    # The job as the job list shows it, counts and its user's window included.
    jobs = TrainingJob.objects.with_part_counts().with_window_of(loaded.user)
    loaded.job = jobs.prefetch_related("nodes").get(pk=loaded.job_id)
    return LoadedProfileSerializer(loaded).data


class LoadedProfileView(APIView):
    serializer_class = LoadedProfileSerializer

    @extend_schema(responses={200: LoadedProfileSerializer, 204: None})
    def get(self, request):
        """The job this user has loaded; 204 (no content, not an error) when none is."""
        loaded = LoadedProfile.objects.filter(user=request.user).first()
        if loaded is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(loaded_profile_data(loaded))

    @extend_schema(request=LoadedProfileSerializer, responses={200: LoadedProfileSerializer})
    def put(self, request):
        data = LoadedProfileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            loaded = logic.load_profile(request.user, data.validated_data["job"])
        except logic.AlreadyLoaded as err:
            raise Conflict(
                f"“{err.job.name}” is already loaded. Unload it first (trash-bin icon), then "
                "load another profile.",
                code="already_loaded",
            ) from None
        return Response(loaded_profile_data(loaded))

    @extend_schema(responses={204: None})
    def delete(self, request):
        LoadedProfile.objects.filter(user=request.user).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class DemoView(APIView):
    """Offers a demo job on a fresh server: the example script trains and uploads for real."""

    serializer_class = DemoSerializer

    def get_throttles(self):
        return [DemoThrottle()] if self.request.method == "POST" else []

    @extend_schema(responses=DemoSerializer)
    def get(self, request):
        found = demo.availability(request.user)
        return Response({"available": found.available, "reason": found.reason, "job_name": ""})

    @extend_schema(request=None, responses={202: DemoSerializer, 409: None})
    def post(self, request):
        found = demo.availability(request.user)
        if found.forbidden:
            raise PermissionDenied(found.reason, code="demo_forbidden")
        if not found.available:
            raise Conflict(found.reason, code="demo_unavailable")
        job_name = demo.demo_job_name()
        if not demo.claim_run(job_name):
            raise Conflict("A demo job is running; one runs at a time.", code="demo_unavailable")
        server_url = request.build_absolute_uri("/").rstrip("/")
        run_demo_job.delay(server_url, request.user.pk, job_name)
        return Response(
            {"available": True, "reason": "", "job_name": job_name},
            status=status.HTTP_202_ACCEPTED,
        )


class AppSettingsView(APIView):
    permission_classes = [IsAuthenticated, IsStaffOrReadOnly]
    serializer_class = AppSettingsSerializer

    @extend_schema(responses=AppSettingsSerializer)
    def get(self, request):
        return Response(AppSettingsSerializer(AppSettings.load()).data)

    @extend_schema(request=AppSettingsSerializer, responses=AppSettingsSerializer)
    def put(self, request):
        data = AppSettingsSerializer(AppSettings.load(), data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        data.save()
        return Response(data.data)


@extend_schema(responses=TagCountSerializer(many=True))
@api_view(["GET"])
def tags_view(request):
    """The tags jobs carry, most used first, with how many jobs carry each (the tag filter)."""
    return Response(TagCountSerializer(queries.tags_in_use(), many=True).data)


class DiskUseView(APIView):
    serializer_class = DiskUseSerializer

    @extend_schema(responses=DiskUseSerializer)
    def get(self, request):
        """What the data directory holds (raw uploads, timeline stores, unfinished uploads) and
        the free space on its disk."""
        return Response(DiskUseSerializer(storage.disk_use()).data)


def retention_days(request, name: str, saved: int | None) -> int | None:
    """A day count from the query (empty: off), else the saved one."""
    if name not in request.query_params:
        return saved
    value = request.query_params[name].strip()
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= 36_500:
        raise ValidationError({name: ["Enter a whole number of days from 1 to 36500, or nothing."]})
    return int(value)


class RetentionPreviewView(APIView):
    permission_classes = [IsStaff]
    serializer_class = RetentionPreviewSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                name,
                str,
                required=False,
                description="Preview this number of days instead of the saved one (empty: off).",
            )
            for name in ("retention_raw_days", "retention_jobs_days")
        ],
        responses=RetentionPreviewSerializer,
    )
    def get(self, request):
        """What retention would delete now (the daily task deletes exactly this selection)."""
        saved = AppSettings.load()
        plan = retention.select(
            retention_days(request, "retention_raw_days", saved.retention_raw_days),
            retention_days(request, "retention_jobs_days", saved.retention_jobs_days),
        )
        return Response(RetentionPreviewSerializer(plan).data)
