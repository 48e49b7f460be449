from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "profiler_app.reports"
    label = "reports"

    def ready(self) -> None:
        from profiler_app.core.signals import job_window_changed
        from profiler_app.profiles.signals import part_parsed
        from profiler_app.reports import logic

        job_window_changed.connect(logic.on_window_changed, dispatch_uid="reports-window")
        part_parsed.connect(logic.on_part_parsed, dispatch_uid="reports-part")
