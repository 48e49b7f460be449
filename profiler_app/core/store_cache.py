"""This machine's cache of timeline-store files kept in the bucket (STORE_CACHE_DIR), bounded
to STORE_CACHE_BYTES, least recently used stores evicted first.

A store in the bucket never changes (a new parse writes a new one under a new key), so a cached
file is never stale. Each cached store is a folder named by its key with a ``.used`` file whose
time is the store's last use; every process of the machine shares the folder. A file arrives
whole (downloaded to a temp name, then renamed), so a reader never sees half of one. A store
used within the last GRACE_S is never evicted: a reader may be about to open its files (an
evicted file it already opened stays readable).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

from django.conf import settings

from profiler_app.core.bucket import bucket
from profiler_app.lib.disk import tree_bytes

USED = ".used"
COMPLETE = ".complete"  # the store's own files (not its subfolders') are all here
GRACE_S = 120.0
TOUCH_EVERY_S = 10.0
FETCH_THREADS = 16

_touched: dict[Path, float] = {}
_evict_lock = threading.Lock()
# Bytes this process fetched since it last looked at the cache's size: looking walks every
# cached file, so it waits for a twentieth of the bound to arrive (a view fetches many files).
_fetched = [0]


def root() -> Path:
    return Path(settings.STORE_CACHE_DIR)


def folder_of(key: str) -> Path:
    return root() / key


def touch(entry: Path) -> None:
    """Marks the store used now (at most every TOUCH_EVERY_S per process: a viewport opens
    every part's store)."""
    now = time.time()
    if now - _touched.get(entry, 0.0) < TOUCH_EVERY_S:
        return
    entry.mkdir(parents=True, exist_ok=True)
    (entry / USED).touch()
    _touched[entry] = now


def file(key: str, name: str) -> Path:
    """One file of the store ``key``, fetched when this machine lacks it."""
    entry = folder_of(key)
    path = entry / name
    touch(entry)
    if not path.exists():
        bucket(settings.STORAGE_URL).get_file(f"{key}/{name}", path)
        (entry / USED).touch()  # the entry may have been evicted and begun again
        _arrived(path.stat().st_size)
    return path


def folder(key: str) -> Path:
    """The store ``key`` with its own files here (its subfolders' files come through ``file``
    as they are read: a timeline view needs a few of its index's arrays, not all)."""
    entry = folder_of(key)
    touch(entry)
    if (entry / COMPLETE).exists():
        return entry
    names = (item.key[len(key) + 1 :] for item in bucket(settings.STORAGE_URL).listing(f"{key}/"))
    files(key, [name for name in names if "/" not in name])
    (entry / COMPLETE).touch()
    return entry


def _arrived(size: int) -> None:
    _fetched[0] += size
    if _fetched[0] >= settings.STORE_CACHE_BYTES // 20:
        evict()


def files(key: str, names: Iterable[str]) -> None:
    """Several files of the store ``key`` fetched at once (those this machine lacks): a view
    that opens every part of a job would otherwise wait for each in turn."""
    entry = folder_of(key)
    missing = [name for name in names if not (entry / name).exists()]
    if len(missing) > 1:
        list(_pool().map(lambda name: file(key, name), missing))
    elif missing:
        file(key, missing[0])


@cache
def _pool_of(pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="store-fetch")


def _pool() -> ThreadPoolExecutor:
    """This process's fetching threads (a forked child makes its own)."""
    return _pool_of(os.getpid())


def adopt(incoming: Path, key: str) -> None:
    """A store this process wrote (and put in the bucket) becomes its cached copy: the worker
    that parsed a part has it at hand for the insights that follow."""
    entry = folder_of(key)
    shutil.rmtree(entry, ignore_errors=True)
    entry.parent.mkdir(parents=True, exist_ok=True)
    os.replace(incoming, entry)
    (entry / COMPLETE).touch()
    (entry / USED).touch()
    _arrived(tree_bytes(entry))


def forget(prefix: str) -> None:
    """Drops the cached stores under ``prefix`` (a deleted part's or job's)."""
    shutil.rmtree(root() / prefix, ignore_errors=True)


def _entries() -> list[tuple[float, int, Path]]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root()):
        if USED not in filenames:
            continue
        dirnames.clear()  # a store's own folders hold no store
        entry = Path(dirpath)
        try:
            used = (entry / USED).stat().st_mtime
        except FileNotFoundError:
            continue
        found.append((used, tree_bytes(entry), entry))
    return found


def evict() -> int:
    """Removes least recently used stores until the cache fits its bound; the bytes freed."""
    limit = settings.STORE_CACHE_BYTES
    with _evict_lock:
        _fetched[0] = 0
        entries = sorted(_entries())
        total = sum(size for _, size, _ in entries)
        freed = 0
        now = time.time()
        for used, size, entry in entries:
            if total - freed <= limit:
                break
            if now - used < GRACE_S:
                break  # sorted by use: the rest are in use too
            shutil.rmtree(entry, ignore_errors=True)
            _touched.pop(entry, None)
            freed += size
        return freed


def size() -> int:
    return sum(size for _, size, _ in _entries())
