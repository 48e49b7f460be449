"""Sizes of files and folders on this machine, and telling a full disk from other failures."""

import errno
import os
from pathlib import Path


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


DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# What the system says for them, which is all some libraries pass on: Arrow (in an OSError's
# message), DuckDB (in its own IOException).
DISK_FULL_MESSAGES = tuple(os.strerror(code) for code in DISK_FULL_ERRNOS)


def disk_full(exc: BaseException) -> bool:
    """``exc``, or an exception it was raised from or while handling, says the disk (or the
    user's quota) is full, whichever library raised it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return True
        if any(message in str(current) for message in DISK_FULL_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False
