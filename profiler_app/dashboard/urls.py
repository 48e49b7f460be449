from django.urls import path
from rest_framework.routers import DefaultRouter

from profiler_app.dashboard import views

router = DefaultRouter()
router.register("histograms", views.CustomHistogramViewSet, basename="histogram")

urlpatterns = [
    path("jobs/<int:job_id>/dashboard/", views.dashboard_view, name="dashboard"),
    path("jobs/<int:job_id>/headline/", views.headline_view, name="headline"),
    path(
        "jobs/<int:job_id>/annotations/durations/",
        views.annotation_durations_view,
        name="annotation-durations",
    ),
    *router.urls,
]
