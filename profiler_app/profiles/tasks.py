"""Celery entry points of the read model."""

from celery import shared_task
from celery.signals import worker_ready

from profiler_app.profiles import store_products


@shared_task(acks_late=True, reject_on_worker_lost=True)
def upgrade_stores() -> int:
    """Beat runs this, and each worker once it starts: stores of an older format (or lacking a
    product, such as an index of an older version) are brought up to date."""
    return len(store_products.upgrade_stores())


@worker_ready.connect
def _upgrade_after_deploy(sender, **_kwargs) -> None:
    upgrade_stores.delay()
