"""A resumable upload's bytes, each range put where the part's file will be as it arrives, so
that completing the upload copies nothing:

* in the data directory, appended to ``uploads/<upload id>.part``, which completing moves into
  the part's place (a rename);
* in a bucket, as the parts of a multipart upload of the part's own object
  (``parts/<job id>/<upload id>-<name>``: named when its first part goes, before its digest is
  known), which the bucket joins when the upload completes.

A bucket refuses parts under 5 MiB but the last. Ranges that together are smaller wait as
objects ``uploads/<upload id>/<first byte>`` until a range fills a part with them or ends the
file; that part is their bytes and the range's. Only a client sending ranges that small has
bytes put twice (the browser's 8 MiB ranges never wait, nor does a file sent in one range).

The part's sha256 is taken once every byte arrived, by reading the file once (from a bucket: a
read, no byte put). Ranges are taken in order (``logic.append_to_upload`` refuses any other
start), so a running digest would be as right, but its state would have to pass from request
to request, and those reach any web process on any host: hashlib's state cannot be saved, and
a SHA-256 in Python that could be runs at a few MB/s.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

from django.conf import settings
from django.db import transaction

from profiler_app.core import storage
from profiler_app.core.bucket import Bucket, bucket
from profiler_app.core.models import Upload

COPY_CHUNK_BYTES = 4 * 1024 * 1024
# The bucket's least part but the last (S3's rule).
MIN_PART_BYTES = 5 * 1024 * 1024
# A part bound for the bucket waits in memory up to this, then in a temp file.
PART_SPOOL_BYTES = 16 * 1024 * 1024


# The upload row's fields that ``write_range`` sets.
ROW_FIELDS = ("bucket_key", "multipart_id", "parts_sent", "parts_bytes")


class RangeEndedEarly(Exception):
    def __init__(self, remaining: int) -> None:
        super().__init__(f"the request ended {remaining} bytes early")
        self.remaining = remaining


@dataclass(frozen=True)
class Arrived:
    """An upload whose every byte arrived, as the part's file: ``path`` on this machine (data
    directory), or the bucket's object ``key``."""

    sha256: str
    size: int
    path: Path | None = None
    key: str = ""


def _copy_exactly(stream: BinaryIO, out: IO[bytes], length: int) -> None:
    remaining = length
    while remaining > 0:
        chunk = stream.read(min(COPY_CHUNK_BYTES, remaining))
        if not chunk:
            raise RangeEndedEarly(remaining)
        out.write(chunk)
        remaining -= len(chunk)


def _bucket() -> Bucket:
    return bucket(settings.STORAGE_URL)


def _upload_path(upload_id) -> Path:
    return storage.uploads_dir() / f"{upload_id}.part"


def _waiting_prefix(upload_id) -> str:
    return f"{storage.UPLOADS_FOLDER}/{upload_id}/"


def _waiting_key(upload_id, start: int) -> str:
    # Zero-padded so that the bucket lists an upload's ranges in byte order.
    return f"{_waiting_prefix(upload_id)}{start:020d}"


def part_key(upload: Upload, name: str) -> str:
    """The bucket object an upload's bytes become (``name``: the raw file's name)."""
    return f"{storage.RAW_FOLDER}/{upload.job_id}/{upload.pk}-{name}"


# --- Ranges -----------------------------------------------------------------------------------


def write_range(upload: Upload, start: int, stream: BinaryIO, length: int, name: str) -> None:
    """Stores ``length`` bytes of ``stream`` as the upload's bytes from ``start`` on, dropping
    what an earlier failed try wrote past them; ``upload`` is the locked row, whose bucket
    fields this sets (the caller saves them). RangeEndedEarly when the stream ends first."""
    if storage.in_bucket():
        _put_range(upload, start, stream, length, name)
    else:
        _append_range(upload.pk, start, stream, length)


def _append_range(upload_id, start: int, stream: BinaryIO, length: int) -> None:
    path = _upload_path(upload_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("r+b" if path.exists() else "wb") as out:
            out.seek(start)
            _copy_exactly(stream, out, length)
            out.truncate()
    except BaseException:
        # What this range wrote goes (a full disk, the sender gone): the file holds the
        # bytes counted so far, and none at all for a first range.
        with contextlib.suppress(OSError):
            if start:
                os.truncate(path, start)
            else:
                path.unlink(missing_ok=True)
        raise


def _put_range(upload: Upload, start: int, stream: BinaryIO, length: int, name: str) -> None:
    ends_file = start + length == upload.size_bytes
    if start - upload.parts_bytes + length < MIN_PART_BYTES and not ends_file:
        with tempfile.SpooledTemporaryFile(PART_SPOOL_BYTES, dir=str(storage.scratch_dir())) as out:
            _copy_exactly(stream, out, length)
            out.seek(0)
            _bucket().put_stream(_waiting_key(upload.pk, start), out)
        return
    _send_part(upload, start, name, stream, length)


def _send_part(
    upload: Upload, waited_to: int, name: str, stream: BinaryIO | None = None, length: int = 0
) -> None:
    """The next part: the bytes of the ranges waiting up to ``waited_to``, then ``length``
    bytes of ``stream``."""
    store = _bucket()
    with tempfile.SpooledTemporaryFile(PART_SPOOL_BYTES, dir=str(storage.scratch_dir())) as spool:
        waited = _join_waiting(upload.pk, upload.parts_bytes, waited_to, spool)
        if stream is not None:
            _copy_exactly(stream, spool, length)
        spool.seek(0)
        if not upload.multipart_id:
            upload.bucket_key = part_key(upload, name)
            upload.multipart_id = store.start_multipart(upload.bucket_key)
        # Numbered by the row, so that a try whose row change was lost sends its part again
        # under the same number, which replaces it.
        store.put_part(upload.bucket_key, upload.multipart_id, upload.parts_sent + 1, spool)
    upload.parts_sent += 1
    upload.parts_bytes = waited_to + length
    if waited:
        # Once the row says they are in the part (a rollback would still need them).
        transaction.on_commit(lambda: store.delete(waited))


def _join_waiting(upload_id, begin: int, end: int, out: IO[bytes]) -> list[str]:
    """Copies the waiting ranges that tile [begin, end) into ``out``; their keys. One that an
    earlier failed try left (it does not line up) is skipped, and goes with the others."""
    if begin == end:
        return []
    store = _bucket()
    listed = [item.key for item in store.listing(_waiting_prefix(upload_id))]
    ranges = {int(key.rsplit("/", 1)[1]): key for key in listed}
    at = begin
    while at < end:
        key = ranges.get(at)
        if key is None:
            raise FileNotFoundError(f"upload {upload_id} lacks bytes from {at}")
        before = out.tell()
        store.copy_to(key, out)
        at += out.tell() - before
    if at != end:
        raise FileNotFoundError(f"upload {upload_id}'s waiting ranges pass byte {end}")
    return listed


# --- Completion -------------------------------------------------------------------------------


class _Digest:
    """A file to write to that keeps only the bytes' sha256 and count."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> int:
        self.hash.update(chunk)
        self.size += len(chunk)
        return len(chunk)


def finish(upload: Upload, name: str) -> Arrived:
    """The upload's file, every byte of it arrived (the caller checked the count; ``upload``
    is the locked row): in a bucket its parts joined. FileNotFoundError when the bytes are gone
    (cancelled)."""
    digest = _Digest()
    if not storage.in_bucket():
        path = _upload_path(upload.pk)
        with path.open("rb") as stream:
            while chunk := stream.read(COPY_CHUNK_BYTES):
                digest.write(chunk)
        return Arrived(digest.hash.hexdigest(), digest.size, path=path)
    if upload.parts_bytes < upload.size_bytes:
        # Ranges that never made a part (the last range makes one; these arrived before the
        # upload's ranges went to parts): they are the last part.
        _send_part(upload, upload.size_bytes, name)
    store = _bucket()
    with contextlib.suppress(FileNotFoundError):  # a try that finished it, then lost its row
        store.finish_multipart(upload.bucket_key, upload.multipart_id, upload.parts_sent)
    store.copy_to(upload.bucket_key, digest)  # type: ignore[arg-type]  # a write() is enough
    if digest.size != upload.size_bytes:
        raise FileNotFoundError(f"{upload.bucket_key} holds {digest.size} bytes")
    return Arrived(digest.hash.hexdigest(), digest.size, key=upload.bucket_key)


def discard(arrived: Arrived) -> None:
    """The file of an upload whose content a part of its job already has."""
    if arrived.path is not None:
        arrived.path.unlink(missing_ok=True)
    elif arrived.key:
        _bucket().delete([arrived.key])


# --- Removal and sizes ------------------------------------------------------------------------


def remove(upload_id, bucket_key: str = "") -> None:
    """What an upload's bytes left, once it went: its file, or its waiting ranges and, given
    its object's key (a completed upload gives none: the object is its part's file), every
    multipart upload to it and the object, finished for it but never taken."""
    if not storage.in_bucket():
        _upload_path(upload_id).unlink(missing_ok=True)
        return
    store = _bucket()
    store.delete_prefix(_waiting_prefix(upload_id))
    if bucket_key:
        # Every one: a try whose row change was lost may have started another.
        for key, multipart_id in store.multiparts(bucket_key):
            if key == bucket_key:
                store.abort_multipart(key, multipart_id)
        store.delete([bucket_key])


def remove_unknown(upload_id: str) -> None:
    """An upload's bytes left without its row (found by ``stored``)."""
    remove(upload_id)
    if storage.in_bucket():
        store = _bucket()
        for key, multipart_id in store.multiparts(f"{storage.RAW_FOLDER}/"):
            if _multipart_upload_id(key) == upload_id:
                store.abort_multipart(key, multipart_id)


def _multipart_upload_id(key: str) -> str:
    # parts/<job id>/<upload id>-<name>; an upload id is a UUID (36 characters).
    return key.rsplit("/", 1)[-1][:36]


def received_bytes(upload: Upload) -> int:
    """What the upload's bytes take in storage now."""
    if not storage.in_bucket():
        return storage.file_bytes(_upload_path(upload.pk))
    store = _bucket()
    waiting = store.prefix_bytes(_waiting_prefix(upload.pk))
    if not upload.multipart_id:
        return waiting
    with contextlib.suppress(FileNotFoundError):
        return waiting + sum(p["Size"] for p in store.parts(upload.bucket_key, upload.multipart_id))
    return waiting


def stored() -> dict[str, float]:
    """Every upload with bytes in storage, and when bytes last reached it."""
    found: dict[str, float] = {}
    if not storage.in_bucket():
        folder = storage.uploads_dir()
        for path in folder.glob("*.part") if folder.exists() else []:
            with contextlib.suppress(FileNotFoundError):
                found[path.stem] = path.stat().st_mtime
        return found
    store = _bucket()
    for item in store.listing(f"{storage.UPLOADS_FOLDER}/"):
        upload_id = item.key.split("/")[1]
        found[upload_id] = max(found.get(upload_id, 0.0), item.modified)
    for key, multipart_id in store.multiparts(f"{storage.RAW_FOLDER}/"):
        with contextlib.suppress(FileNotFoundError):  # finished or dropped meanwhile
            for part in store.parts(key, multipart_id):
                upload_id = _multipart_upload_id(key)
                found[upload_id] = max(found.get(upload_id, 0.0), part["LastModified"].timestamp())
    return found
