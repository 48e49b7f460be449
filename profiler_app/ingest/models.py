"""The ingest's own table: which task holds a part's claim. The rows it writes are the read
model's (``profiler_app.profiles.models``)."""

from django.db import models

from profiler_app.core.models import ProfilePart


class IngestRun(models.Model):
    """The Celery task that holds a part's claim; a redelivered task (same id) may resume it."""

    part = models.OneToOneField(ProfilePart, on_delete=models.CASCADE, related_name="ingest_run")
    task_id = models.CharField(max_length=255)
    claimed_at = models.DateTimeField()
