"""Schemas of the insights API (documentation for the OpenAPI types of the frontend)."""

from rest_framework import serializers

from profiler_app.insights.models import InsightsStatus
from profiler_app.insights.summaries import MAX_TABLE_ROWS
from profiler_app.profiles.serializers import KernelTotalsSerializer, WindowSerializer

# Plain text, not an enum: "status" enums of other components would collide in the schema.
STATUS_HELP = ", ".join([*InsightsStatus.values, "no_data"])


class TimeRangeSerializer(serializers.Serializer):
    start_ns = serializers.IntegerField()
    end_ns = serializers.IntegerField()
    node = serializers.CharField(allow_blank=True)
    device = serializers.IntegerField()
    # Reports computed before trace findings existed have neither.
    rank = serializers.IntegerField(required=False, help_text="the rank, or -1")
    event = serializers.CharField(
        required=False, allow_blank=True, help_text='"<part id>:@<store row>" of the event, or ""'
    )
    timeline_url = serializers.CharField()


class RuleResultSerializer(serializers.Serializer):
    rule = serializers.CharField()
    description = serializers.CharField()
    status = serializers.CharField(help_text="issue_found, no_issue or not_evaluated")
    triggered = serializers.BooleanField()
    evaluated = serializers.IntegerField()
    trigger_count = serializers.IntegerField()
    violations = serializers.IntegerField()
    datapoints = serializers.IntegerField()
    not_evaluated_reason = serializers.CharField(allow_null=True)
    recommendation = serializers.CharField()
    caused_by = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="the rule whose finding explains this one (pageable copies starving an "
        "under-used GPU), or null",
    )
    params = serializers.DictField()
    evidence = serializers.DictField()
    time_ranges = TimeRangeSerializer(many=True)


class ReportSummarySerializer(serializers.Serializer):
    issue_found = serializers.ListField(child=serializers.CharField())
    no_issue = serializers.ListField(child=serializers.CharField())
    not_evaluated = serializers.ListField(child=serializers.CharField())


class ReportSerializer(serializers.Serializer):
    job = serializers.CharField()
    origin_ns = serializers.IntegerField(allow_null=True)
    overrides = serializers.DictField()
    summary = ReportSummarySerializer()
    rules = RuleResultSerializer(many=True)
    recommendations = RuleResultSerializer(
        many=True, required=False, help_text="Recommendations read from the trace"
    )


class InsightsSerializer(serializers.Serializer):
    status = serializers.CharField(help_text=STATUS_HELP)
    computed_at = serializers.DateTimeField(allow_null=True)
    requested_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()
    report = ReportSerializer(allow_null=True)
    temporal = serializers.ListField(child=serializers.DictField())
    window = WindowSerializer(allow_null=True, help_text="The window these results cover")


class ParameterSerializer(serializers.Serializer):
    name = serializers.CharField()
    key = serializers.CharField(help_text="<Rule>_<parameter>, the key to override it")
    type = serializers.CharField()
    default = serializers.JSONField(allow_null=True)
    value = serializers.JSONField(allow_null=True)


class RuleParametersSerializer(serializers.Serializer):
    rule = serializers.CharField()
    description = serializers.CharField()
    parameters = ParameterSerializer(many=True)


class ParametersSerializer(serializers.Serializer):
    overrides = serializers.DictField()
    rules = RuleParametersSerializer(many=True)


EVERY_ROW = (
    f"every row, the most time first (past {MAX_TABLE_ROWS:,} rows, the {MAX_TABLE_ROWS:,} "
    "with the most time: compare with the *_total field)"
)


class AnalysesSerializer(serializers.Serializer):
    status = serializers.CharField(help_text=STATUS_HELP)
    computed_at = serializers.DateTimeField(allow_null=True)
    temporal = serializers.ListField(child=serializers.DictField())
    kernel_types = serializers.ListField(child=serializers.DictField())
    kernels = serializers.ListField(child=serializers.DictField(), help_text=EVERY_ROW)
    kernels_total = serializers.IntegerField(help_text="rows of the whole kernel table")
    window = WindowSerializer(allow_null=True, help_text="The window these results cover")
    totals = KernelTotalsSerializer(
        allow_null=True, help_text="The GPU figures of the kernel table (see /api/glossary/)"
    )
    top_kernels = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="HTA's kernel breakdown: the top num_kernels of each rank and type covering "
        'duration_ratio of its time, the rest as one "others" row',
    )
    overlap = serializers.ListField(child=serializers.DictField())
    idle = serializers.ListField(child=serializers.DictField())
    idle_intervals = serializers.ListField(child=serializers.DictField())
    memory_bandwidth = serializers.ListField(child=serializers.DictField())
    memory_bandwidth_summary = serializers.ListField(child=serializers.DictField())
    queue_length = serializers.ListField(child=serializers.DictField())
    queue_length_summary = serializers.ListField(child=serializers.DictField())
    launch_stats = serializers.ListField(child=serializers.DictField())
    launch_findings = serializers.ListField(child=serializers.DictField())
    operators = serializers.ListField(child=serializers.DictField(), help_text=EVERY_ROW)
    operators_total = serializers.IntegerField(help_text="rows of the whole operator table")
    input_shapes_recorded = serializers.BooleanField(
        help_text="whether the trace recorded operators' input shapes (record_shapes=True)"
    )
    operators_by_shape = serializers.ListField(
        child=serializers.DictField(),
        help_text=f"operators per name and input shapes; {EVERY_ROW}",
    )
    operators_by_shape_total = serializers.IntegerField(
        help_text="rows of the whole by-shape operator table"
    )
