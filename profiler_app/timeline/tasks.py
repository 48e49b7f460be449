"""Celery entry points of the timeline."""

from celery import shared_task
from celery.signals import worker_ready

from profiler_app.timeline import logic


@shared_task(acks_late=True, reject_on_worker_lost=True)
def index_missing_parts() -> int:
    """Beat runs this, and each worker once it starts: parts parsed before indexes were built at
    ingest (or with an older index version) get one."""
    return len(logic.index_missing())


@worker_ready.connect
def _index_after_upgrade(sender, **_kwargs) -> None:
    index_missing_parts.delay()
