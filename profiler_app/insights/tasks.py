"""Celery entry point of the insights (default queue)."""

from celery import shared_task

from profiler_app.insights import logic


@shared_task(acks_late=True, reject_on_worker_lost=True)
def run_insights(job_id: int, generation: int | None = None, window: str | None = None) -> None:
    """Run the rules and analyses of a job in ``window`` (None, as in messages queued before
    windows were per viewer: the job's own), if a run is queued (requests merge into one; a
    message queued before they did names a generation)."""
    logic.compute(job_id, generation, window)


@shared_task(acks_late=False)
def prepare_rank(job_id: int, rank: int, window: str | None = None) -> None:
    """Read a rank of a job for its insights once its parts are parsed, in ``window`` (None:
    both; routed where parses run; lost with its worker, the insights run reads the rank
    itself)."""
    logic.prepare_rank(job_id, rank, window)


@shared_task(acks_late=False)
def queue_missing_insights() -> int:
    """Beat runs this every INGEST_SWEEP_SECONDS: jobs parsed before insights existed get
    them, and runs whose task was lost are queued again."""
    return len(logic.queue_missing()) + len(logic.requeue_lost())
