from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "profiler_app.memory"
    label = "memory"
