from django.urls import path

from profiler_app.insights import views

urlpatterns = [
    path("jobs/<int:job_id>/insights/", views.insights_view, name="insights"),
    path(
        "jobs/<int:job_id>/insights/parameters/",
        views.parameters_view,
        name="insights-parameters",
    ),
    path("jobs/<int:job_id>/insights/report.html", views.report_html_view, name="insights-report"),
    path("jobs/<int:job_id>/analyses/", views.analyses_view, name="analyses"),
]
