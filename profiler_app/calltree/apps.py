from django.apps import AppConfig


class CalltreeConfig(AppConfig):
    name = "profiler_app.calltree"
    label = "calltree"
