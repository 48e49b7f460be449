"""Celery entry points of the run history (default queue)."""

from celery import shared_task

from profiler_app.history import logic


@shared_task(acks_late=True, reject_on_worker_lost=True)
def judge_run(job_id: int) -> None:
    """Store a parsed run's figures and its verdict against its baseline."""
    logic.judge_job(job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def judge_series(series_id: int) -> None:
    """Judge a series' runs again, oldest first (its baseline or settings changed)."""
    logic.judge_series(series_id)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def deliver_webhook(self, delivery_id: int) -> None:
    """One attempt at announcing a regression; the next is scheduled with backoff."""
    wait_s = logic.attempt_delivery(delivery_id)
    if wait_s is not None:
        raise self.retry(countdown=wait_s)


@shared_task(acks_late=False)
def queue_missing_verdicts() -> int:
    """Beat runs this every HISTORY_SWEEP_SECONDS: parsed jobs without a current verdict (parsed
    before the run history existed, or whose judging task was lost) are judged."""
    jobs = logic.missing_verdicts()
    for job_id in jobs:
        judge_run.delay(job_id)
    return len(jobs)
