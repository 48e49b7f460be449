from django.urls import path

from profiler_app.sql import views

urlpatterns = [
    path("jobs/<int:job_id>/sql/", views.query_view, name="sql-query"),
    path("sql/schema/", views.schema_view, name="sql-schema"),
]
