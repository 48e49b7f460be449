from django.apps import AppConfig


class HistoryConfig(AppConfig):
    name = "profiler_app.history"
    label = "history"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from profiler_app.core.models import TrainingJob
        from profiler_app.history import logic
        from profiler_app.history.models import SeriesRun
        from profiler_app.profiles.signals import part_parsed

        part_parsed.connect(logic.on_part_parsed, dispatch_uid="history-part")
        post_save.connect(logic.on_job_saved, sender=TrainingJob, dispatch_uid="history-job")
        post_delete.connect(logic.on_run_deleted, sender=SeriesRun, dispatch_uid="history-run")
