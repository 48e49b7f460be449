"""What the data directory holds, to compare before and after: every file under MEDIA_ROOT with
its size (the worker's log, which the tests' Celery worker writes there, left out); and a small
real filesystem to fill up."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from profiler_app.core.storage import uploads_dir
from tests.conftest import wait_for_worker_at_rest

WORKER_LOG = "celery-worker.log"


def data_files() -> dict[str, int]:
    """Counted once the run's worker is at rest (``wait_for_worker_at_rest``)."""
    wait_for_worker_at_rest()
    root = Path(settings.MEDIA_ROOT)
    return {
        str(path.relative_to(root)): path.stat().st_size
        for path in root.rglob("*")
        if path.is_file() and path.name != WORKER_LOG
    }


def data_bytes() -> int:
    return sum(data_files().values())


def insights_settled(job_id: int) -> bool:
    """The worker has written all it will for the job's insights: every run requested is over,
    and each rank's result is kept in both windows (``insights.rank_results``, with the job's
    stores): a parse's ``prepare_rank`` reads its rank in both, where the job's run needs only
    its own window. A ``prepare_rank`` still queued then finds them kept and writes nothing; one
    that read the rank meanwhile writes the same bytes under the same name. Wait for this before
    counting a parsed job's files."""
    from profiler_app.core.models import PartState, ProfilePart
    from profiler_app.insights.models import InsightsStatus, JobInsights

    ranks = set(
        ProfilePart.objects.filter(job_id=job_id, state=PartState.DONE).values_list(
            "rank", flat=True
        )
    )
    runs = list(JobInsights.objects.filter(job_id=job_id).values_list("window", "status"))
    if ranks and not runs:
        return False  # not asked for yet
    if any(status not in (InsightsStatus.DONE, InsightsStatus.FAILED) for _, status in runs):
        return False
    from profiler_app.core.storage import kept_key
    from profiler_app.traces.window import WINDOWS

    kept = Path(settings.MEDIA_ROOT) / kept_key(job_id, "")
    return all(
        any((kept / f"rank-{rank}" / window).glob("*.pickle"))
        for window in WINDOWS
        for rank in ranks
    )


def upload_file(upload) -> Path:
    """Where an unfinished upload's bytes lie in the data directory."""
    return uploads_dir() / f"{upload.pk}.part"


class SmallDisk:
    """A real filesystem of ``size_bytes`` (a tmpfs mounted at ``root``) that can be filled to
    within a few bytes of its end: a full disk as the server meets it, ENOSPC included."""

    FILLER = ".filler"

    def __init__(self, root: Path, size_bytes: int) -> None:
        self.root = root
        self.size_bytes = size_bytes

    def __enter__(self) -> SmallDisk:
        self.root.mkdir(parents=True, exist_ok=True)
        mounted = subprocess.run(
            [
                "mount",
                "-t",
                "tmpfs",
                "-o",
                f"size={self.size_bytes},mode=0700",
                "tmpfs",
                str(self.root),
            ],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:
            pytest.skip(f"a small filesystem cannot be mounted here: {mounted.stderr.strip()}")
        return self

    def __exit__(self, *exc_info) -> None:
        # Lazily: a file the test left open must not keep the mount (the tmpfs goes with it).
        subprocess.run(["umount", "--lazy", str(self.root)], check=True)

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def fill(self, leave_bytes: int = 0) -> None:
        """Takes all the room but ``leave_bytes`` (rounded down to whole pages)."""
        filler = self.root / self.FILLER
        taken = filler.stat().st_size if filler.exists() else 0
        room = taken + self.free_bytes() - leave_bytes
        with filler.open("ab") as out:
            out.truncate(0)
            if room > 0:
                os.posix_fallocate(out.fileno(), 0, room)

    def free(self) -> None:
        (self.root / self.FILLER).unlink(missing_ok=True)

    def files(self) -> dict[str, int]:
        """Every file on it but the filler, with its size."""
        return {
            str(path.relative_to(self.root)): path.stat().st_size
            for path in self.root.rglob("*")
            if path.is_file() and path.name != self.FILLER
        }
