"""Series of runs (jobs of one model or experiment), each run's verdict, and webhook deliveries."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from profiler_app.core.models import TrainingJob
from profiler_app.history.pure.regression import Thresholds

SERIES_NAME_MAX_CHARS = 255


class Series(models.Model):
    """A model or experiment profiled again and again, with its regression settings."""

    name = models.CharField(max_length=SERIES_NAME_MAX_CHARS, unique=True)
    # Who changes the settings (with staff): the owner of the series' first run.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # None: each run's baseline is the previous run that passed.
    baseline = models.ForeignKey(
        TrainingJob, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    step_threshold_pct = models.FloatField(
        default=Thresholds.step_pct, validators=[MinValueValidator(0), MaxValueValidator(1000)]
    )
    alpha = models.FloatField(
        default=Thresholds.alpha, validators=[MinValueValidator(1e-6), MaxValueValidator(0.5)]
    )
    cause_min_pct = models.FloatField(
        default=Thresholds.cause_pct, validators=[MinValueValidator(0), MaxValueValidator(100)]
    )
    precision_points = models.FloatField(
        default=Thresholds.precision_points,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
    )
    # Posted a small JSON document (Slack-compatible "text") when a run regresses.
    webhook_url = models.URLField(blank=True, max_length=1000)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def thresholds(self, step_pct: float | None = None) -> Thresholds:
        return Thresholds(
            step_pct=self.step_threshold_pct if step_pct is None else step_pct,
            alpha=self.alpha,
            cause_pct=self.cause_min_pct,
            precision_points=self.precision_points,
        )

    def can_change(self, user) -> bool:
        if not (user and user.is_authenticated):
            return False
        return bool(user.is_staff) or (self.owner_id is not None and self.owner_id == user.pk)


class SeriesRun(models.Model):
    """A job's membership of its series, and the figures the History page plots for it."""

    job = models.OneToOneField(TrainingJob, on_delete=models.CASCADE, related_name="series_run")
    series = models.ForeignKey(Series, on_delete=models.CASCADE, related_name="runs")
    # Set by the collector, the upload command or the job's owner; False: named after the job.
    chosen = models.BooleanField(default=False)
    # Step time, GPU utilisation, kernel time by type, top kernels and operators (``logic``),
    # written when the job's parts are parsed; empty until then.
    figures = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            # History page: a series' runs in the order they ran (logic.RAN_AT).
            models.Index(fields=["series", "job"], name="seriesrun_series_idx"),
        ]


class VerdictStatus(models.TextChoices):
    REGRESSION = "regression"
    NO_REGRESSION = "no_regression"
    UNJUDGED = "unjudged"  # could not judge: no baseline, no steps, too few steps
    PENDING = "pending"  # parts still being parsed


class RunVerdict(models.Model):
    """A run's latest verdict against its baseline, with the settings it was judged by."""

    job = models.OneToOneField(TrainingJob, on_delete=models.CASCADE, related_name="verdict")
    baseline = models.ForeignKey(
        TrainingJob, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=16, choices=VerdictStatus.choices)
    window = models.CharField(max_length=16)
    result = models.JSONField(default=dict)
    computed_at = models.DateTimeField(default=timezone.now)

    def passed(self) -> bool:
        """Whether the run may serve as a later run's default baseline."""
        return self.status == VerdictStatus.NO_REGRESSION or (
            self.status == VerdictStatus.UNJUDGED and self.baseline_id is None
        )


class DeliveryState(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"  # every attempt failed


class WebhookDelivery(models.Model):
    """One announcement of a regression to a series' webhook, and how its attempts went."""

    series = models.ForeignKey(Series, on_delete=models.CASCADE, related_name="deliveries")
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    baseline = models.ForeignKey(
        TrainingJob, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    url = models.URLField(max_length=1000)
    payload = models.JSONField()
    state = models.CharField(
        max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    last_status = models.IntegerField(null=True)  # HTTP status of the last attempt
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A verdict is announced once, however often it is recomputed.
            models.UniqueConstraint(
                fields=["job", "baseline", "url"], name="delivery_once_per_verdict"
            )
        ]
