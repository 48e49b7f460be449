from django.conf import settings
from django.db import models
from django.utils import timezone

from profiler_app.core.models import TrainingJob


class CustomHistogram(models.Model):
    """A histogram of one annotation's durations that a user added to a job's dashboard."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    annotation_name = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "job", "annotation_name"], name="histogram_once_per_user_job"
            )
        ]
        indexes = [
            # The dashboard lists one user's histograms of one job.
            models.Index(fields=["user", "job"], name="histogram_user_job_idx"),
        ]
