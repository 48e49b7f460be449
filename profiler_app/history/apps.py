from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "profiler_app.history"
    label = "history"

    def ready(self) -> None:
        from profiler_app.history import logic
        from profiler_app.ingest.signals import part_parsed

        part_parsed.connect(logic.on_part_parsed, dispatch_uid="history-part")
