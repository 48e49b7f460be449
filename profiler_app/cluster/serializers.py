"""Response shapes of the cluster and comparison API (the schema the frontend is typed from).

Times are integer nanoseconds; absolute times (``start_ns``, ``end_ns``) are strings, since they
exceed a JavaScript number's exact range. Bandwidths are GB/s (bytes per nanosecond).
"""

from rest_framework import serializers

from profiler_app.profiles.serializers import (
    GpuTotalsSerializer,
    StepTimeSerializer,
    WindowSerializer,
)
from profiler_app.traces.window import WINDOWS


class ClusterQuerySerializer(serializers.Serializer):
    step = serializers.IntegerField(required=False, help_text="one step; left out: the mean")


class CompareQuerySerializer(serializers.Serializer):
    a = serializers.IntegerField(help_text="the baseline job")
    b = serializers.IntegerField(help_text="the job compared with it")
    window = serializers.ChoiceField(
        choices=list(WINDOWS),
        required=False,
        help_text="both jobs' window; left out: the window the caller views job A in",
    )


class RankRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    node = serializers.CharField()
    steps = serializers.IntegerField(help_text="steps averaged")
    dur_ns = serializers.IntegerField(
        help_text="mean captured step (the step time is the job's step_time, a median)"
    )
    gap_ns = serializers.IntegerField(help_text="mean iteration gap")
    compute_ns = serializers.IntegerField(help_text="mean forward+backward compute span")
    tail_ns = serializers.IntegerField(help_text="mean iteration tail")
    comm_ns = serializers.IntegerField(help_text="mean communication kernel time per step")
    sync_wait_ns = serializers.IntegerField(help_text="mean wait for the slowest rank per step")
    start_ns = serializers.CharField()
    end_ns = serializers.CharField()
    comm_total_ns = serializers.IntegerField()
    overlap_ns = serializers.IntegerField()
    overlap_pct = serializers.FloatField(allow_null=True)


class SlowFindingSerializer(serializers.Serializer):
    scope = serializers.CharField(help_text="rank or node")
    key = serializers.CharField(help_text="the rank number or node name")
    metric = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]
    value_ns = serializers.IntegerField()
    median_ns = serializers.IntegerField()
    robust_z = serializers.FloatField(allow_null=True)
    ratio = serializers.FloatField(allow_null=True)


class SlowRuleSerializer(serializers.Serializer):
    robust_z_threshold = serializers.FloatField()
    mad_zero_ratio = serializers.FloatField()
    min_excess = serializers.FloatField()


class CollectiveRowSerializer(serializers.Serializer):
    collective = serializers.CharField()
    group_size = serializers.IntegerField(help_text="-1 when not recorded")
    ranks = serializers.IntegerField()
    count = serializers.IntegerField()
    total_ns = serializers.IntegerField()
    mean_ns = serializers.IntegerField()
    min_ns = serializers.IntegerField()
    max_ns = serializers.IntegerField()
    sized_ns = serializers.IntegerField()
    bytes = serializers.IntegerField()
    algbw_gbps = serializers.FloatField(allow_null=True)
    bus_factor = serializers.FloatField(allow_null=True)
    busbw_gbps = serializers.FloatField(allow_null=True)


class CollectiveRankSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    collective = serializers.CharField()
    count = serializers.IntegerField()
    total_ns = serializers.IntegerField()
    bytes = serializers.IntegerField()
    wait_ns = serializers.IntegerField(
        allow_null=True,
        help_text="time this rank's kernels waited for the last rank to join, summed over the "
        "calls matched across ranks; null when not derivable (one rank, or unequal call counts)",
    )
    max_wait_ns = serializers.IntegerField(allow_null=True)


class DeviceRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    node = serializers.CharField()
    device = serializers.IntegerField()
    name = serializers.CharField()
    memory_bytes = serializers.IntegerField(allow_null=True)
    peak_memory_bytes = serializers.IntegerField(allow_null=True)
    kernel_ns = serializers.IntegerField(help_text="kernel time: kernels only, no copies or sets")
    compute_ns = serializers.IntegerField()
    comm_ns = serializers.IntegerField()
    memory_ns = serializers.IntegerField(help_text="time in memory copies and sets")
    flops = serializers.IntegerField(allow_null=True)


class ClusterSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    window = WindowSerializer()
    totals = GpuTotalsSerializer()
    step_time = StepTimeSerializer()
    step = serializers.IntegerField(allow_null=True)
    steps = serializers.ListField(child=serializers.IntegerField())
    steps_inferred = serializers.BooleanField()
    ranks = RankRowSerializer(many=True)
    slow = SlowFindingSerializer(many=True)
    rule = SlowRuleSerializer()
    collectives = CollectiveRowSerializer(many=True)
    collective_ranks = CollectiveRankSerializer(many=True)
    devices = DeviceRowSerializer(many=True)


class JobRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    window = WindowSerializer(help_text="the comparison's window, as this job's captions name it")
    ranks = serializers.IntegerField()
    steps = serializers.IntegerField(help_text="steps summed over the ranks, in the window")
    rank_steps = serializers.IntegerField(
        help_text="what the job's totals are divided by: its steps summed over its ranks, a rank "
        "without steps counting as one"
    )


class DiffRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.CharField(help_text="added, removed or changed")
    count_a = serializers.IntegerField()
    count_b = serializers.IntegerField()
    total_ns_a = serializers.IntegerField()
    total_ns_b = serializers.IntegerField()
    delta_ns = serializers.IntegerField()
    delta_count = serializers.IntegerField()
    norm_ns_a = serializers.IntegerField(help_text="A's time per step per rank")
    norm_ns_b = serializers.IntegerField(help_text="B's time per step per rank")
    norm_delta_ns = serializers.IntegerField(help_text="change of the time per step per rank")


class DiffSectionSerializer(serializers.Serializer):
    added = serializers.IntegerField()
    removed = serializers.IntegerField()
    changed = serializers.IntegerField()
    total_delta_ns = serializers.IntegerField()
    norm_total_delta_ns = serializers.IntegerField(help_text="per step per rank")
    rows = DiffRowSerializer(many=True, help_text="largest change per step per rank first")


class StepStatsSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="steps summed over the ranks")
    mean_ns = serializers.IntegerField(allow_null=True)
    p50_ns = serializers.IntegerField(allow_null=True)
    p95_ns = serializers.IntegerField(allow_null=True)
    min_ns = serializers.IntegerField(allow_null=True)
    max_ns = serializers.IntegerField(allow_null=True)


class StepPairSerializer(serializers.Serializer):
    a = StepStatsSerializer()
    b = StepStatsSerializer()


class MetricPairSerializer(serializers.Serializer):
    metric = serializers.CharField()
    a = serializers.FloatField(allow_null=True, help_text="the job's total (or share)")
    b = serializers.FloatField(allow_null=True)
    norm_a = serializers.FloatField(
        allow_null=True,
        help_text="per step per rank; null where the figure is not a sum over ranks and steps",
    )
    norm_b = serializers.FloatField(allow_null=True)
    better = serializers.ChoiceField(
        choices=["lower"],
        allow_null=True,
        help_text="which way the normalised figure improves; null: no verdict",
    )


class RankPairSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    a_dur_ns = serializers.IntegerField()
    a_gap_ns = serializers.IntegerField()
    a_compute_ns = serializers.IntegerField()
    a_tail_ns = serializers.IntegerField()
    b_dur_ns = serializers.IntegerField()
    b_gap_ns = serializers.IntegerField()
    b_compute_ns = serializers.IntegerField()
    b_tail_ns = serializers.IntegerField()


class CompareSerializer(serializers.Serializer):
    """Both jobs in one window (``a.window.window`` = ``b.window.window``)."""

    a = JobRefSerializer()
    b = JobRefSerializer()
    kernels = DiffSectionSerializer()
    annotations = DiffSectionSerializer()
    steps = StepPairSerializer()
    metrics = MetricPairSerializer(many=True)
    ranks = RankPairSerializer(many=True)
