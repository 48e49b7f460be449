"""Shapes of the run history API: series, their runs, verdicts and webhook deliveries.

Times are integer nanoseconds; a cause's times are per step per rank.
"""

from django.core.validators import URLValidator
from rest_framework import serializers

from profiler_app.core.models import TrainingJob
from profiler_app.history.models import SERIES_NAME_MAX_CHARS, Series, WebhookDelivery


class SeriesSerializer(serializers.ModelSerializer):
    owner = serializers.CharField(
        source="owner.username", read_only=True, default=None, allow_null=True
    )
    run_count = serializers.IntegerField(read_only=True)
    baseline = serializers.PrimaryKeyRelatedField(
        queryset=TrainingJob.objects.all(),
        allow_null=True,
        required=False,
        help_text="The run every other run is judged against; null: each run's previous run "
        "that passed.",
    )
    baseline_name = serializers.CharField(
        source="baseline.name", read_only=True, default=None, allow_null=True
    )
    # A string, blank or an http(s) URL (a URLField with blank allowed is two overlapping
    # schemas for one value).
    webhook_url = serializers.CharField(
        allow_blank=True,
        required=False,
        max_length=1000,
        help_text="Where a regression is posted (Slack-compatible JSON); blank: nowhere.",
    )
    can_change = serializers.SerializerMethodField()

    class Meta:
        model = Series
        fields = [
            "id",
            "name",
            "owner",
            "created_at",
            "run_count",
            "baseline",
            "baseline_name",
            "step_threshold_pct",
            "alpha",
            "cause_min_pct",
            "precision_points",
            "webhook_url",
            "can_change",
        ]
        read_only_fields = ["id", "name", "owner", "created_at"]
        extra_kwargs = {
            "step_threshold_pct": {
                "help_text": "A run regresses when its median step grew by this much (%) …"
            },
            "alpha": {"help_text": "… and the U test's p-value is at most this."},
            "cause_min_pct": {
                "help_text": "A cause moves at least this share (%) of the baseline's median step."
            },
            "precision_points": {
                "help_text": "A precision's share of kernel time that grew by this many points "
                "is a cause."
            },
        }

    def get_can_change(self, series: Series) -> bool:
        return series.can_change(self.context["request"].user)

    def validate_webhook_url(self, url: str) -> str:
        if url:
            URLValidator(schemes=["http", "https"])(url)
        return url

    def validate_baseline(self, job: TrainingJob | None) -> TrainingJob | None:
        series = self.instance
        if job is not None and series is not None and not series.runs.filter(job=job).exists():
            raise serializers.ValidationError(
                f"Job {job.name!r} is not a run of series {series.name!r}.", code="not_in_series"
            )
        return job


class JobSeriesSerializer(serializers.Serializer):
    series = serializers.CharField(max_length=SERIES_NAME_MAX_CHARS, help_text="series name")
    series_id = serializers.IntegerField(read_only=True)
    chosen = serializers.BooleanField(
        read_only=True, help_text="false: named after the job, nobody chose it"
    )

    def validate_series(self, name: str) -> str:
        name = name.strip()
        if not name:
            raise serializers.ValidationError("A series needs a name.", code="blank")
        return name


class UTestSerializer(serializers.Serializer):
    name = serializers.CharField()
    u = serializers.FloatField()
    p_value = serializers.FloatField()
    method = serializers.CharField(help_text="exact, or asymptotic (normal, with ties)")
    n_baseline = serializers.IntegerField(help_text="baseline steps (all ranks)")
    n_run = serializers.IntegerField(help_text="run steps (all ranks)")


class CauseSerializer(serializers.Serializer):
    kind = serializers.CharField(
        help_text="kernel_grew, kernel_new, kernel_gone, operator_grew, operator_new, "
        "communication_exposed, host_wait or precision_mix"
    )
    name = serializers.CharField()
    baseline_ns = serializers.IntegerField(help_text="per step per rank")
    run_ns = serializers.IntegerField(help_text="per step per rank")
    delta_ns = serializers.IntegerField(help_text="per step per rank")
    step_share_pct = serializers.FloatField(help_text="delta as a share of the baseline's median")
    detail = serializers.CharField()
    extra = serializers.DictField()


class VerdictSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    job_name = serializers.CharField()
    series = serializers.CharField(allow_null=True)
    series_id = serializers.IntegerField(allow_null=True)
    baseline = serializers.IntegerField(allow_null=True)
    baseline_name = serializers.CharField(allow_null=True)
    status = serializers.CharField(
        help_text="regression, no_regression, unjudged (could not judge: see reason) or "
        "pending (not judged yet: parts being parsed)"
    )
    window = serializers.CharField()
    computed_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    threshold_pct = serializers.FloatField()
    alpha = serializers.FloatField()
    baseline_median_ns = serializers.IntegerField(allow_null=True)
    run_median_ns = serializers.IntegerField(allow_null=True)
    baseline_p95_ns = serializers.IntegerField(allow_null=True)
    run_p95_ns = serializers.IntegerField(allow_null=True)
    change_pct = serializers.FloatField(allow_null=True)
    test = UTestSerializer(allow_null=True)
    causes = CauseSerializer(many=True)


class CheckSerializer(serializers.Serializer):
    baseline = serializers.PrimaryKeyRelatedField(
        queryset=TrainingJob.objects.all(),
        required=False,
        allow_null=True,
        help_text="default: the series' baseline for this run",
    )
    threshold_pct = serializers.FloatField(
        required=False, min_value=0, max_value=1000, help_text="default: the series' setting"
    )


class NamedTimeSerializer(serializers.Serializer):
    name = serializers.CharField()
    ns_per_step = serializers.IntegerField()


class RankStepsSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    steps = serializers.IntegerField()
    p50_ns = serializers.IntegerField(help_text="median step")
    p95_ns = serializers.IntegerField()


class RunFiguresSerializer(serializers.Serializer):
    window = serializers.CharField()
    ranks = serializers.IntegerField()
    steps = serializers.IntegerField()
    rank_steps = serializers.IntegerField()
    step_p50_ns = serializers.IntegerField(allow_null=True)
    step_p95_ns = serializers.IntegerField(allow_null=True)
    step_per_rank = RankStepsSerializer(
        many=True, required=False, help_text="rank by rank; absent in figures stored before"
    )
    gpu_util_pct = serializers.FloatField(allow_null=True)
    kernel_ns_per_step = serializers.DictField(child=serializers.IntegerField())
    top_kernels = NamedTimeSerializer(many=True)
    top_operators = NamedTimeSerializer(many=True)


class SeriesRunSerializer(serializers.Serializer):
    job = serializers.IntegerField(source="job_id")
    job_name = serializers.CharField(source="job.name")
    created_at = serializers.DateTimeField(source="job.created_at")
    ran_at = serializers.DateTimeField(
        help_text="when the run ran: its process's start where a collector sent it, else its "
        "first event where its trace's clock says when, else its upload; runs are in this order"
    )
    job_status = serializers.CharField(source="job.status")
    is_baseline = serializers.BooleanField()
    figures = RunFiguresSerializer(allow_null=True, help_text="null until its parts are parsed")
    verdict_status = serializers.CharField(allow_null=True)
    verdict_baseline = serializers.IntegerField(allow_null=True)
    change_pct = serializers.FloatField(allow_null=True)


class DeliverySerializer(serializers.ModelSerializer):
    job_name = serializers.CharField(source="job.name", read_only=True)
    state = serializers.CharField(read_only=True, help_text="pending, delivered or failed")

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "job",
            "job_name",
            "baseline",
            "url",
            "payload",
            "state",
            "attempts",
            "last_status",
            "last_error",
            "created_at",
            "delivered_at",
        ]
        read_only_fields = fields
