from django.urls import path

from profiler_app.cluster import views

urlpatterns = [
    path("jobs/<int:job_id>/cluster/", views.cluster_view, name="cluster"),
    path("compare/", views.compare_view, name="compare"),
]
