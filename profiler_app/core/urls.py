from django.urls import path
from rest_framework.routers import DefaultRouter

from profiler_app.core.views import jobs, session, uploads, workspace

router = DefaultRouter(trailing_slash=True)
router.register("jobs", jobs.TrainingJobViewSet, basename="job")
router.register("parts", jobs.ProfilePartViewSet, basename="part")
router.register("uploads", uploads.UploadViewSet, basename="upload")

urlpatterns = [
    path("health/", session.health_view, name="health"),
    path("auth/login/", session.login_view, name="login"),
    path("auth/logout/", session.logout_view, name="logout"),
    path("auth/me/", session.me_view, name="me"),
    path("loaded-profile/", workspace.LoadedProfileView.as_view(), name="loaded-profile"),
    path("settings/", workspace.AppSettingsView.as_view(), name="settings"),
    path("settings/disk-use/", workspace.DiskUseView.as_view(), name="disk-use"),
    path(
        "settings/retention/preview/",
        workspace.RetentionPreviewView.as_view(),
        name="retention-preview",
    ),
    path("tags/", workspace.tags_view, name="tags"),
    path("demo/", workspace.DemoView.as_view(), name="demo"),
    *router.urls,
]
