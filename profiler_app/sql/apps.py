from django.apps import AppConfig


class SqlConfig(AppConfig):
    name = "profiler_app.sql"
    label = "sql"

    def ready(self) -> None:
        from profiler_app.profiles.signals import store_written
        from profiler_app.sql import logic

        store_written.connect(logic.on_store_written, dispatch_uid="sql-event-totals")
