from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "profiler_app.reports"
    label = "reports"
