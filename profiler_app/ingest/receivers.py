"""A part's timeline store goes with its part; a job's stores folder with the job. Removed once
the deletion commits, whichever way the rows went (the API, the admin, a cascade). A parse of
the part still running meanwhile removes what it was writing itself (``storage.discard_store``)."""

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from profiler_app.core import storage
from profiler_app.core.models import ProfilePart, TrainingJob


@receiver(post_delete, sender=ProfilePart, dispatch_uid="ingest-part-store")
def remove_store(sender, instance: ProfilePart, **kwargs) -> None:
    job_id, part_id = instance.job_id, instance.pk
    transaction.on_commit(lambda: storage.remove_part_stores(job_id, part_id))


@receiver(post_delete, sender=TrainingJob, dispatch_uid="ingest-job-stores")
def remove_stores(sender, instance: TrainingJob, **kwargs) -> None:
    job_id = instance.pk
    transaction.on_commit(lambda: storage.remove_job_stores(job_id))
