from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "profiler_app.insights"
    # The label the app had as "reports": its tables and migration history keep that name.
    label = "reports"

    def ready(self) -> None:
        from profiler_app.core.signals import job_window_changed
        from profiler_app.insights import logic
        from profiler_app.profiles.signals import part_parsed

        job_window_changed.connect(logic.on_window_changed, dispatch_uid="reports-window")
        part_parsed.connect(logic.on_part_parsed, dispatch_uid="reports-part")
