import re

from django.contrib.auth import get_user_model
from rest_framework import serializers

from profiler_app.core.models import (
    MAX_TAGS,
    TAG_MAX_CHARS,
    WINDOW_CHOICES,
    AppSettings,
    DeletedJob,
    JobState,
    LoadedProfile,
    Node,
    PartKind,
    ProfilePart,
    TrainingJob,
    Upload,
)


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = get_user_model()
        fields = ["id", "username", "is_staff"]


class LoginSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class NodeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Node
        fields = ["id", "name", "hostname", "gpu_count", "cpu_count"]


class ReadWarningSerializer(serializers.Serializer):
    part = serializers.IntegerField()
    rank = serializers.IntegerField()
    file = serializers.CharField()
    message = serializers.CharField()


TAG = re.compile(rf"[A-Za-z0-9_.:-]{{1,{TAG_MAX_CHARS}}}")


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` is not a tag, in words for the person who typed it; None when it is one."""
    if TAG.fullmatch(tag):
        return None
    if not tag:
        return "A tag cannot be empty."
    if len(tag) > TAG_MAX_CHARS:
        return (
            f"“{tag[:TAG_MAX_CHARS]}…” is too long: a tag has at most {TAG_MAX_CHARS} characters."
        )
    return f"“{tag}” is not a tag: use letters, digits and - _ . : only (no spaces)."


class DeletedJobSerializer(serializers.ModelSerializer):
    """The answer (410 Gone) for a job deleted since it was opened."""

    detail = serializers.SerializerMethodField()
    code = serializers.SerializerMethodField()
    deleted_by = serializers.CharField(
        source="deleted_by.username",
        default=None,
        allow_null=True,
        help_text="Who deleted it; null when the server's retention did (or the account is gone).",
    )

    class Meta:
        model = DeletedJob
        fields = ["detail", "code", "id", "name", "deleted_by", "deleted_at"]
        read_only_fields = fields

    def get_detail(self, gone: DeletedJob) -> str:
        who = gone.deleted_by.username if gone.deleted_by else "the server's retention"
        return f"“{gone.name}” was deleted by {who}."

    def get_code(self, gone: DeletedJob) -> str:
        return "job_deleted"


class TrainingJobSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(
        source="owner.username", read_only=True, default=None, allow_null=True
    )
    tags = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        help_text=f"Up to {MAX_TAGS} short labels: 1–{TAG_MAX_CHARS} letters, digits, "
        "'-', '_', '.' or ':'.",
    )
    nodes = NodeSerializer(many=True, read_only=True)
    parts_total = serializers.IntegerField(read_only=True, default=0)
    parts_done = serializers.IntegerField(read_only=True, default=0)
    parts_failed = serializers.IntegerField(read_only=True, default=0)
    size_bytes = serializers.IntegerField(read_only=True, default=0)
    state = serializers.ChoiceField(
        choices=JobState.choices,
        read_only=True,
        default=JobState.IN_PROGRESS,
        help_text="The job's state, what every page shows: `status` checked against the parts "
        "and uploads (failed when every part failed, partial when some did, interrupted when an "
        "upload stopped before its end).",
    )
    uploads_interrupted = serializers.IntegerField(read_only=True, default=0)
    interrupted_received_bytes = serializers.IntegerField(read_only=True, default=0)
    interrupted_size_bytes = serializers.IntegerField(read_only=True, default=0)
    read_warnings = ReadWarningSerializer(
        many=True,
        read_only=True,
        help_text="Parts with events the server did not recognise: the profile may be incomplete.",
    )
    window = serializers.ChoiceField(
        choices=WINDOW_CHOICES,
        required=False,
        help_text="The window the requesting user sees this job in, on every page: their own "
        "choice, else the owner's default (`default_window`). Anyone signed in may PATCH it "
        "alone: the owner (or staff) changes the default, anyone else only their own window.",
    )
    # Text, not a second enum: two names for one choice set make the schema's enum names unstable.
    default_window = serializers.CharField(
        source="window",
        read_only=True,
        help_text="The owner's window (one of `window`'s values): the default of everyone who "
        "has not chosen their own.",
    )

    class Meta:
        model = TrainingJob
        fields = [
            "id",
            "name",
            "created_at",
            "status",
            "instance_type",
            "instance_count",
            "framework",
            "framework_version",
            "hyperparameters",
            "resource_ids",
            "owner",
            "started_at",
            "ended_at",
            "end_reason",
            "nodes",
            "parts_total",
            "parts_done",
            "parts_failed",
            "size_bytes",
            "state",
            "uploads_interrupted",
            "interrupted_received_bytes",
            "interrupted_size_bytes",
            "read_warnings",
            "window",
            "default_window",
            "notes",
            "tags",
        ]
        read_only_fields = ["id", "created_at", "end_reason"]
        extra_kwargs = {
            "status": {
                "help_text": "The sender's lifecycle, as the collector or uploader reports it "
                "(PATCH): in_progress while it sends, then completed or failed as the run "
                "ended; a job silent past COLLECTOR_SILENCE_MINUTES is ended by the server "
                "(`end_reason`). Not the job's state: read `state` for that."
            }
        }

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["window"] = self._viewer_window(instance)
        return data

    def _viewer_window(self, job: TrainingJob) -> str:
        """Annotated on lists (``with_window_of``); one look-up otherwise."""
        annotated = getattr(job, "viewer_window", None)
        if annotated is not None:
            return annotated
        request = self.context.get("request")
        return job.window if request is None else job.window_for(request.user)

    def validate_tags(self, value: list[str]) -> list[str]:
        tags = list(dict.fromkeys(value))  # a repeated tag counts once
        for tag in tags:
            problem = tag_problem(tag)
            if problem:
                raise serializers.ValidationError(problem)
        if len(tags) > MAX_TAGS:
            raise serializers.ValidationError(f"A job has at most {MAX_TAGS} tags.")
        return tags

    def validate_hyperparameters(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Hyperparameters must be a JSON object.")
        return value

    def validate_resource_ids(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Resource identifiers must be a JSON object.")
        return value


class ProfilePartSerializer(serializers.ModelSerializer):
    node = serializers.CharField(source="node.name", read_only=True)

    class Meta:
        model = ProfilePart
        fields = [
            "id",
            "job",
            "node",
            "rank",
            "pid",
            "kind",
            "original_name",
            "size_bytes",
            "sha256",
            "state",
            "error",
            "warning",
            "progress",
            "created_at",
            "updated_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class PartSourceFields(serializers.Serializer):
    node = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
        help_text="Node name, e.g. algo-1",
        error_messages={"invalid": "Node names use letters, digits, '.', '_' and '-'."},
    )
    rank = serializers.IntegerField(min_value=0, max_value=1_000_000)
    pid = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, allow_null=True
    )
    hostname = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    kind = serializers.ChoiceField(choices=PartKind.choices)


class PartUploadSerializer(PartSourceFields):
    file = serializers.FileField(allow_empty_file=False)


class UploadStartSerializer(PartSourceFields):
    filename = serializers.CharField(max_length=255)
    size_bytes = serializers.IntegerField(min_value=1)


class UploadSerializer(serializers.ModelSerializer):
    class Meta:
        model = Upload
        fields = [
            "id",
            "job",
            "node_name",
            "rank",
            "kind",
            "original_name",
            "size_bytes",
            "received_bytes",
            "created_at",
        ]
        read_only_fields = fields


class UploadsEndedSerializer(serializers.Serializer):
    stored = serializers.IntegerField(help_text="Uploads whose every byte arrived: now parts.")
    dropped = serializers.IntegerField(help_text="Uploads cut short: what arrived is deleted.")


class LoadedProfileSerializer(serializers.ModelSerializer):
    job = serializers.PrimaryKeyRelatedField(queryset=TrainingJob.objects.all())
    job_detail = TrainingJobSerializer(source="job", read_only=True)

    class Meta:
        model = LoadedProfile
        fields = ["job", "job_detail", "loaded_at"]
        read_only_fields = ["loaded_at"]


RETENTION_DAYS_ERRORS = {
    "min_value": "Keep things at least 1 day, or leave the field empty to keep them forever.",
    "max_value": "At most 36500 days (100 years); leave the field empty to keep them forever.",
    "invalid": "Enter a whole number of days, or leave the field empty.",
}


class AppSettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = AppSettings
        fields = [
            "auto_shutdown_enabled",
            "auto_shutdown_hours",
            "last_activity_at",
            "retention_raw_days",
            "retention_jobs_days",
        ]
        read_only_fields = ["last_activity_at"]
        extra_kwargs = {
            "retention_raw_days": {
                "error_messages": RETENTION_DAYS_ERRORS,
                "help_text": "Delete the raw uploaded file of a parsed part this many days after "
                "its upload (its parsed data stays); null: keep raw files.",
            },
            "retention_jobs_days": {
                "error_messages": RETENTION_DAYS_ERRORS,
                "help_text": "Delete a whole job this many days after its last activity (its "
                "creation or its newest part's upload, whichever is later); null: keep jobs.",
            },
            "auto_shutdown_hours": {
                "error_messages": {
                    "min_value": "The threshold must be more than 0 hours (at least 0.05 h).",
                    "max_value": f"The threshold can be at most {AppSettings.MAX_SHUTDOWN_HOURS} "
                    "hours (30 days).",
                }
            },
        }


class HealthSerializer(serializers.Serializer):
    database = serializers.CharField()
    redis = serializers.CharField()
    workers = serializers.IntegerField()


class DemoSerializer(serializers.Serializer):
    available = serializers.BooleanField()
    reason = serializers.CharField()
    job_name = serializers.CharField()


class TagCountSerializer(serializers.Serializer):
    tag = serializers.CharField()
    jobs = serializers.IntegerField(help_text="How many jobs carry the tag.")


class DiskUseSerializer(serializers.Serializer):
    where = serializers.CharField(
        help_text='Where profiles are kept: "data directory", or the bucket\'s s3:// URL.'
    )
    raw_bytes = serializers.IntegerField(help_text="Raw uploaded files.")
    stores_bytes = serializers.IntegerField(help_text="Timeline stores of parsed parts.")
    uploads_bytes = serializers.IntegerField(help_text="Resumable uploads still arriving.")
    total_bytes = serializers.IntegerField()
    free_bytes = serializers.IntegerField(
        allow_null=True, help_text="Free space on the data directory's disk (null: a bucket)."
    )
    capacity_bytes = serializers.IntegerField(
        allow_null=True, help_text="Size of the data directory's disk (null: a bucket)."
    )
    cache_bytes = serializers.IntegerField(
        help_text="This server's cached copies of timeline stores kept in a bucket."
    )


class RetentionJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    owner = serializers.CharField(allow_null=True)
    last_activity_at = serializers.DateTimeField()
    bytes = serializers.IntegerField()


class RetentionRawFileSerializer(serializers.Serializer):
    part = serializers.IntegerField()
    job = serializers.IntegerField()
    job_name = serializers.CharField()
    file = serializers.CharField(help_text="The file's name as uploaded.")
    uploaded_at = serializers.DateTimeField()
    bytes = serializers.IntegerField()


class RetentionDaysField(serializers.CharField):
    """A day count from 1 to 36500; empty means off (None)."""

    default_error_messages = {
        "invalid": "Enter a whole number of days from 1 to 36500, or nothing.",
    }

    def __init__(self, **kwargs):
        super().__init__(required=False, allow_blank=True, **kwargs)

    def run_validation(self, data=serializers.empty):
        value = super().run_validation(data)
        return None if value == "" else value  # a blank skips to_internal_value

    def to_internal_value(self, data) -> int:  # type: ignore[override]
        text = super().to_internal_value(data)
        if not text.isdigit() or not 1 <= int(text) <= 36_500:
            self.fail("invalid")
        return int(text)


class RetentionPreviewQuerySerializer(serializers.Serializer):
    """Day counts to preview instead of the saved ones (absent: the saved one)."""

    retention_raw_days = RetentionDaysField(
        help_text="Preview this number of days instead of the saved one (empty: off)."
    )
    retention_jobs_days = RetentionDaysField(
        help_text="Preview this number of days instead of the saved one (empty: off)."
    )


class RetentionPreviewSerializer(serializers.Serializer):
    retention_raw_days = serializers.IntegerField(allow_null=True)
    retention_jobs_days = serializers.IntegerField(allow_null=True)
    jobs = RetentionJobSerializer(many=True)
    raw_files = RetentionRawFileSerializer(many=True)
    total_bytes = serializers.IntegerField(help_text="The bytes all of it frees.")
