from django.urls import path

from profiler_app.calltree import views

urlpatterns = [
    path("jobs/<int:job_id>/calltree/", views.calltree_view, name="calltree"),
    path(
        "jobs/<int:job_id>/calltree/occurrences/",
        views.occurrences_view,
        name="calltree-occurrences",
    ),
]
