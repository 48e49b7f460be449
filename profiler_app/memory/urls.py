from django.urls import path

from profiler_app.memory import views

urlpatterns = [
    path("jobs/<int:job_id>/memory/", views.memory_view, name="memory"),
    path("jobs/<int:job_id>/memory/events/", views.memory_events_view, name="memory-events"),
]
