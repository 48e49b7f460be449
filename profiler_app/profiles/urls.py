from django.urls import path

from profiler_app.profiles import views

urlpatterns = [
    path("jobs/<int:job_id>/summary/", views.job_summary, name="job-summary"),
    path("jobs/<int:job_id>/kernels/", views.job_kernels, name="job-kernels"),
    path("jobs/<int:job_id>/capture/", views.job_capture, name="job-capture"),
    path("glossary/", views.glossary, name="glossary"),
]
