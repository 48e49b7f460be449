from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "profiler_app.core"
    label = "core"
    verbose_name = "Profiler"

    def ready(self) -> None:
        # Every Django process (web, manage.py, the worker itself) gets the configured Celery
        # app as the current one, so shared_task and send_task use its broker and routes.
        import profiler_app.celery  # noqa: F401
        import profiler_app.core.receivers  # noqa: F401  (connects them)
