from django.urls import path
from rest_framework.routers import DefaultRouter

from profiler_app.core import views

router = DefaultRouter(trailing_slash=True)
router.register("jobs", views.TrainingJobViewSet, basename="job")
router.register("parts", views.ProfilePartViewSet, basename="part")
router.register("uploads", views.UploadViewSet, basename="upload")

urlpatterns = [
    path("health/", views.health_view, name="health"),
    path("auth/login/", views.login_view, name="login"),
    path("auth/logout/", views.logout_view, name="logout"),
    path("auth/me/", views.me_view, name="me"),
    path("loaded-profile/", views.LoadedProfileView.as_view(), name="loaded-profile"),
    path("settings/", views.AppSettingsView.as_view(), name="settings"),
    path("settings/disk-use/", views.DiskUseView.as_view(), name="disk-use"),
    path(
        "settings/retention/preview/",
        views.RetentionPreviewView.as_view(),
        name="retention-preview",
    ),
    path("tags/", views.tags_view, name="tags"),
    path("demo/", views.DemoView.as_view(), name="demo"),
    *router.urls,
]
