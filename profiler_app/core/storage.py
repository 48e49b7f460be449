"""The data directory's layout: where each kind of file of a job lives, and what it weighs.

Core names the places (the Settings page measures them, retention previews what it frees);
each app removes its own files once their rows are deleted: core the raw uploads and the
unfinished uploads (``core.receivers``), the ingest the timeline stores (``ingest.receivers``).
Sizes are the files' lengths in bytes (what a deletion gives back, give or take the blocks of
the folders themselves).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

# MEDIA_ROOT/parts/<job id>/<sha256>-<name>: the files as uploaded.
RAW_FOLDER = "parts"
# MEDIA_ROOT/timeline/<job id>/<part id>/: each parsed part's timeline store and its index.
STORES_FOLDER = "timeline"


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)


def raw_dir(job_id: int) -> Path:
    return media_root() / RAW_FOLDER / str(job_id)


def stores_dir(job_id: int) -> Path:
    return media_root() / STORES_FOLDER / str(job_id)


def uploads_dir() -> Path:
    """Resumable uploads still arriving, one ``<upload id>.part`` file each."""
    return Path(settings.DATA_DIR) / "uploads"


def file_bytes(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def tree_bytes(path: Path) -> int:
    """The bytes of the files under ``path`` (0 when it does not exist); links not followed."""
    total = 0
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return file_bytes(path) if path.is_file() else 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                total += tree_bytes(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:  # removed while we looked
            continue
    return total


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_file(path: Path) -> None:
    """Removes a file, and its folder once that is empty (a job's raw folder, say)."""
    path.unlink(missing_ok=True)
    remove_if_empty(path.parent)


def remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or already gone
        folder.rmdir()


@dataclass(frozen=True)
class DiskUse:
    raw_bytes: int
    stores_bytes: int
    uploads_bytes: int
    total_bytes: int
    free_bytes: int
    capacity_bytes: int


def disk_use() -> DiskUse:
    """What the data directory holds, by kind, and the room left on its file system."""
    raw = tree_bytes(media_root() / RAW_FOLDER)
    stores = tree_bytes(media_root() / STORES_FOLDER)
    uploads = tree_bytes(uploads_dir())
    root = media_root()
    root.mkdir(parents=True, exist_ok=True)
    system = shutil.disk_usage(root)
    return DiskUse(
        raw_bytes=raw,
        stores_bytes=stores,
        uploads_bytes=uploads,
        total_bytes=raw + stores + uploads,
        free_bytes=system.free,
        capacity_bytes=system.total,
    )
