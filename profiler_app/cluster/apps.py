from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "profiler_app.cluster"
    label = "cluster"
