import logging

from celery import shared_task

from profiler_app.core import logic
from profiler_app.core.models import AppSettings

log = logging.getLogger(__name__)


@shared_task
def check_idle_shutdown() -> bool:
    """Beat runs this every minute; past the idle threshold it asks the app to stop cleanly."""
    current = AppSettings.load()
    if not current.should_shut_down():
        return False
    hours = current.idle_for().total_seconds() / 3600
    reason = (
        f"no user activity for {hours:.2f} h (threshold {current.auto_shutdown_hours:g} h); "
        "shutting down"
    )
    log.warning("Idle auto-shutdown: %s", reason)
    logic.request_shutdown(reason)
    return True


@shared_task(acks_late=False)
def run_demo_job(server_url: str, token: str, job_name: str) -> int:
    """Trains the example CNN with the collector on; it uploads like any training job."""
    from profiler_app.core import demo

    return demo.run_example(server_url, token, job_name).returncode
