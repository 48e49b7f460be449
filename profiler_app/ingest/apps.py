from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "profiler_app.ingest"
    label = "ingest"
