from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "profiler_app.timeline"
    label = "timeline"
