"""Per-part aggregates of the cluster page, written by the ingest next to its own (see
``profiler_app.cluster.analysis`` for what each number means)."""

from django.db import models

from profiler_app.core.models import TrainingJob
from profiler_app.ingest.models import WindowedRows


class StepBreakdown(WindowedRows):
    """One step of one rank: iteration gap, forward+backward compute and iteration tail."""

    step = models.BigIntegerField()
    inferred = models.BooleanField(default=False)  # no step annotations: the whole trace
    start_ns = models.BigIntegerField()
    dur_ns = models.BigIntegerField()
    gap_ns = models.BigIntegerField()
    compute_ns = models.BigIntegerField()
    tail_ns = models.BigIntegerField()
    compute_busy_ns = models.BigIntegerField()
    comm_ns = models.BigIntegerField()

    class Meta:
        indexes = [
            # Cluster page: one job, averaged per rank or one step.
            models.Index(fields=["job", "step"], name="breakdown_job_step_idx"),
            # Re-parsing a part deletes its rows.
            models.Index(fields=["part"], name="breakdown_part_idx"),
        ]


class CollectiveStat(WindowedRows):
    """Communication kernels of one rank per collective and group size."""

    collective = models.CharField(max_length=64)
    group_size = models.IntegerField()  # -1: not recorded
    count = models.BigIntegerField()
    total_ns = models.BigIntegerField()
    min_ns = models.BigIntegerField()
    max_ns = models.BigIntegerField()
    sized_count = models.BigIntegerField()  # calls whose message size the trace records
    sized_ns = models.BigIntegerField()
    bytes = models.BigIntegerField()

    class Meta:
        indexes = [
            # Cluster page collectives table and rank × collective heat map.
            models.Index(fields=["job", "collective"], name="collective_job_idx"),
            models.Index(fields=["part"], name="collective_part_idx"),
        ]


class RankOverlap(WindowedRows):
    """Communication kernel time of one part and how much of it overlaps computation."""

    comm_ns = models.BigIntegerField()
    overlap_ns = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["part", "windows"], name="overlap_one_per_window")
        ]
        indexes = [
            # Cluster page per-rank table.
            models.Index(fields=["job"], name="overlap_job_idx"),
        ]


class CollectiveWait(models.Model):
    """How long one rank waited for the others in one collective, over the calls matched across
    the job's ranks. A job-level result: rewritten whenever the job's insights are recomputed."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    rank = models.IntegerField()
    collective = models.CharField(max_length=64)
    calls = models.BigIntegerField()
    wait_ns = models.BigIntegerField()
    max_wait_ns = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "rank", "collective"], name="wait_one_per_rank")
        ]
