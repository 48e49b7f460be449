"""Response shapes of the dashboard API (they document the schema the frontend is typed from).

Some field names ("source", "partial") shadow attributes of DRF's base classes for the type
checker only: the serializer metaclass moves declared fields out of the class namespace.
"""

from rest_framework import serializers

from profiler_app.core.models import TrainingJob
from profiler_app.dashboard.models import CustomHistogram
from profiler_app.profiles.serializers import (
    GpuTotalsSerializer,
    StepTimeSerializer,
    TakenOverSerializer,
    WindowSerializer,
)
from profiler_app.traces.step_breakdown import PARTS


class ActivePointsSerializer(serializers.Serializer):
    source = serializers.CharField(allow_null=True)  # type: ignore[assignment]
    active_points = serializers.IntegerField()
    idle_points = serializers.IntegerField()
    empty_reason = serializers.CharField(allow_null=True)


class NodeSeriesSerializer(serializers.Serializer):
    node = serializers.CharField()
    points = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
        help_text="[time_ns, percent] pairs",
    )


class UtilizationSerializer(serializers.Serializer):
    source = serializers.CharField(allow_null=True)  # type: ignore[assignment]
    empty_reason = serializers.CharField(allow_null=True)
    series = NodeSeriesSerializer(many=True)


class KernelRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    total_ns = serializers.IntegerField()
    count = serializers.IntegerField()


class KernelTopSerializer(serializers.Serializer):
    total_ns = serializers.IntegerField()
    total_count = serializers.IntegerField()
    empty_reason = serializers.CharField(allow_null=True)
    top = KernelRowSerializer(many=True)


class StepsSerializer(serializers.Serializer):
    empty_reason = serializers.CharField(allow_null=True)
    names = serializers.ListField(child=serializers.CharField())
    durations_ns = serializers.ListField(child=serializers.IntegerField())


class PrecisionRowSerializer(serializers.Serializer):
    precision = serializers.CharField()
    total_ns = serializers.IntegerField()
    count = serializers.IntegerField()


class PrecisionSerializer(serializers.Serializer):
    empty_reason = serializers.CharField(allow_null=True)
    rows = PrecisionRowSerializer(many=True)


class KindRowSerializer(serializers.Serializer):
    kind = serializers.CharField()
    total_ns = serializers.IntegerField()
    count = serializers.IntegerField()
    bytes = serializers.IntegerField(required=False)


class KindRowsSerializer(serializers.Serializer):
    empty_reason = serializers.CharField(allow_null=True)
    rows = KindRowSerializer(many=True)


class HeadlinePartSerializer(serializers.Serializer):
    part = serializers.ChoiceField(
        choices=PARTS,
        help_text="Each nanosecond of the steps counts in the first part happening then: "
        "kernels (a GPU kernel runs), copies, sets (no kernel, a memory copy / set runs), "
        "sync_waits (no GPU operation, a synchronisation is in progress), data_loading (none "
        "of those, a data-loader host event runs), host_only (a host operator or CUDA call "
        "runs, the GPU idle), idle (the rest), so the parts sum to step_total_ns.",
    )
    total_ns = serializers.IntegerField()
    per_step_ns = serializers.IntegerField(help_text="total_ns over the steps")
    share_pct = serializers.FloatField(help_text="Percent of step_total_ns")


class HeadlineSerializer(serializers.Serializer):
    over = serializers.CharField(help_text="What the breakdown and kernel busy share are over")
    steps = serializers.IntegerField(help_text="Steps in the window (every rank's)")
    step_total_ns = serializers.IntegerField(help_text="Sum of the window's step durations")
    step_time = StepTimeSerializer()
    breakdown = HeadlinePartSerializer(many=True)
    kernel_busy_pct = serializers.FloatField(
        allow_null=True,
        help_text="Share of the window's step time during which a kernel runs (the kernels part)",
    )
    nvml_mean_pct = serializers.FloatField(
        allow_null=True,
        help_text="Mean of the GPUs' NVML utilisation samples over the whole run; null "
        "without samples (an imported trace)",
    )


class DashboardSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    window = WindowSerializer()
    totals = GpuTotalsSerializer()
    partial = serializers.BooleanField()  # type: ignore[assignment]
    profile_ns = serializers.IntegerField(help_text="The profile's span in the window.")
    over = TakenOverSerializer(
        help_text="What the kernel, precision, activity and memory panels' shares are of: "
        "over.ns × gpus (the captured steps' time on a sampled job)."
    )
    step_time = StepTimeSerializer()
    gpus = serializers.IntegerField(help_text="GPUs (node, device) that ran kernels.")
    gpu_active = ActivePointsSerializer()
    cpu_active = ActivePointsSerializer()
    gpu_utilization = UtilizationSerializer()
    cpu_utilization = UtilizationSerializer()
    kernel_time = KernelTopSerializer()
    kernel_count = KernelTopSerializer()
    steps = StepsSerializer()
    precision = PrecisionSerializer()
    gpu_activity = KindRowsSerializer()
    memory_ops = KindRowsSerializer()
    annotation_names = serializers.ListField(child=serializers.CharField())


class AnnotationQuerySerializer(serializers.Serializer):
    name = serializers.CharField(
        help_text="The annotation's name, e.g. Forward.",
        error_messages={
            "required": "Give the annotation name, e.g. ?name=Forward.",
            "blank": "Give the annotation name, e.g. ?name=Forward.",
        },
    )


class AnnotationDurationsSerializer(serializers.Serializer):
    name = serializers.CharField()
    durations_ns = serializers.ListField(child=serializers.IntegerField())


class CustomHistogramSerializer(serializers.ModelSerializer):
    job = serializers.PrimaryKeyRelatedField(queryset=TrainingJob.objects.all())

    class Meta:
        model = CustomHistogram
        fields = ["id", "job", "annotation_name", "created_at"]
        read_only_fields = ["id", "created_at"]
        # The per-user uniqueness is checked in the view (the user is not a field here).
        validators: list = []
