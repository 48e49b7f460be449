from django.apps import AppConfig


class SqlConfig(AppConfig):
    name = "profiler_app.sql"
    label = "sql"
