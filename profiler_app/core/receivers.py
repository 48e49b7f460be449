"""Files of core's rows go with them: raw uploads with their part, unfinished uploads with their
upload, a job's raw folder with the job. Removed once the deletion commits (a deletion that
rolls back keeps them), whichever way the rows went: the API, the admin, a cascade."""

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from profiler_app.core import resumable, storage
from profiler_app.core.models import ProfilePart, TrainingJob, Upload


@receiver(post_delete, sender=ProfilePart, dispatch_uid="core-part-raw-file")
def remove_raw_file(sender, instance: ProfilePart, **kwargs) -> None:
    name = instance.file.name
    if name:
        transaction.on_commit(lambda: storage.remove_raw_file(name))


@receiver(post_delete, sender=Upload, dispatch_uid="core-upload-temp-file")
def remove_upload_file(sender, instance: Upload, **kwargs) -> None:
    upload_id, bucket_key = instance.pk, instance.bucket_key
    transaction.on_commit(lambda: resumable.remove(upload_id, bucket_key))


@receiver(post_delete, sender=TrainingJob, dispatch_uid="core-job-raw-folder")
def remove_raw_folder(sender, instance: TrainingJob, **kwargs) -> None:
    job_id = instance.pk
    transaction.on_commit(lambda: storage.remove_job_raw_files(job_id))
