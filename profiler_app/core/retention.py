"""Retention: what goes once it is older than the Settings page's day counts (off by default).

``select`` is the one definition of what goes: the preview shows it, and ``apply`` (the daily
beat task) deletes exactly what it selects.

- Raw uploads (``retention_raw_days``): the uploaded file of a parsed part (state done) uploaded
  more than N days ago. Its parsed data stays: every page still shows it; reprocessing it says
  the raw file is gone.
- Jobs (``retention_jobs_days``): a job whose last activity is more than N days ago, with
  everything of it (``logic.delete_job``). Its last activity is the later of its creation and
  its newest part's upload: a job still receiving parts is active, and reading a job does not
  count (nothing records reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Max
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from profiler_app.core import logic, resumable, storage
from profiler_app.core.models import AppSettings, PartState, ProfilePart, TrainingJob, Upload


@dataclass(frozen=True)
class JobToDelete:
    id: int
    name: str
    owner: str | None
    last_activity_at: datetime
    bytes: int


@dataclass(frozen=True)
class RawFileToDelete:
    part: int
    job: int
    job_name: str
    file: str
    uploaded_at: datetime
    bytes: int


@dataclass(frozen=True)
class RetentionPlan:
    retention_raw_days: int | None
    retention_jobs_days: int | None
    jobs: tuple[JobToDelete, ...]
    raw_files: tuple[RawFileToDelete, ...]

    @property
    def total_bytes(self) -> int:
        return sum(j.bytes for j in self.jobs) + sum(r.bytes for r in self.raw_files)


def job_bytes(job_id: int) -> int:
    """What deleting the job frees: its raw files, timeline stores and unfinished uploads."""
    uploads = Upload.objects.filter(job_id=job_id)
    return (
        storage.job_raw_bytes(job_id)
        + storage.job_store_bytes(job_id)
        + sum(resumable.received_bytes(upload) for upload in uploads)
    )


def select(
    raw_days: int | None, jobs_days: int | None, now: datetime | None = None
) -> RetentionPlan:
    """What retention with these day counts deletes at ``now`` (None: that kind is kept)."""
    now = now or timezone.now()
    jobs: list[JobToDelete] = []
    if jobs_days:
        # Every job's newest part: a scan of the parts, once a day (and on a preview).
        old = (
            TrainingJob.objects.annotate(
                last_activity_at=Greatest(
                    "created_at", Coalesce(Max("parts__created_at"), "created_at")
                )
            )
            .filter(last_activity_at__lt=now - timedelta(days=jobs_days))
            .select_related("owner")
            .order_by("last_activity_at", "id")
        )
        jobs = [
            JobToDelete(
                id=job.pk,
                name=job.name,
                owner=job.owner.username if job.owner else None,
                last_activity_at=job.last_activity_at,
                bytes=job_bytes(job.pk),
            )
            for job in old
        ]
    raw_files: list[RawFileToDelete] = []
    if raw_days:
        parts = (
            ProfilePart.objects.filter(
                state=PartState.DONE, created_at__lt=now - timedelta(days=raw_days)
            )
            .exclude(file="")
            # A job that goes whole takes its raw files with it: listed once, with the job.
            .exclude(job_id__in=[job.id for job in jobs])
            .select_related("job")
            .order_by("created_at", "id")
        )
        raw_files = [
            RawFileToDelete(
                part=part.pk,
                job=part.job_id,
                job_name=part.job.name,
                file=part.original_name,
                uploaded_at=part.created_at,
                bytes=storage.raw_file_bytes(part.file.name or ""),
            )
            for part in parts
        ]
    return RetentionPlan(raw_days, jobs_days, tuple(jobs), tuple(raw_files))


def apply(now: datetime | None = None) -> RetentionPlan:
    """Deletes what the saved settings select now; returns that selection."""
    saved = AppSettings.load()
    plan = select(saved.retention_raw_days, saved.retention_jobs_days, now)
    for item in plan.raw_files:
        part = ProfilePart.objects.filter(pk=item.part).first()
        if part is not None:
            logic.remove_raw_file(part)
    for job in TrainingJob.objects.filter(pk__in=[item.id for item in plan.jobs]):
        logic.delete_job(job)
    return plan
