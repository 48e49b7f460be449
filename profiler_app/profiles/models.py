"""The read model of a profile: aggregates of parsed parts, and the catalog of their timeline
stores. The ingest writes these rows; the pages read them.

Every row belongs to one part (so re-parsing replaces exactly that part's rows) and carries the
job, node and rank it belongs to, so the pages that read a whole job filter on one index.

The tables keep the names the ingest app gave them (``db_table``): the models moved here without
moving any data.
"""

from pathlib import Path

from django.db import models

from profiler_app.core import storage
from profiler_app.core.models import Node, ProfilePart, TrainingJob
from profiler_app.traces.store_files import StoreFiles
from profiler_app.traces.window import IN_BOTH


class PartRows(models.Model):
    """Columns every aggregate row shares."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    part = models.ForeignKey(ProfilePart, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="+")
    rank = models.IntegerField()

    class Meta:
        abstract = True


class WindowedRows(PartRows):
    """Rows that count in one window or both (``traces.window``): the bits of
    ``IN_WHOLE_TRACE`` and ``IN_COMPLETE_STEPS``. Sums of a part with a complete-steps window
    have a row for each window; time-stamped rows are in both windows or the whole trace only.
    """

    windows = models.PositiveSmallIntegerField(default=IN_BOTH)

    class Meta:
        abstract = True


class PartSummary(PartRows):
    """Facts about one parsed part: its time span, event counts, trace metadata and store."""

    start_ns = models.BigIntegerField(null=True)
    end_ns = models.BigIntegerField(null=True)
    n_events = models.BigIntegerField(default=0)
    event_counts = models.JSONField(default=dict)
    metadata = models.JSONField(default=dict)
    # The timeline store's directory, relative to MEDIA_ROOT.
    store_path = models.CharField(max_length=500)
    # Where the part's complete steps end (its last profiler step's start); null when it has
    # fewer than two profiler steps and both windows are the whole part.
    last_step_start_ns = models.BigIntegerField(null=True)

    @property
    def store(self) -> StoreFiles:
        """The timeline store's files; nothing is fetched until one is asked for."""
        return storage.store_files(self.store_path)

    def fetch_store(self) -> Path:
        """The timeline store's folder on this machine with the store's own files, fetched from
        the bucket first where it is kept there (the whole store: ``store.file`` fetches one)."""
        return self.store.folder()

    class Meta:
        db_table = "ingest_partsummary"
        constraints = [models.UniqueConstraint(fields=["part"], name="summary_one_per_part")]
        indexes = [
            # Job summary endpoint.
            models.Index(fields=["job"], name="summary_job_idx"),
        ]


class TimelineTrack(PartRows):
    """One row (CPU thread or GPU stream) of a part's timeline store."""

    track = models.IntegerField()
    on_device = models.BooleanField()
    pid = models.BigIntegerField()
    tid = models.BigIntegerField()
    label = models.CharField(max_length=500)
    first_row = models.BigIntegerField()
    n_rows = models.BigIntegerField()
    start_ns = models.BigIntegerField(null=True)
    end_ns = models.BigIntegerField(null=True)
    max_dur_ns = models.BigIntegerField()

    class Meta:
        db_table = "ingest_timelinetrack"
        constraints = [
            models.UniqueConstraint(fields=["part", "track"], name="track_unique_per_part")
        ]
        indexes = [
            # Timeline tree of a job.
            models.Index(fields=["job", "node", "rank"], name="track_job_idx"),
        ]


class KernelStat(WindowedRows):
    """GPU kernels (and memcpy/memset, as HTA counts them) per device, name and precision."""

    device = models.SmallIntegerField()
    name = models.TextField()
    category = models.CharField(max_length=8)  # COMP, COMM, MEM, OTHER
    precision = models.CharField(max_length=16)
    count = models.BigIntegerField()
    total_ns = models.BigIntegerField()
    min_ns = models.BigIntegerField()
    max_ns = models.BigIntegerField()
    sum_sq_ns2 = models.FloatField()  # sum of squared durations, for the standard deviation

    class Meta:
        db_table = "ingest_kernelstat"
        indexes = [
            # Kernels endpoint and dashboard pies: one job, grouped by name.
            models.Index(fields=["job", "name"], name="kernel_job_name_idx"),
            # Re-parsing a part deletes its rows.
            models.Index(fields=["part"], name="kernel_part_idx"),
        ]


class GpuActivity(WindowedRows):
    """Time on each GPU in kernels, memcpy, memset and synchronisation."""

    device = models.SmallIntegerField()
    activity = models.CharField(max_length=16)
    count = models.BigIntegerField()
    total_ns = models.BigIntegerField()

    class Meta:
        db_table = "ingest_gpuactivity"
        indexes = [
            # GPU activity pie.
            models.Index(fields=["job", "activity"], name="activity_job_idx"),
            models.Index(fields=["part"], name="activity_part_idx"),
        ]


class MemoryOperation(WindowedRows):
    """Memory operations per GPU and kind ("Memcpy HtoD", "Memset"…), with bytes moved."""

    device = models.SmallIntegerField()
    operation = models.CharField(max_length=32)
    count = models.BigIntegerField()
    total_ns = models.BigIntegerField()
    bytes = models.BigIntegerField()

    class Meta:
        db_table = "ingest_memoryoperation"
        indexes = [
            # GPU memory operations pie.
            models.Index(fields=["job", "operation"], name="memop_job_idx"),
            models.Index(fields=["part"], name="memop_part_idx"),
        ]


class Step(WindowedRows):
    """A training step ("ProfilerStep#12", "step_12") of one rank."""

    step = models.BigIntegerField()
    name = models.CharField(max_length=255)
    start_ns = models.BigIntegerField()
    dur_ns = models.BigIntegerField()
    # Recorded by Kineto: every step of a trace file, a collector job's captured steps.
    captured = models.BooleanField(default=True)

    class Meta:
        db_table = "ingest_step"
        indexes = [
            # Step time histogram and per-rank step traces.
            models.Index(fields=["job", "rank", "step"], name="step_job_idx"),
            models.Index(fields=["part"], name="step_part_idx"),
        ]


class Annotation(WindowedRows):
    """One occurrence of a user annotation (Forward, Backward…), for custom histograms."""

    name = models.TextField()
    start_ns = models.BigIntegerField()
    dur_ns = models.BigIntegerField()

    class Meta:
        db_table = "ingest_annotation"
        indexes = [
            # "Create new histogram": durations of one annotation name across the job.
            models.Index(fields=["job", "name"], name="annotation_job_name_idx"),
            models.Index(fields=["part"], name="annotation_part_idx"),
        ]


class UtilizationPoint(WindowedRows):
    """A down-sampled point of a utilisation or counter series of one node and device.

    ``source`` says where it came from: "nvml"/"psutil" samples from the collector, or
    "kernel_busy" when GPU utilisation is derived from kernel times (imported traces).
    """

    metric = models.CharField(max_length=32)
    device = models.IntegerField()  # GPU index, CPU core, or -1 for the whole host
    source = models.CharField(max_length=16)
    name = models.CharField(max_length=255, blank=True)  # counters only
    time_ns = models.BigIntegerField()
    value = models.FloatField()

    class Meta:
        db_table = "ingest_utilizationpoint"
        indexes = [
            # Utilisation charts: one job and metric, per node and device, in time order.
            models.Index(
                fields=["job", "metric", "node", "device", "time_ns"], name="util_job_idx"
            ),
            models.Index(fields=["part"], name="util_part_idx"),
        ]


# Per-part aggregates of the cluster page, written by the ingest with the others (see
# ``profiler_app.analysis.cluster`` for what each number means).


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
        db_table = "ingest_stepbreakdown"
        indexes = [
            # Cluster page: one job, averaged per rank or one step.
            models.Index(fields=["job", "step"], name="breakdown_job_step_idx"),
            # Re-parsing a part deletes its rows.
            models.Index(fields=["part"], name="breakdown_part_idx"),
        ]


class StepSplit(WindowedRows):
    """Nanoseconds of one part's steps in the window (a collector part's captured steps) spent
    in one part of the Dashboard headline's breakdown (``traces.step_breakdown``:
    ``category`` is one of its ``PARTS``); a part's categories sum to its steps' time."""

    category = models.CharField(max_length=16)
    total_ns = models.BigIntegerField()

    class Meta:
        indexes = [
            # The Dashboard headline sums one job's rows per category.
            models.Index(fields=["job"], name="split_job_idx"),
            # Re-parsing a part deletes its rows.
            models.Index(fields=["part"], name="split_part_idx"),
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
        db_table = "ingest_collectivestat"
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
        db_table = "ingest_rankoverlap"
        constraints = [
            models.UniqueConstraint(fields=["part", "windows"], name="overlap_one_per_window")
        ]
        indexes = [
            # Cluster page per-rank table.
            models.Index(fields=["job"], name="overlap_job_idx"),
        ]


# The allocator's view of a part (``profiler_app.traces.memory``), over the whole trace:
# time-stamped peaks and events do not split into the complete-steps window.


class MemoryPoint(PartRows):
    """A down-sampled point of a device's allocated and reserved memory curve."""

    device_type = models.SmallIntegerField()  # c10 DeviceType: 0 CPU, 1 CUDA
    device_id = models.SmallIntegerField()
    time_ns = models.BigIntegerField()
    allocated = models.BigIntegerField()
    reserved = models.BigIntegerField()

    class Meta:
        db_table = "ingest_memorypoint"
        indexes = [
            # Memory page: one part's curves in time order.
            models.Index(
                fields=["part", "device_type", "device_id", "time_ns"], name="mempoint_part_idx"
            ),
        ]


class MemoryPeak(PartRows):
    """A device's highest allocated memory in one part, and the operators running then."""

    device_type = models.SmallIntegerField()
    device_id = models.SmallIntegerField()
    time_ns = models.BigIntegerField()
    allocated = models.BigIntegerField()
    reserved = models.BigIntegerField()
    events = models.BigIntegerField()  # [memory] events of this device
    running = models.JSONField(default=list)  # operator names, outermost first

    class Meta:
        db_table = "ingest_memorypeak"
        indexes = [
            models.Index(fields=["job", "allocated"], name="mempeak_job_idx"),
            models.Index(fields=["part"], name="mempeak_part_idx"),
        ]


class MemoryAllocator(PartRows):
    """An operator's allocations on one device, and what it still held at the peak."""

    device_type = models.SmallIntegerField()
    device_id = models.SmallIntegerField()
    name = models.TextField()
    allocations = models.BigIntegerField()
    allocated_bytes = models.BigIntegerField()
    held_count = models.BigIntegerField()
    held_bytes = models.BigIntegerField()

    class Meta:
        db_table = "ingest_memoryallocator"
        indexes = [
            models.Index(fields=["part", "device_type", "device_id"], name="memalloc_part_idx"),
        ]
