"""What surrounds the jobs: the loaded profile, the demo, settings, tags, disk use and
retention."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.exceptions import (
    PermissionDenied,
)
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from profiler_app.core import demo, logic, queries, retention, storage
from profiler_app.core.models import (
    AppSettings,
    LoadedProfile,
    TrainingJob,
)
from profiler_app.core.permissions import (
    IsStaff,
    IsStaffOrReadOnly,
)
from profiler_app.core.query import query_params
from profiler_app.core.serializers import (
    AppSettingsSerializer,
    DemoSerializer,
    DiskUseSerializer,
    LoadedProfileSerializer,
    RetentionPreviewQuerySerializer,
    RetentionPreviewSerializer,
    TagCountSerializer,
)
from profiler_app.core.tasks import run_demo_job
from profiler_app.core.throttles import DemoThrottle
from profiler_app.core.views.errors import Conflict


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


class RetentionPreviewView(APIView):
    permission_classes = [IsStaff]
    serializer_class = RetentionPreviewSerializer

    @extend_schema(
        parameters=[RetentionPreviewQuerySerializer], responses=RetentionPreviewSerializer
    )
    def get(self, request):
        """What retention would delete now (the daily task deletes exactly this selection)."""
        query = query_params(RetentionPreviewQuerySerializer, request)
        saved = AppSettings.load()
        days = {
            "raw_days": saved.retention_raw_days,
            "jobs_days": saved.retention_jobs_days,
            **{k.removeprefix("retention_"): v for k, v in query.items()},
        }
        plan = retention.select(days["raw_days"], days["jobs_days"])
        return Response(RetentionPreviewSerializer(plan).data)
