import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready

from profiler_app.core import health, logic, retention, shutdown_request
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
    shutdown_request.request_shutdown(reason)
    return True


@shared_task(acks_late=False)
def run_demo_job(server_url: str, user_id: int, job_name: str) -> int:
    """Trains the example CNN with the collector on; it uploads like any training job, with an
    API token of the user's made here (no secret travels in the task message) and revoked after
    the run. The user sees it in their token list meanwhile, named after the job."""
    from django.contrib.auth import get_user_model
    from knox.models import get_token_model

    from profiler_app.core import demo

    if not demo.holds_run(job_name):
        log.warning("Demo job %s no longer holds the demo slot; it does not run.", job_name)
        return -1
    try:
        token, key = get_token_model().objects.create(
            get_user_model().objects.get(pk=user_id),
            expiry=timedelta(seconds=demo.RUNNING_TIMEOUT_SECONDS),
            name=f"Demo job {job_name}",
        )
        try:
            return demo.run_example(server_url, key, job_name).returncode
        finally:
            token.delete()
    finally:
        demo.release_run(job_name)


@shared_task(acks_late=False)
def end_silent_jobs() -> int:
    """Beat runs this every minute: collector jobs whose process died without a final status."""
    return logic.end_silent_jobs()


@shared_task(acks_late=False)
def remove_abandoned_uploads() -> int:
    """Beat runs this every hour: resumable uploads nobody finished."""
    return logic.remove_abandoned_uploads()


@shared_task(acks_late=False)
def apply_retention() -> int:
    """Beat runs this daily: deletes what the Settings page's retention preview lists (raw
    uploads and whole jobs past their day counts; nothing while both are off). Returns the
    bytes freed."""
    plan = retention.apply()
    if plan.jobs or plan.raw_files:
        log.warning(
            "Retention deleted %d jobs and %d raw files (%d bytes)",
            len(plan.jobs),
            len(plan.raw_files),
            plan.total_bytes,
        )
    return plan.total_bytes


@shared_task(acks_late=False)
def record_workers() -> int:
    """Beat runs this every HEALTH_WORKERS_SECONDS: the worker count anonymous health reads."""
    return health.record_workers()


@worker_ready.connect
def _count_workers_at_start(**_kwargs) -> None:
    # The health check would say "no workers" until beat's next run otherwise.
    record_workers.delay()
