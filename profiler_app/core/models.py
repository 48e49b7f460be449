import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone

from profiler_app.core.storage import RAW_FOLDER
from profiler_app.traces.window import WHOLE_TRACE, WINDOW_LABELS, WINDOWS


class JobStatus(models.TextChoices):
    IN_PROGRESS = "in_progress", "In Progress"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    STOPPED = "stopped", "Stopped"
    STOPPING = "stopping", "Stopping"


# A job whose sender has not said it ended.
SENDING = (JobStatus.IN_PROGRESS, JobStatus.STOPPING)


class JobState(models.TextChoices):
    """What the catalog shows: the job's declared status checked against its parts and uploads."""

    IN_PROGRESS = "in_progress", "In Progress"
    COMPLETED = "completed", "Completed"
    PARTIAL = "partial", "Partly failed"
    FAILED = "failed", "Failed"
    STOPPED = "stopped", "Stopped"
    STOPPING = "stopping", "Stopping"
    INTERRUPTED = "interrupted", "Upload interrupted"


def upload_stalled_before():
    """An unfinished upload that no byte reached since then has stopped (its sender is gone)."""
    return timezone.now() - timedelta(seconds=settings.UPLOAD_STALL_SECONDS)


class TrainingJobQuerySet(models.QuerySet):
    def with_window_of(self, user) -> "TrainingJobQuerySet":
        """Adds ``viewer_window``: the window ``user`` sees each job in (``window_for``)."""
        chosen = JobWindowChoice.objects.filter(job=models.OuterRef("pk"), user_id=user.pk)
        return self.annotate(
            viewer_window=Coalesce(models.Subquery(chosen.values("window")[:1]), "window")
        )

    def with_part_counts(self) -> "TrainingJobQuerySet":
        """Adds parts_total/done/failed and size_bytes, as the job list shows them, the
        interrupted uploads (count, bytes arrived, bytes declared) and the job's ``state``."""
        stalled = Upload.objects.filter(
            job=models.OuterRef("pk"), last_byte_at__lt=upload_stalled_before()
        ).values("job")

        def stalled_sum(expression) -> Coalesce:
            sums = stalled.annotate(total=expression).values("total")
            return Coalesce(models.Subquery(sums), 0)

        jobs = self.annotate(
            parts_total=models.Count("parts"),
            parts_done=models.Count("parts", filter=models.Q(parts__state=PartState.DONE)),
            parts_failed=models.Count("parts", filter=models.Q(parts__state=PartState.FAILED)),
            size_bytes=Coalesce(models.Sum("parts__size_bytes"), 0),
            uploads_interrupted=stalled_sum(models.Count("pk")),
            interrupted_received_bytes=stalled_sum(models.Sum("received_bytes")),
            interrupted_size_bytes=stalled_sum(models.Sum("size_bytes")),
        )
        still_sending = models.Q(status__in=SENDING)
        return jobs.annotate(
            state=models.Case(
                models.When(uploads_interrupted__gt=0, then=models.Value(JobState.INTERRUPTED)),
                # The collector still sends parts: one failing does not end the job.
                models.When(still_sending, then=models.F("status")),
                models.When(
                    parts_total__gt=0,
                    parts_failed=models.F("parts_total"),
                    then=models.Value(JobState.FAILED),
                ),
                models.When(parts_failed__gt=0, then=models.Value(JobState.PARTIAL)),
                default=models.F("status"),
                output_field=models.CharField(max_length=16, choices=JobState.choices),
            )
        )


TAG_MAX_CHARS = 40
MAX_TAGS = 20
NOTES_MAX_CHARS = 10_000


WINDOW_CHOICES = [(w, WINDOW_LABELS[w]) for w in WINDOWS]


class TrainingJob(models.Model):
    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(
        max_length=16, choices=JobStatus.choices, default=JobStatus.IN_PROGRESS
    )
    instance_type = models.CharField(max_length=128, blank=True)
    instance_count = models.PositiveIntegerField(default=1)
    framework = models.CharField(max_length=64, blank=True)
    framework_version = models.CharField(max_length=64, blank=True)
    hyperparameters = models.JSONField(default=dict, blank=True)
    resource_ids = models.JSONField(default=dict, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # Why the job ended when its sender never said (``logic.end_silent_jobs``); empty otherwise.
    end_reason = models.CharField(max_length=300, blank=True)
    # What every page of the job covers for whoever has not chosen their own (``window_for``).
    window = models.CharField(
        max_length=16,
        choices=WINDOW_CHOICES,
        default=WHOLE_TRACE,
        help_text="The owner's window, the default of everyone who has not chosen their own: "
        "the whole trace, or its complete steps (each trace without its last profiler step, "
        "which the profiler cuts short).",
    )
    notes = models.TextField(blank=True, max_length=NOTES_MAX_CHARS)
    # A few short labels per job, filtered on (jobs having all of the given tags) and counted
    # for the filter's choices. An array on the row, not a Tag table: a job has at most
    # MAX_TAGS, no tag carries anything but its text, and "has all of these" is one `@>`
    # served by the GIN index below, with no join.
    tags = ArrayField(
        models.CharField(max_length=TAG_MAX_CHARS), default=list, blank=True, size=MAX_TAGS
    )

    objects = TrainingJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # Profiles page: newest first, filtered by status and creation range.
            models.Index(fields=["-created_at", "-id"], name="job_created_idx"),
            models.Index(fields=["status", "-created_at"], name="job_status_created_idx"),
            # Profiles page: the tag filter (tags @> ARRAY[...]).
            GinIndex(fields=["tags"], name="job_tags_gin"),
        ]

    def __str__(self) -> str:
        return self.name

    def window_for(self, user) -> str:
        """The window ``user`` sees this job in: their own choice, else the owner's."""
        if user is None or not user.is_authenticated:
            return self.window
        chosen = self.window_choices.filter(user=user).values_list("window", flat=True).first()
        return chosen or self.window

    def can_change(self, user) -> bool:
        """Everyone signed in sees every job; only its owner or staff change or delete it."""
        if not (user and user.is_authenticated):
            return False
        return bool(user.is_staff) or (self.owner_id is not None and self.owner_id == user.pk)

    @property
    def read_warnings(self) -> list[dict]:
        """What the parser did not recognise, per part (the job list prefetches the parts)."""
        parts = getattr(self, "warned_parts", None)
        if parts is None:
            parts = self.parts.exclude(warning="").order_by("id")
        return [
            {"part": p.pk, "rank": p.rank, "file": p.original_name, "message": p.warning}
            for p in parts
        ]


class JobWindowChoice(models.Model):
    """A teammate's own window of a job (``TrainingJob.window_for``); the owner's choice is the
    job's ``window`` itself, so an owner has no row."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="window_choices"
    )
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="window_choices")
    window = models.CharField(max_length=16, choices=WINDOW_CHOICES)

    class Meta:
        constraints = [
            # Also the index of every page's look-up of the viewer's window (user, job).
            models.UniqueConstraint(fields=["user", "job"], name="window_choice_one_per_user")
        ]


class DeletedJob(models.Model):
    """What stays of a deleted job: who deleted it and when, so a teammate's open page of it can
    say so (GET /api/jobs/<id>/ answers 410 Gone) rather than a bare "not found"."""

    # The deleted job's own id: ids are never reused, so this names that job alone.
    id = models.BigIntegerField(primary_key=True)
    name = models.CharField(max_length=255)
    # None: deleted by the server itself (retention), or by an account deleted since.
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    deleted_at = models.DateTimeField(default=timezone.now)


class Node(models.Model):
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=128)
    hostname = models.CharField(max_length=255, blank=True)
    # From the devices the node's parts recorded; None: no part said.
    gpu_count = models.PositiveIntegerField(null=True, blank=True)
    cpu_count = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["job", "name"], name="node_unique_name_per_job")
        ]

    def __str__(self) -> str:
        return f"{self.job.name}/{self.name}"


class PartKind(models.TextChoices):
    KINETO = "kineto", "PyTorch profiler trace (Chrome trace JSON)"
    COLLECTOR = "collector", "Collector chunk"


class PartState(models.TextChoices):
    PENDING = "pending", "Pending"
    PROCESSING = "processing", "Processing"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


def part_upload_path(part: "ProfilePart", filename: str) -> str:
    return f"{RAW_FOLDER}/{part.job_id}/{part.sha256}-{filename}"


class ProfilePart(models.Model):
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="parts")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="parts")
    rank = models.IntegerField(default=0)
    pid = models.IntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=PartKind.choices)
    original_name = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    file = models.FileField(upload_to=part_upload_path, max_length=500)
    state = models.CharField(max_length=16, choices=PartState.choices, default=PartState.PENDING)
    error = models.TextField(blank=True)
    # What the parser read but did not recognise, when it matters (see traces.recognition).
    warning = models.TextField(blank=True)
    progress = models.FloatField(default=0.0)
    # Times a worker took this part since it was uploaded or reprocessed: more than one means
    # a worker died (or lost its task) while parsing it.
    parse_attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    # Every state change and the parse's progress set it: the ingest sweep's sign of life.
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # Re-sending the same content is idempotent.
            models.UniqueConstraint(fields=["job", "sha256"], name="part_unique_content_per_job")
        ]
        indexes = [
            # Job list progress columns, the worker's claim, and an insights run waiting
            # for the job's parts (insights.logic._parts_being_parsed).
            models.Index(fields=["job", "state"], name="part_job_state_idx"),
            # The ingest sweep: parts left pending or processing, oldest sign of life first.
            models.Index(
                fields=["updated_at"],
                condition=models.Q(state__in=["pending", "processing"]),
                name="part_unfinished_idx",
            ),
            # Ingest admission's pace: the parts finished in the last minute.
            models.Index(
                fields=["finished_at"],
                condition=models.Q(finished_at__isnull=False),
                name="part_finished_idx",
            ),
            # Raw-upload retention: parsed parts that still keep their raw file, oldest first.
            models.Index(
                fields=["created_at"],
                condition=models.Q(state="done") & ~models.Q(file=""),
                name="part_raw_kept_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.original_name} ({self.state})"


class Upload(models.Model):
    """A resumable upload in progress: the client sends byte ranges, then completes it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="uploads")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    node_name = models.CharField(max_length=128)
    hostname = models.CharField(max_length=255, blank=True)
    rank = models.IntegerField(default=0)
    pid = models.IntegerField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=PartKind.choices)
    original_name = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField()
    received_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    # Each range stamps it: an upload still unfinished long after it has been interrupted.
    last_byte_at = models.DateTimeField(default=timezone.now)
    # In a bucket (``core.resumable``): the object the bytes become, its multipart upload, and
    # the parts sent to it so far with their bytes; the bytes after those wait as range
    # objects until they make a part (the bucket's least but the last is 5 MiB).
    bucket_key = models.CharField(max_length=500, blank=True)
    multipart_id = models.CharField(max_length=1024, blank=True)
    parts_sent = models.PositiveIntegerField(default=0)
    parts_bytes = models.BigIntegerField(default=0)

    class Meta:
        indexes = [
            # The abandoned-upload cleanup: the oldest uploads first.
            models.Index(fields=["created_at"], name="upload_created_idx"),
            # The job list's interrupted uploads, per job.
            models.Index(fields=["job", "last_byte_at"], name="upload_job_last_byte_idx"),
        ]


class LoadedProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="loaded_profile"
    )
    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    loaded_at = models.DateTimeField(default=timezone.now)


class AppSettings(models.Model):
    """The single row of application-wide settings (admins edit it)."""

    MAX_SHUTDOWN_HOURS = 24 * 30

    auto_shutdown_enabled = models.BooleanField(default=True)
    auto_shutdown_hours = models.FloatField(
        default=2.0,
        validators=[MinValueValidator(0.05), MaxValueValidator(MAX_SHUTDOWN_HOURS)],
    )
    last_activity_at = models.DateTimeField(default=timezone.now)
    # Retention (null: off). Raw uploads: the uploaded file of a parsed part older than this
    # many days is deleted (its parsed data stays). Jobs: a job whose last activity (its
    # creation or its newest part's upload, whichever is later) is older than this is deleted.
    retention_raw_days = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(36_500)]
    )
    retention_jobs_days = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(36_500)]
    )

    @classmethod
    def load(cls) -> "AppSettings":
        obj, _ = cls.objects.get_or_create(pk=1)
        return obj

    def idle_for(self, now=None) -> timedelta:
        return (now or timezone.now()) - self.last_activity_at

    def should_shut_down(self, now=None) -> bool:
        if not self.auto_shutdown_enabled:
            return False
        return self.idle_for(now) > timedelta(hours=self.auto_shutdown_hours)
