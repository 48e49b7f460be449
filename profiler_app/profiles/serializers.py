"""Shapes of the read API over a profile (used for validation and the OpenAPI schema); the pages
reuse the window and totals shapes."""

from rest_framework import serializers

from profiler_app.core.serializers import ReadWarningSerializer
from profiler_app.traces.capture import MAX_WINDOWS, SCHEDULES, WINDOW_KINDS
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
    steps_dropped = serializers.IntegerField(help_text="Steps this window leaves out.")
    switch_note = serializers.CharField(
        allow_null=True, help_text="Why the window switch changes nothing for this job, if so."
    )
    last_step_dropped = serializers.BooleanField(
        help_text="Whether some trace of the job has a last profiler step this window leaves out."
    )


class TakenOverSerializer(serializers.Serializer):
    """What a share of time is a share of (``FIGURES["over"]``)."""

    what = serializers.ChoiceField(choices=["captured steps", "profile span"])
    ns = serializers.IntegerField(help_text="Per GPU.")
    steps = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]


class StepTimeSerializer(serializers.Serializer):
    """The one step time (``FIGURES["step_time"]``)."""

    median_ns = serializers.IntegerField(allow_null=True)
    steps = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]


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
    recorded_start_ns = serializers.IntegerField(
        allow_null=True,
        help_text="When the first event was recorded, unix-epoch ns; null when no part's clock "
        "says (a trace aligned on its own start)",
    )
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


class CaptureWindowSerializer(serializers.Serializer):
    first_step = serializers.IntegerField()
    last_step = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=list(WINDOW_KINDS),
        help_text="gpu: GPU activity only; full: GPU activity and CPU operators; cpu: CPU "
        "operators on a machine without a GPU",
    )
    cost_ns = serializers.IntegerField(help_text="What the window cost the training")


class WindowsByKindSerializer(serializers.Serializer):
    gpu = serializers.IntegerField()
    full = serializers.IntegerField()
    cpu = serializers.IntegerField()


class ProcessCaptureSerializer(serializers.Serializer):
    """One process's latest cumulative figures and its windows."""

    node = serializers.CharField()
    rank = serializers.IntegerField()
    pid = serializers.IntegerField(allow_null=True)
    schedule = serializers.ChoiceField(choices=list(SCHEDULES))
    budget_pct = serializers.FloatField(help_text="The overhead budget, percent of wall time")
    elapsed_ns = serializers.IntegerField(help_text="Time the process has been profiling")
    cost_ns = serializers.IntegerField(help_text="Measured cost of the collector to the training")
    background_ns = serializers.IntegerField(
        help_text="Of cost_ns, what the collector's threads and its packing child took (the rest "
        "is its Kineto windows: their steps, start, stop and export)"
    )
    overhead_pct = serializers.FloatField(help_text="100 × cost_ns / elapsed_ns")
    steps_run = serializers.IntegerField()
    steps_captured = serializers.IntegerField()
    captured_pct = serializers.FloatField(allow_null=True)
    windows_total = serializers.IntegerField(help_text="Kineto windows finished")
    exceeded = serializers.BooleanField(help_text="The measured overhead went over the budget")
    windows = CaptureWindowSerializer(
        many=True, help_text=f"In step order; the last {MAX_WINDOWS} when there are more"
    )
    windows_count = serializers.IntegerField(help_text="The windows received in all")


class JobCaptureSerializer(serializers.Serializer):
    """The collector's report of what profiling cost and captured; figures are null when no
    chunk of the job carries one (an older collector, or an imported trace)."""

    job = serializers.IntegerField()
    reported = serializers.BooleanField()
    captured_steps = serializers.CharField(
        allow_null=True,
        help_text='The steps Kineto recorded as captions name them ("captured steps 57–60 (4 '
        'of 160)": distinct_steps_captured of distinct_steps_run); null for an imported trace',
    )
    distinct_steps_run = serializers.IntegerField(
        allow_null=True,
        help_text="The job's training steps, each counted once however many processes ran it; "
        "null for an imported trace",
    )
    distinct_steps_captured = serializers.IntegerField(
        allow_null=True,
        help_text="Of distinct_steps_run, those Kineto recorded on at least one process",
    )
    budget_pct = serializers.FloatField(
        allow_null=True, help_text="The processes' budget; null when they differ"
    )
    schedule = serializers.ChoiceField(
        choices=list(SCHEDULES),
        allow_null=True,
        help_text="budget: windows spaced by the overhead budget; fixed: the user's Kineto "
        "schedule; null when the processes differ",
    )
    elapsed_ns = serializers.IntegerField(allow_null=True)
    cost_ns = serializers.IntegerField(allow_null=True)
    background_ns = serializers.IntegerField(
        allow_null=True, help_text="Of cost_ns, the collector's threads and packing"
    )
    overhead_pct = serializers.FloatField(
        allow_null=True, help_text="100 × the processes' cost / their profiling time"
    )
    steps_run = serializers.IntegerField(
        allow_null=True,
        help_text="The processes' steps summed: a step run by 4 processes counts 4 times",
    )
    steps_captured = serializers.IntegerField(
        allow_null=True, help_text="The processes' captured steps summed, as steps_run"
    )
    captured_pct = serializers.FloatField(
        allow_null=True, help_text="100 × steps_captured / steps_run (the processes' sums)"
    )
    windows_total = serializers.IntegerField(
        allow_null=True, help_text="The processes' Kineto windows summed"
    )
    windows_by_kind = WindowsByKindSerializer(allow_null=True)
    exceeded = serializers.BooleanField(
        allow_null=True, help_text="Some process went over its budget"
    )
    processes = ProcessCaptureSerializer(many=True)
