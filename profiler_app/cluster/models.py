"""Job-level results of the cluster page, rewritten whenever the job's insights are computed.
The per-part rows it reads (step breakdowns, collectives, overlap) are the read model's
(``profiler_app.profiles.models``), which the ingest writes."""

from django.db import models

from profiler_app.core.models import TrainingJob
from profiler_app.traces.window import IN_BOTH


class CollectiveWait(models.Model):
    """How long one rank waited for the others in one collective, over the calls matched across
    the job's ranks in a window (``windows``, as the ingest's rows say it): the Cluster page reads
    the job's window, so switching it needs no recomputation. A job-level result: rewritten
    whenever the job's insights are recomputed."""

    job = models.ForeignKey(TrainingJob, on_delete=models.CASCADE, related_name="+")
    rank = models.IntegerField()
    collective = models.CharField(max_length=64)
    calls = models.BigIntegerField()
    wait_ns = models.BigIntegerField()
    max_wait_ns = models.BigIntegerField()
    windows = models.PositiveSmallIntegerField(default=IN_BOTH)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "windows", "rank", "collective"], name="wait_one_per_rank"
            )
        ]
