"""Celery entry point of the ingest (queue "ingest", routed in settings.CELERY_TASK_ROUTES)."""

import uuid

from celery import shared_task
from celery.signals import worker_process_init
from django.conf import settings

from profiler_app.ingest import logic
from profiler_app.lib.memory import limit_memory
from profiler_app.profiles.signals import part_parsed


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def ingest_part(self, part_id: int) -> None:
    """Parse one uploaded part; a worker killed mid-parse gets the task redelivered."""
    task_id = self.request.id or f"direct-{uuid.uuid4()}"
    if logic.claim(part_id, task_id) and logic.parse_claimed_part(part_id, task_id):
        part_parsed.send(sender=ingest_part, part_id=part_id)


@shared_task(acks_late=False)
def sweep_unfinished_parts() -> int:
    """Beat runs this every INGEST_SWEEP_SECONDS: parts whose task was lost are queued again."""
    return len(logic.sweep_unfinished())


@worker_process_init.connect
def _limit_memory(**_kwargs) -> None:
    """Each pool process gets the ceiling: a part that needs more fails, the worker lives."""
    limit_memory(settings.WORKER_MEMORY_LIMIT_MB)
