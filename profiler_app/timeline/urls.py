from django.urls import path

from profiler_app.timeline import views

urlpatterns = [
    path("jobs/<int:job_id>/timeline/tracks/", views.tracks_view, name="timeline-tracks"),
    path(
        "jobs/<int:job_id>/timeline/tracks/children/",
        views.track_children_view,
        name="timeline-track-children",
    ),
    path("jobs/<int:job_id>/timeline/viewport/", views.viewport_view, name="timeline-viewport"),
    path("jobs/<int:job_id>/timeline/search/", views.search_view, name="timeline-search"),
    path("jobs/<int:job_id>/timeline/event/", views.event_view, name="timeline-event"),
    path("jobs/<int:job_id>/timeline/range/", views.range_view, name="timeline-range"),
    path(
        "jobs/<int:job_id>/timeline/range/events/",
        views.range_events_view,
        name="timeline-range-events",
    ),
    path("jobs/<int:job_id>/timeline/export/", views.export_view, name="timeline-export"),
]
