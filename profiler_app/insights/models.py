"""What the insights task stores per job, and the job's rule parameter overrides."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from profiler_app.core.models import WINDOW_CHOICES, TrainingJob


class InsightsStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class JobInsights(models.Model):
    """The latest ProfilerReport and analyses of one job in one window (the report page is
    rendered from them). The job's own window has a row once it is parsed; the other window
    gets one when a viewer who sees the job in it first asks (``logic.ensure_row``).

    Every request to (re)compute bumps ``generation``; requests merge into one pending run
    (``logic.request_run``), which waits for the parts being parsed: a burst of parts ends in
    one computation, or two when it arrives while one runs.
    """

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="insights")
    window = models.CharField(max_length=16, choices=WINDOW_CHOICES)
    status = models.CharField(
        max_length=16, choices=InsightsStatus.choices, default=InsightsStatus.QUEUED
    )
    generation = models.PositiveIntegerField(default=0)
    requested_at = models.DateTimeField(null=True)
    computed_at = models.DateTimeField(null=True)
    report = models.JSONField(default=dict)
    analyses = models.JSONField(default=dict)
    # Which combination of the ranks' kept facts ``analyses`` holds (``rank_results.KeptJob``):
    # a run that finds the same one does not write them again.
    analyses_key = models.CharField(max_length=32, blank=True, default="")
    error = models.TextField(blank=True)
    # A sign of life: when a queued run is due, stamped every second while it runs. The
    # insights sweep queues again a run queued or running without one for a stall period.
    heartbeat_at = models.DateTimeField(default=timezone.now)
    # Starts of the pending run: more than one means a worker died running it. A run's
    # heartbeat and results go to its own start only (the sweep may have started another).
    attempts = models.PositiveSmallIntegerField(default=0)
    # A queued run with no task: it waits for the job's parts uploaded before it was asked for
    # to be parsed. The last of them sends it (``logic.request_run``); the sweep does when
    # none is left (one failed) or its send was lost.
    waiting_for_parts = models.BooleanField(default=False)

    class Meta:
        constraints = [
            # Also the index of every look-up of a run and of a page: (job, window).
            models.UniqueConstraint(fields=["job", "window"], name="insights_one_per_window"),
        ]
        indexes = [
            # The insights sweep: runs queued or running, oldest sign of life first.
            models.Index(
                fields=["heartbeat_at"],
                condition=models.Q(status__in=["queued", "running"]),
                name="insights_unfinished_idx",
            ),
        ]


class RuleOverrides(models.Model):
    """ProfilerReport-style overrides (``{"CPUBottleneck_threshold": 40}``) of one job."""

    job = models.OneToOneField(TrainingJob, on_delete=models.CASCADE, related_name="rule_overrides")
    params = models.JSONField(default=dict)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)
