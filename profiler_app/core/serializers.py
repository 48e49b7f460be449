from django.contrib.auth import get_user_model
from rest_framework import serializers

from profiler_app.core.models import (
    AppSettings,
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


class TrainingJobSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(
        source="owner.username", read_only=True, default=None, allow_null=True
    )
    nodes = NodeSerializer(many=True, read_only=True)
    parts_total = serializers.IntegerField(read_only=True, default=0)
    parts_done = serializers.IntegerField(read_only=True, default=0)
    parts_failed = serializers.IntegerField(read_only=True, default=0)
    size_bytes = serializers.IntegerField(read_only=True, default=0)
    read_warnings = ReadWarningSerializer(
        many=True,
        read_only=True,
        help_text="Parts with events the server did not recognise: the profile may be incomplete.",
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
            "nodes",
            "parts_total",
            "parts_done",
            "parts_failed",
            "size_bytes",
            "read_warnings",
            "window",
        ]
        read_only_fields = ["id", "created_at"]

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


class LoadedProfileSerializer(serializers.ModelSerializer):
    job = serializers.PrimaryKeyRelatedField(queryset=TrainingJob.objects.all())
    job_detail = TrainingJobSerializer(source="job", read_only=True)

    class Meta:
        model = LoadedProfile
        fields = ["job", "job_detail", "loaded_at"]
        read_only_fields = ["loaded_at"]


class AppSettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = AppSettings
        fields = ["auto_shutdown_enabled", "auto_shutdown_hours", "last_activity_at"]
        read_only_fields = ["last_activity_at"]
        extra_kwargs = {
            "auto_shutdown_hours": {
                "error_messages": {
                    "min_value": "The threshold must be more than 0 hours (at least 0.05 h).",
                    "max_value": f"The threshold can be at most {AppSettings.MAX_SHUTDOWN_HOURS} "
                    "hours (30 days).",
                }
            }
        }


class HealthSerializer(serializers.Serializer):
    database = serializers.CharField()
    redis = serializers.CharField()
    workers = serializers.IntegerField()


class DemoSerializer(serializers.Serializer):
    available = serializers.BooleanField()
    reason = serializers.CharField()
    job_name = serializers.CharField()
