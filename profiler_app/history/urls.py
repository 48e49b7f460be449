from django.urls import path
from rest_framework.routers import DefaultRouter

from profiler_app.history import views

router = DefaultRouter(trailing_slash=True)
router.register("series", views.SeriesViewSet, basename="series")

urlpatterns = [
    path("jobs/<int:job_id>/series/", views.job_series_view, name="job-series"),
    path("jobs/<int:job_id>/verdict/", views.verdict_view, name="job-verdict"),
    path("jobs/<int:job_id>/verdict/check/", views.check_view, name="job-verdict-check"),
    *router.urls,
]
