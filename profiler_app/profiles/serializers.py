"""Shapes of the read API over a profile (used for validation and the OpenAPI schema); the pages
reuse the window and totals shapes."""

from rest_framework import serializers

from profiler_app.core.serializers import ReadWarningSerializer
from profiler_app.traces.window import WINDOWS

KERNEL_ORDERING = [
    "name",
    "count",
    "total_ns",
    "min_ns",
    "max_ns",
    "mean_ns",
    "category",
    "precision",
]


class KernelQuerySerializer(serializers.Serializer):
    rank = serializers.IntegerField(required=False)
    node = serializers.CharField(required=False, help_text="Node name (e.g. algo-1) or id.")
    ordering = serializers.ChoiceField(
        choices=[*KERNEL_ORDERING, *(f"-{f}" for f in KERNEL_ORDERING)],
        required=False,
        default="-total_ns",
    )


class KernelSerializer(serializers.Serializer):
    name = serializers.CharField()
    count = serializers.IntegerField()
    total_ns = serializers.IntegerField()
    min_ns = serializers.IntegerField()
    max_ns = serializers.IntegerField()
    mean_ns = serializers.FloatField()
    std_ns = serializers.FloatField(
        help_text="sample standard deviation of the runs' durations (n − 1; 0 for one run)"
    )
    category = serializers.CharField(help_text="COMP, COMM, MEM or OTHER (HTA's rules)")
    precision = serializers.CharField(help_text='FP32, FP16, BF16, … or "unknown"')


class WindowSerializer(serializers.Serializer):
    window = serializers.ChoiceField(choices=list(WINDOWS))
    label = serializers.CharField(help_text='How captions name it: "complete steps #1–#5 (5 of 6)"')  # type: ignore[assignment]
    steps_total = serializers.IntegerField()
    steps_kept = serializers.IntegerField()
    last_step_dropped = serializers.BooleanField(
        help_text="Whether some trace of the job has a last profiler step this window leaves out."
    )


class KernelTotalsSerializer(serializers.Serializer):
    """The GPU figures of a kernel table (see ``GET /api/glossary/``)."""

    kernel_runs = serializers.IntegerField()
    kernel_ns = serializers.IntegerField()
    gpu_op_runs = serializers.IntegerField()
    gpu_op_ns = serializers.IntegerField()
    compute_ns = serializers.IntegerField()
    comm_ns = serializers.IntegerField()
    memory_ns = serializers.IntegerField()
    other_ns = serializers.IntegerField()


class GpuTotalsSerializer(KernelTotalsSerializer):
    """The job's GPU figures in its window, with the synchronisations (not GPU operations)."""

    sync_ns = serializers.IntegerField()


class JobKernelsSerializer(serializers.Serializer):
    window = WindowSerializer()
    totals = GpuTotalsSerializer()
    kernels = KernelSerializer(many=True)


class GlossaryFigureSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    definition = serializers.CharField()


class GlossaryWindowSerializer(serializers.Serializer):
    window = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    definition = serializers.CharField()


class GlossarySerializer(serializers.Serializer):
    figures = GlossaryFigureSerializer(many=True)
    windows = GlossaryWindowSerializer(many=True)


class PartStatesSerializer(serializers.Serializer):
    pending = serializers.IntegerField()
    processing = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    total = serializers.IntegerField()


class JobSummarySerializer(serializers.Serializer):
    job = serializers.IntegerField()
    event_counts = serializers.DictField(child=serializers.IntegerField())
    n_events = serializers.IntegerField()
    start_ns = serializers.IntegerField(allow_null=True)
    end_ns = serializers.IntegerField(allow_null=True)
    span_ns = serializers.IntegerField()
    ranks = serializers.ListField(child=serializers.IntegerField())
    world_size = serializers.IntegerField(
        allow_null=True,
        help_text="The ranks the job ran on, as its traces say (distributedInfo or the "
        "collector); null when none says",
    )
    missing_ranks = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="Ranks below world_size that sent no parsed part, as [first, last] ranges",
    )
    nodes = serializers.ListField(child=serializers.CharField())
    parts = PartStatesSerializer()
    progress = serializers.FloatField(help_text="Mean progress of the job's parts, 0 to 1")
    read_warnings = ReadWarningSerializer(
        many=True, help_text="Parts with events the server did not recognise"
    )
