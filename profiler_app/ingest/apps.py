from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "profiler_app.ingest"
    label = "ingest"

    def ready(self) -> None:
        import profiler_app.ingest.receivers  # noqa: F401  (connects them)
