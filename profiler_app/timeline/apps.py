from django.apps import AppConfig


class TimelineConfig(AppConfig):
    name = "profiler_app.timeline"
    label = "timeline"

    def ready(self) -> None:
        from profiler_app.profiles.signals import store_written
        from profiler_app.timeline import logic

        store_written.connect(logic.on_store_written, dispatch_uid="timeline-index")
