"""What the data directory holds, to compare before and after: every file under MEDIA_ROOT with
its size (the worker's log, which the tests' Celery worker writes there, left out)."""

from pathlib import Path

from django.conf import settings

from profiler_app.core.storage import uploads_dir

WORKER_LOG = "celery-worker.log"


def data_files() -> dict[str, int]:
    root = Path(settings.MEDIA_ROOT)
    return {
        str(path.relative_to(root)): path.stat().st_size
        for path in root.rglob("*")
        if path.is_file() and path.name != WORKER_LOG
    }


def data_bytes() -> int:
    return sum(data_files().values())


def upload_file(upload) -> Path:
    """Where an unfinished upload's bytes lie in the data directory."""
    return uploads_dir() / f"{upload.pk}.part"
