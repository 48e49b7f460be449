"""Workflows over the core models: storing uploaded parts, loading profiles, recording activity."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.files import File
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import get_valid_filename
from kombu.exceptions import OperationalError

from profiler_app.celery import app as celery_app
from profiler_app.core import resumable, storage
from profiler_app.core.models import (
    SENDING,
    AppSettings,
    DeletedJob,
    JobStatus,
    JobWindowChoice,
    LoadedProfile,
    Node,
    PartKind,
    PartState,
    ProfilePart,
    TrainingJob,
    Upload,
)
from profiler_app.core.signals import job_window_changed
from tracefmt.chunk import ChunkFormatError, chunk_written_at

log = logging.getLogger(__name__)

COPY_CHUNK_BYTES = 4 * 1024 * 1024


class AlreadyLoaded(Exception):
    def __init__(self, job: TrainingJob) -> None:
        super().__init__(job.name)
        self.job = job


class UploadRangeError(ValueError):
    pass


@dataclass(frozen=True)
class PartSource:
    """Who sent a part: the node, rank and process it belongs to."""

    node_name: str
    rank: int
    kind: str
    original_name: str
    pid: int | None = None
    hostname: str = ""


def sha256_of(stream: BinaryIO) -> str:
    stream.seek(0)
    digest = hashlib.sha256()
    while chunk := stream.read(COPY_CHUNK_BYTES):
        digest.update(chunk)
    stream.seek(0)
    return digest.hexdigest()


def enqueue_ingest(part_id: int) -> None:
    """Queue the part's parsing once the transaction commits."""
    transaction.on_commit(lambda: send_ingest(part_id))


# Queued by name: the ingest sits above core, which imports none of the apps above it.
INGEST_TASK = "profiler_app.ingest.tasks.ingest_part"


def send_ingest(part_id: int) -> None:
    """Queue the part's parsing now. The part is already stored: if the broker is down, the
    ingest sweep queues it later, so the caller still succeeds."""
    try:
        celery_app.send_task(INGEST_TASK, args=[part_id])
    except OperationalError as exc:
        log.warning("Could not queue part %s (the ingest sweep will): %s", part_id, exc)


def stored_file_name(original: str) -> str:
    """A name safe to keep on disk for an uploaded file: its last path component, whichever
    separator the sender's system uses ("C:\\traces\\rank0.json"), in plain characters."""
    last = original.replace("\\", "/").rsplit("/", 1)[-1]
    try:
        name = get_valid_filename(last).lstrip(".")
    except SuspiciousFileOperation:  # nothing left of it ("..")
        name = ""
    return name[-100:] or "trace"


def store_part(job: TrainingJob, source: PartSource, stream: BinaryIO) -> tuple[ProfilePart, bool]:
    """Keeps the raw file and queues its parsing; returns (part, created).

    The same content sent twice to one job yields the existing part, so retries never duplicate;
    a retry of a part still waiting to be parsed queues it again (its first queueing may have
    been lost), and a duplicate message is harmless: only one task claims the part.
    """
    digest = sha256_of(stream)
    size = stream.seek(0, 2)
    stream.seek(0)

    def keep_file(part: ProfilePart) -> None:
        part.file.save(stored_file_name(source.original_name), File(stream), save=False)

    return _new_part(job, source, digest, size, keep_file)


def _existing_part(job: TrainingJob, digest: str) -> ProfilePart | None:
    """The job's part of this content, queued again while it waits to be parsed (its first
    queueing may have been lost; only one task claims the part)."""
    existing = ProfilePart.objects.filter(job=job, sha256=digest).first()
    if existing is not None and existing.state == PartState.PENDING:
        send_ingest(existing.pk)
    return existing


def _new_part(
    job: TrainingJob, source: PartSource, digest: str, size: int, keep_file
) -> tuple[ProfilePart, bool]:
    """Stores the part of this content unless the job has it (``keep_file`` gives the new
    part its file, unsaved); returns (part, created)."""
    existing = _existing_part(job, digest)
    if existing is not None:
        return existing, False
    part = ProfilePart(
        job=job,
        rank=source.rank,
        pid=source.pid,
        kind=source.kind,
        original_name=source.original_name[:255],
        size_bytes=size,
        sha256=digest,
    )
    try:
        with transaction.atomic():
            part.node, _ = Node.objects.get_or_create(
                job=job, name=source.node_name, defaults={"hostname": source.hostname}
            )
            keep_file(part)
            part.save()
            enqueue_ingest(part.id)
    except IntegrityError:
        # A concurrent request stored the same content first: the file kept for it goes.
        if part.file.name:
            storage.remove_raw_file(part.file.name)
        return ProfilePart.objects.get(job=job, sha256=digest), False
    return part, True


def append_to_upload(upload: Upload, start: int, stream: BinaryIO, length: int) -> int:
    """Appends one byte range; a range that does not continue the file is refused. The
    upload's row is locked meanwhile, so two requests sending the same range (a client retry
    racing its first try) cannot both be accepted."""
    with transaction.atomic():
        locked = Upload.objects.select_for_update().filter(pk=upload.pk).first()
        if locked is None:
            raise UploadRangeError("the upload was cancelled")
        if start != locked.received_bytes:
            raise UploadRangeError(
                f"expected the range to start at byte {locked.received_bytes}, got {start}"
            )
        if start + length > locked.size_bytes:
            raise UploadRangeError(
                f"range ends at byte {start + length}, beyond the declared size {locked.size_bytes}"
            )
        name = stored_file_name(locked.original_name)
        try:
            resumable.write_range(locked, start, stream, length, name)
        except resumable.RangeEndedEarly as exc:
            raise UploadRangeError(str(exc)) from None
        locked.received_bytes = start + length
        locked.last_byte_at = timezone.now()
        locked.save(update_fields=["received_bytes", "last_byte_at", *resumable.ROW_FIELDS])
    upload.received_bytes = locked.received_bytes
    return upload.received_bytes


def complete_upload(upload: Upload) -> tuple[ProfilePart, bool]:
    """The upload's file, every byte arrived, becomes the part's as it lies (a rename, or the
    bucket joining its parts): nothing is copied. Its row is locked meanwhile, so a retry of
    the completion waits and then finds it gone."""
    with transaction.atomic():
        locked = Upload.objects.select_for_update().filter(pk=upload.pk).first()
        if locked is None:
            raise UploadRangeError("the upload was cancelled")
        if locked.received_bytes != locked.size_bytes:
            raise UploadRangeError(
                f"only {locked.received_bytes} of {locked.size_bytes} bytes have arrived"
            )
        try:
            arrived = resumable.finish(locked, stored_file_name(locked.original_name))
        except FileNotFoundError:
            raise UploadRangeError("the upload was cancelled") from None
        source = PartSource(
            node_name=locked.node_name,
            rank=locked.rank,
            kind=locked.kind,
            original_name=locked.original_name,
            pid=locked.pid,
            hostname=locked.hostname,
        )

        def keep_file(part: ProfilePart) -> None:
            if arrived.path is not None:
                linked = storage.LinkedFile(arrived.path)
                part.file.save(stored_file_name(source.original_name), linked, save=False)
            else:
                part.file.name = arrived.key

        part, created = _new_part(locked.job, source, arrived.sha256, arrived.size, keep_file)
        if not created:
            resumable.discard(arrived)
        # Its bytes are the part's file now: the row's removal must leave them.
        locked.bucket_key = ""
        locked.delete()
    resumable.remove(upload.pk)  # now, not only once a transaction around this commits
    return part, created


def abandon_upload(upload: Upload) -> None:
    """The sender cancelled: its bytes and row go. The row lock waits for a range being
    written, so no write lands after the file is gone."""
    with transaction.atomic():
        locked = Upload.objects.select_for_update().filter(pk=upload.pk).first()
        if locked is not None:
            resumable.remove(locked.pk, locked.bucket_key)
            locked.delete()


@dataclass(frozen=True)
class UploadsEnded:
    """What ending a job's unfinished uploads did: parts stored and uploads dropped."""

    stored: int
    dropped: int


def finish_uploads(job: TrainingJob) -> UploadsEnded:
    """The owner ends a job whose uploads stopped: each upload whose every byte arrived becomes
    a part (a trace cut short is no trace, so the others are dropped), and a job still marked
    as being sent is marked as ended (Completed when it has parts, else Stopped)."""
    stored = dropped = 0
    for upload in Upload.objects.filter(job=job).order_by("created_at"):
        try:
            complete_upload(upload)
            stored += 1
        except UploadRangeError:
            abandon_upload(upload)
            dropped += 1
    has_parts = ProfilePart.objects.filter(job=job).exists()
    end_sending(job, JobStatus.COMPLETED if has_parts else JobStatus.STOPPED)
    return UploadsEnded(stored=stored, dropped=dropped)


def abandon_uploads(job: TrainingJob) -> UploadsEnded:
    """The owner gives up a job's unfinished uploads: what arrived of them is deleted, and a
    job still marked as being sent is marked Stopped."""
    dropped = 0
    for upload in Upload.objects.filter(job=job):
        abandon_upload(upload)
        dropped += 1
    end_sending(job, JobStatus.STOPPED)
    return UploadsEnded(stored=0, dropped=dropped)


def end_silent_jobs(now: datetime | None = None) -> int:
    """Collector jobs still marked as being sent whose last chunk (and last uploaded byte) is
    older than ``COLLECTOR_SILENCE_MINUTES``: their process ended without a final status
    (killed, crashed, or a spool flushed later). Each ends as Stopped as of the last chunk its
    processes recorded (``last_recorded_at``), saying why, and is then judged like any other
    (its save tells the run history). Returns how many ended."""
    now = now or timezone.now()
    minutes = settings.COLLECTOR_SILENCE_MINUTES
    cutoff = now - timedelta(minutes=minutes)
    silent = (
        TrainingJob.objects.filter(status__in=SENDING, parts__kind="collector")
        .annotate(last_part_at=Max("parts__created_at"))
        .filter(last_part_at__lt=cutoff)
        .exclude(uploads__last_byte_at__gte=cutoff)
        .values_list("pk", "last_part_at")
    )
    ended = 0
    for pk, last_part_at in silent:
        recorded_at = last_recorded_at(pk)
        with transaction.atomic():
            job = TrainingJob.objects.select_for_update().filter(pk=pk, status__in=SENDING).first()
            if job is None:
                continue  # its sender spoke meanwhile
            job.status = JobStatus.STOPPED
            job.ended_at = min(recorded_at or last_part_at, last_part_at)
            job.end_reason = (
                f"ended without a final status: nothing received for {minutes:g} min after "
                f"{last_part_at:%Y-%m-%d %H:%M} UTC"
            )
            if last_part_at - job.ended_at >= timedelta(minutes=1):
                job.end_reason += f"; its last chunk was recorded {job.ended_at:%Y-%m-%d %H:%M} UTC"
            job.save(update_fields=["status", "ended_at", "end_reason"])
            ended += 1
    return ended


def last_recorded_at(job_id: int) -> datetime | None:
    """When the job's processes last recorded anything: the newest creation time among each
    process's last chunk (its meta's ``created_ns``). A spool flushed days after its process
    died ended then, not at the flush. None when no chunk can be read."""
    latest = (
        ProfilePart.objects.filter(job_id=job_id, kind=PartKind.COLLECTOR)
        .order_by("node_id", "pid", "-created_at")
        .distinct("node_id", "pid")
        .values_list("file", flat=True)
    )
    written = []
    for name in latest:
        try:
            with storage.raw_file_on_disk(name) as path:
                written.append(chunk_written_at(path))
        except (ChunkFormatError, OSError, storage.StorageError):
            continue  # gone with the retention, or unreadable: the others (or arrival) tell
    return max(written, default=None)


def with_status(job: TrainingJob, status: str, given: dict) -> dict:
    """What else changes when the sender or the owner sets ``status``: the reason the server
    gave for ending it goes; a job reopened (back to being sent) has not ended; one ended
    without a time (the owner's End) ends now."""
    changes: dict = {"end_reason": ""}
    if status in SENDING:
        changes["ended_at"] = None
    elif "ended_at" not in given and job.ended_at is None:
        changes["ended_at"] = timezone.now()
    return changes


def end_sending(job: TrainingJob, status: str) -> None:
    """Marks a job still being sent as ended; a status the sender set is kept."""
    ended = TrainingJob.objects.filter(pk=job.pk, status__in=SENDING).update(
        status=status, ended_at=timezone.now()
    )
    if ended:
        job.status = status


def remove_abandoned_uploads() -> int:
    """Resumable uploads that no byte reached for ``UPLOAD_ABANDON_HOURS``: their rows and temp
    files, temp files left without a row, and raw files a killed process left half written.
    Returns how many files and rows went."""
    cutoff = timezone.now() - timedelta(hours=settings.UPLOAD_ABANDON_HOURS)
    removed = 0
    stored = resumable.stored()
    for upload in Upload.objects.filter(created_at__lt=cutoff).order_by("created_at"):
        if stored.get(str(upload.pk), 0.0) >= cutoff.timestamp():
            continue  # bytes arrived lately: still going
        resumable.remove(upload.pk, upload.bucket_key)
        stored.pop(str(upload.pk), None)
        upload.delete()
        removed += 1
    known = {str(pk) for pk in Upload.objects.values_list("pk", flat=True)}
    for upload_id, last_write in stored.items():
        if upload_id not in known and last_write < cutoff.timestamp():
            resumable.remove_unknown(upload_id)
            removed += 1
    return removed + storage.remove_stale_raw_writes(cutoff.timestamp())


def reset_part_for_reprocess(part: ProfilePart) -> None:
    ProfilePart.objects.filter(pk=part.pk).update(
        state=PartState.PENDING,
        error="",
        progress=0.0,
        parse_attempts=0,
        started_at=None,
        finished_at=None,
        updated_at=timezone.now(),
    )
    enqueue_ingest(part.pk)


def delete_job(job: TrainingJob, deleted_by=None) -> None:
    """Deletes a job and everything of it: its rows cascade (its parts, nodes, unfinished
    uploads, whoever had it loaded has it unloaded), and once that commits each app's receiver
    of ``post_delete`` removes the files it keeps for them (core.receivers: the raw files and
    unfinished uploads; ingest.receivers: the timeline stores). The admin deletes through here.
    A ``DeletedJob`` row keeps who deleted it (``deleted_by``; None: the server's retention).
    """
    with transaction.atomic():
        # A parse storing its results holds its part's lock while it writes rows of the job:
        # wait for it here, or those rows would land after ours are gone (a foreign-key error).
        list(ProfilePart.objects.select_for_update().filter(job=job).values_list("pk", flat=True))
        DeletedJob.objects.update_or_create(
            id=job.pk, defaults={"name": job.name, "deleted_by": deleted_by}
        )
        job.delete()


def deleted_job(job_id: str) -> DeletedJob | None:
    """The record of the deleted job ``job_id`` (an id as a URL gives it), or None."""
    if not job_id.isdigit():
        return None
    return DeletedJob.objects.select_related("deleted_by").filter(pk=int(job_id)).first()


def delete_part(part: ProfilePart) -> None:
    """Deletes one part (the admin's way); its files go as with a job (``delete_job``)."""
    with transaction.atomic():
        if ProfilePart.objects.select_for_update().filter(pk=part.pk).exists():
            part.delete()


def remove_raw_file(part: ProfilePart) -> bool:
    """Deletes the raw file of a parsed part, keeping its parsed data (raw-upload retention).
    A part being reprocessed meanwhile keeps its file; True when the file went."""
    name = part.file.name
    if not name:
        return False
    with transaction.atomic():
        cleared = ProfilePart.objects.filter(pk=part.pk, state=PartState.DONE, file=name).update(
            file=""
        )
        if cleared:
            transaction.on_commit(lambda: storage.remove_raw_file(name))
    return bool(cleared)


def choose_window(user, job: TrainingJob, window: str) -> None:
    """``user`` views ``job`` in ``window``. Its owner (or staff) changes the job's window, the
    default of everyone who has not chosen; anyone else chooses their own, without touching the
    job (choosing the default again follows the owner's from then on)."""
    mine = JobWindowChoice.objects.filter(user=user, job=job)
    if not job.can_change(user):
        if window == job.window:
            mine.delete()
        else:
            JobWindowChoice.objects.update_or_create(
                user=user, job=job, defaults={"window": window}
            )
        return
    mine.delete()
    if job.window != window:
        job.window = window
        job.save(update_fields=["window"])
        job_window_changed.send(sender=TrainingJob, job=job)


def load_profile(user, job: TrainingJob) -> LoadedProfile:
    """One loaded profile per user; loading another requires unloading first."""
    with transaction.atomic():
        current = LoadedProfile.objects.select_for_update().filter(user=user).first()
        if current is not None:
            if current.job_id == job.id:
                return current
            raise AlreadyLoaded(current.job)
        return LoadedProfile.objects.create(user=user, job=job)


def record_user_activity() -> None:
    """Marks the server as used by a person now (the idle auto-shutdown reads this)."""
    AppSettings.objects.update_or_create(pk=1, defaults={"last_activity_at": timezone.now()})
