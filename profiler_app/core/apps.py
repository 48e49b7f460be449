from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "profiler_app.core"
    label = "core"
    verbose_name = "Profiler"
