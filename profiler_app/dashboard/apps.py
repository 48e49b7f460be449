from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "profiler_app.dashboard"
    label = "dashboard"
