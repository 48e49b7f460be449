"""Where a job's files live, and what they weigh: the data directory (the default) or an
S3-compatible bucket (PROFILER_STORAGE_URL=s3://bucket/prefix). Everything else reaches the
files through here, so web and worker processes on several hosts need no shared disk.

The same relative keys in both:

* ``parts/<job id>/<sha256>-<name>``: the files as uploaded (the ProfilePart's FileField; in a
  bucket through django-storages);
* ``uploads/<upload id>.part``, or in a bucket ``uploads/<upload id>/<first byte>`` and a
  multipart upload of the part's own object: resumable uploads still arriving (``resumable``);
* ``timeline/<job id>/<part id>``, or in a bucket ``timeline/<job id>/<part id>/<parse>``: each
  parsed part's timeline store and its index. A store in a bucket is never rewritten (a new
  parse writes a new key), so each process's cache of its files (``store_cache``) is never stale;
* ``timeline/<job id>/insights/…``: each rank's insights result, kept so that a run reads again
  only the ranks that changed (``insights.rank_results``). Kept with the job's stores, it counts
  in the job's bytes, goes with the job, and every worker of a bucket deployment finds it.

Each app removes its own files once their rows are deleted: core the raw uploads and the
unfinished uploads (``core.receivers``), the ingest the timeline stores (``ingest.receivers``).
Sizes are the files' lengths in bytes.

One module on purpose (near 450 lines): the two backends' rules for the kinds of files sit
side by side, so that nothing else needs to know where a file is (resumable uploads, whose bytes
go where the part's file will be, have their own: ``resumable``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, default_storage
from django.utils._os import safe_makedirs

from profiler_app.core import store_cache
from profiler_app.core.bucket import Bucket, StorageError, bucket
from profiler_app.lib.disk import file_bytes, tree_bytes
from profiler_app.traces import store_layout
from profiler_app.traces.store_files import StoreFiles

__all__ = ["StorageError", "file_bytes", "tree_bytes"]

RAW_FOLDER = "parts"
STORES_FOLDER = store_layout.STORES_FOLDER
UPLOADS_FOLDER = "uploads"


def in_bucket() -> bool:
    return bool(settings.STORAGE_URL)


def _bucket() -> Bucket:
    return bucket(settings.STORAGE_URL)


def scratch_dir() -> Path:
    """This machine's room for files on their way (never shared, never kept)."""
    path = Path(settings.FILE_UPLOAD_TEMP_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def media_root() -> Path:
    return Path(settings.MEDIA_ROOT)


def raw_dir(job_id: int) -> Path:
    return media_root() / RAW_FOLDER / str(job_id)


def stores_dir(job_id: int) -> Path:
    return media_root() / STORES_FOLDER / str(job_id)


def uploads_dir() -> Path:
    """Resumable uploads still arriving, one ``<upload id>.part`` file each (data directory)."""
    return Path(settings.DATA_DIR) / UPLOADS_FOLDER


# --- Raw uploads (the FileField's storage holds them; these cover what it does not) ---------


INCOMING_PREFIX = ".incoming-"


class _WrittenFile:
    """A file already on disk, which FileSystemStorage moves in place (a rename)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def temporary_file_path(self) -> str:
        return self.path


class LinkedFile(File):
    """A whole file on this machine that becomes the stored one by a hard link, not a copy (a
    resumable upload's file, whose own name goes with its upload's row)."""

    def __init__(self, path: Path) -> None:
        super().__init__(None, name=path.name)
        self.path = path

    def chunks(self, chunk_size=None):
        with self.path.open("rb") as stream:
            yield from File(stream).chunks(chunk_size)


class WholeFileSystemStorage(FileSystemStorage):
    """The data directory's raw uploads, each stored whole or not at all. Django's own save
    writes into the final name, so a write cut short (a full disk) would leave a partial file
    no row refers to: here the bytes go to a hidden file beside it, renamed once complete and
    removed when the write fails."""

    def _save(self, name, content):
        folder = Path(self.path(name)).parent
        if self.directory_permissions_mode is not None:  # as Django's save makes folders
            safe_makedirs(folder, self.directory_permissions_mode, exist_ok=True)
        else:
            folder.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=INCOMING_PREFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                if not (isinstance(content, LinkedFile) and _linked(content.path, temp)):
                    for chunk in content.chunks():
                        out.write(chunk)
            return super()._save(name, _WrittenFile(temp))  # type: ignore[misc]  # not in the stubs
        finally:
            Path(temp).unlink(missing_ok=True)  # still there unless it was renamed


def _linked(source: Path, dest: str) -> bool:
    """``dest`` becomes a second name of ``source``; False where it cannot (two filesystems,
    say: ``source`` is then copied)."""
    link = f"{dest}.link"
    try:
        os.link(source, link)
        os.replace(link, dest)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(link)
        return False
    return True


@contextlib.contextmanager
def raw_file_on_disk(name: str) -> Iterator[Path]:
    """The raw file ``name`` as a path on this machine: where it lies, or fetched from the
    bucket into the scratch folder for as long as the caller needs it."""
    if not in_bucket():
        yield media_root() / name
        return
    folder = Path(tempfile.mkdtemp(prefix="raw-", dir=scratch_dir()))
    try:
        path = folder / Path(name).name
        _bucket().get_file(name, path)
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale_raw_writes(before: float) -> int:
    """Raw files a process killed while writing them left behind (``.incoming-*`` in the data
    directory), untouched since ``before`` (seconds since the epoch); how many went."""
    if in_bucket():
        return 0
    removed = 0
    for path in (media_root() / RAW_FOLDER).glob(f"*/{INCOMING_PREFIX}*"):
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < before:
                path.unlink()
                removed += 1
    return removed


def raw_file_bytes(name: str) -> int:
    if not name:
        return 0
    try:
        return default_storage.size(name)
    except (OSError, BotoCoreError, ClientError):  # gone (a bucket answers 404 with a ClientError)
        return 0


def remove_raw_file(name: str) -> None:
    """Deletes a raw file, and its job's folder once that is empty (data directory)."""
    default_storage.delete(name)
    if not in_bucket():
        remove_if_empty((media_root() / name).parent)


def remove_job_raw_files(job_id: int) -> None:
    if in_bucket():
        _bucket().delete_prefix(f"{RAW_FOLDER}/{job_id}/")
    else:
        remove_tree(raw_dir(job_id))


# --- Timeline stores --------------------------------------------------------------------------


def store_key(job_id: int, part_id: int, parse_id: str) -> str:
    """Where a parse's store is kept (``traces.store_layout.store_key``)."""
    return store_layout.store_key(job_id, part_id, parse_id, in_bucket())


def new_store_folder(job_id: int, part_id: int, parse_id: str) -> Path:
    """Where a parse writes its store: beside the part's place in the data directory (moved in
    with a rename), in the cache for a bucket (kept there once put in the bucket)."""
    root = store_cache.root() if in_bucket() else media_root()
    return root / STORES_FOLDER / str(job_id) / f"{part_id}.incoming-{parse_id}"


def stage_store(incoming: Path, key: str) -> None:
    """Puts a parsed store where readers will find it once its rows commit: in a bucket, its
    files (before the transaction: this takes a while); in the data directory, nothing yet."""
    if in_bucket():
        _bucket().put_tree(key, incoming)


def stage_beside_store(path: Path, key: str) -> None:
    """Puts a file or folder a sweep built into a store kept in a bucket (at ``key``): a new
    name beside the store's files, which never change."""
    if not in_bucket():
        return
    if path.is_dir():
        _bucket().put_tree(key, path)
    else:
        _bucket().put_file(key, path)


def place_store(incoming: Path, key: str) -> None:
    """Within the transaction that stores the part's rows: the parse's store becomes the part's."""
    if in_bucket():
        store_cache.adopt(incoming, key)
        return
    final = media_root() / key
    final.parent.mkdir(parents=True, exist_ok=True)
    # Two renames, so that readers of the old one find a whole store at ``final`` but for an
    # instant (files they have open stay readable).
    retired = final.with_name(f"{final.name}.retired-{uuid.uuid4().hex}")
    if final.exists():
        final.rename(retired)
    incoming.rename(final)
    shutil.rmtree(retired, ignore_errors=True)


def remove_older_stores(job_id: int, part_id: int, keep: str) -> None:
    """In a bucket, the stores of the part's earlier parses (once the new one is committed)."""
    if not in_bucket():
        return
    prefix = f"{STORES_FOLDER}/{job_id}/{part_id}/"
    _bucket().delete(i.key for i in _bucket().listing(prefix) if not i.key.startswith(f"{keep}/"))
    for older in (store_cache.root() / prefix).glob("*"):
        if older != store_cache.folder_of(keep):
            shutil.rmtree(older, ignore_errors=True)


def discard_store(incoming: Path, staged: str | None = None) -> None:
    """What a parse wrote that is not kept (and put in the bucket, if it got that far). Its
    job's stores folder goes too once empty: the part may have been deleted during the parse,
    which then wrote into a folder just removed."""
    remove_tree(incoming)
    remove_if_empty(incoming.parent)
    if staged and in_bucket():
        _bucket().delete_prefix(f"{staged}/")


def remove_part_stores(job_id: int, part_id: int) -> None:
    """A deleted part's store, whatever a parse or a swap left beside it (``<part>.incoming-*``,
    ``<part>.retired-*``), and the job's stores folder once it is empty."""
    if in_bucket():
        _bucket().delete_prefix(f"{STORES_FOLDER}/{job_id}/{part_id}/")
        store_cache.forget(f"{STORES_FOLDER}/{job_id}/{part_id}")
        return
    folder = stores_dir(job_id)
    remove_tree(folder / str(part_id))
    for left in folder.glob(f"{part_id}.*"):
        remove_tree(left)
    remove_if_empty(folder)


def remove_job_stores(job_id: int) -> None:
    if in_bucket():
        _bucket().delete_prefix(f"{STORES_FOLDER}/{job_id}/")
        store_cache.forget(f"{STORES_FOLDER}/{job_id}")
    else:
        remove_tree(stores_dir(job_id))


class BucketStoreFiles(StoreFiles):
    """A store kept in the bucket, its files fetched into this machine's cache as they are
    asked for: ``folder()`` brings the store's own files, ``file()`` one file (of its index,
    say: a view reads a few of the index's arrays, not all)."""

    def __init__(self, key: str) -> None:
        super().__init__(store_cache.folder_of(key))
        self.key = self.bucket_key = key

    def folder(self) -> Path:
        return store_cache.folder(self.bucket_key)

    def file(self, name: str) -> Path:
        return store_cache.file(self.bucket_key, name)

    def fetch(self, names: list[str]) -> None:
        store_cache.files(self.bucket_key, names)


def store_files(key: str) -> StoreFiles:
    """The store kept at ``key``, as files on this machine."""
    return BucketStoreFiles(key) if in_bucket() else StoreFiles(media_root() / key)


# --- Kept results -----------------------------------------------------------------------------


def kept_key(job_id: int, name: str) -> str:
    """Where a result computed from the job's stores is kept (``name``: a relative path)."""
    return f"{STORES_FOLDER}/{job_id}/insights/{name}"


def read_kept(key: str) -> bytes | None:
    """A kept result's bytes; None when there is none."""
    try:
        if in_bucket():
            out = io.BytesIO()
            _bucket().copy_to(key, out)
            return out.getvalue()
        return (media_root() / key).read_bytes()
    except FileNotFoundError:
        return None


def keep(key: str, *parts: bytes) -> None:
    """Keeps ``parts``, one after another, at ``key`` in place of the other results in its
    folder: a reader finds the earlier or the new file, whole."""
    folder = key.rsplit("/", 1)[0] + "/"
    if in_bucket():
        _bucket().put_stream(key, io.BytesIO(b"".join(parts)))  # one PUT: whole or not at all
        _bucket().delete(item.key for item in _bucket().listing(folder) if item.key != key)
        return
    path = media_root() / key
    staging = path.with_name(f".{uuid.uuid4().hex}.tmp")  # two writers: each its own
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with staging.open("wb") as out:
            for part in parts:  # not joined: a copy of the largest results, at their peak
                out.write(part)
        os.replace(staging, path)
        for other in path.parent.iterdir():
            if other != path and not other.name.startswith("."):
                other.unlink(missing_ok=True)
    finally:
        staging.unlink(missing_ok=True)


def remove_kept(job_id: int) -> None:
    """The job's kept results (they go with its stores too)."""
    prefix = kept_key(job_id, "")
    if in_bucket():
        _bucket().delete_prefix(prefix)
    else:
        remove_tree(media_root() / prefix)


# --- Sizes ------------------------------------------------------------------------------------


def job_raw_bytes(job_id: int) -> int:
    if in_bucket():
        return _bucket().prefix_bytes(f"{RAW_FOLDER}/{job_id}/")
    return tree_bytes(raw_dir(job_id))


def job_store_bytes(job_id: int) -> int:
    if in_bucket():
        return _bucket().prefix_bytes(f"{STORES_FOLDER}/{job_id}/")
    return tree_bytes(stores_dir(job_id))


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or already gone
        folder.rmdir()


@dataclass(frozen=True)
class DiskUse:
    where: str  # "data directory" or the bucket's URL
    raw_bytes: int
    stores_bytes: int
    uploads_bytes: int
    total_bytes: int
    # The room left where the files are; None for a bucket (it has no fixed size).
    free_bytes: int | None
    capacity_bytes: int | None
    cache_bytes: int  # this machine's cached copies of stores kept in a bucket


def disk_use() -> DiskUse:
    """What the storage holds, by kind, and the room left."""
    if in_bucket():
        store = _bucket()
        raw = store.prefix_bytes(f"{RAW_FOLDER}/")
        stores = store.prefix_bytes(f"{STORES_FOLDER}/")
        # Ranges waiting to fill a part, and the parts of the part files under way.
        uploads = store.prefix_bytes(f"{UPLOADS_FOLDER}/") + store.multipart_bytes(f"{RAW_FOLDER}/")
        return DiskUse(
            settings.STORAGE_URL,
            raw,
            stores,
            uploads,
            raw + stores + uploads,
            None,
            None,
            store_cache.size(),
        )
    raw = tree_bytes(media_root() / RAW_FOLDER)
    stores = tree_bytes(media_root() / STORES_FOLDER)
    uploads = tree_bytes(uploads_dir())
    root = media_root()
    root.mkdir(parents=True, exist_ok=True)
    system = shutil.disk_usage(root)
    return DiskUse(
        where="data directory",
        raw_bytes=raw,
        stores_bytes=stores,
        uploads_bytes=uploads,
        total_bytes=raw + stores + uploads,
        free_bytes=system.free,
        capacity_bytes=system.total,
        cache_bytes=0,
    )
