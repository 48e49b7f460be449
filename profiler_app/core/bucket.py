"""An S3-compatible bucket (PROFILER_STORAGE_URL=s3://bucket/prefix) through boto3: the few
operations the storage needs, each failure turned into a StorageError a user can read.

Keys are given relative to the prefix. One client per process (boto3 clients are thread-safe;
a forked Celery child makes its own)."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO

import boto3
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from s3transfer.utils import ReadFileChunk

from profiler_app.lib.bucket_url import client_config, endpoint_url, join_client_config, parse

# Parallel transfers: a store is a few dozen files; a raw upload is one big multipart object.
TRANSFER_THREADS = 8
# A file over this goes in parts of PART_BYTES (a store's column of a large trace), joined by the
# bucket with the join's own wait (bucket_url.JOIN_TIMEOUT_S).
FILE_IN_PARTS_BYTES = 64 * 1024**2
PART_BYTES = 32 * 1024**2
TRANSFER = TransferConfig(multipart_threshold=FILE_IN_PARTS_BYTES, max_concurrency=8)
DELETE_BATCH = 1000  # DeleteObjects' limit per request


_FAILURES = (BotoCoreError, ClientError, Boto3Error, OSError)


class StorageError(Exception):
    """The object store refused or could not be reached; the message says which, for users."""


@dataclass(frozen=True)
class Listed:
    key: str  # relative to the prefix
    size: int
    modified: float  # seconds since the epoch


def _describe(exc: Exception, action: str, key: str) -> StorageError:
    if isinstance(exc, Boto3Error) and isinstance(exc.__context__, ClientError):
        exc = exc.__context__  # a transfer's failure wraps the request's
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        reason = f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip(": ")
    else:
        reason = str(exc) or type(exc).__name__
    return StorageError(f"The object store could not {action} {key} ({reason}).")


def storage_error(exc: Exception) -> StorageError:
    """A failure of a request made outside this module (django-storages keeps the raw
    uploads), told like the others."""
    return _describe(exc, "store or read", "a raw upload")


class Bucket:
    def __init__(self, url: str) -> None:
        where = parse(url)
        self.name, self.prefix = where.bucket, where.prefix
        self._key = where.key
        session = boto3.session.Session()
        self.client = session.client(
            "s3", endpoint_url=endpoint_url(), config=Config(**client_config())
        )
        self.join_client = session.client(
            "s3", endpoint_url=endpoint_url(), config=Config(**join_client_config())
        )

    def key(self, relative: str) -> str:
        return self._key(relative)

    def _relative(self, key: str) -> str:
        return key[len(self.prefix) + 1 :] if self.prefix else key

    def put_file(self, relative: str, path: Path) -> None:
        size = path.stat().st_size
        if size > FILE_IN_PARTS_BYTES:
            self._put_file_in_parts(relative, path, size)
            return
        try:
            self.client.upload_file(str(path), self.name, self.key(relative), Config=TRANSFER)
        except _FAILURES as exc:
            raise _describe(exc, "save", relative) from None

    def _put_file_in_parts(self, relative: str, path: Path, size: int) -> None:
        """A large file as a multipart upload of our own: boto3's transfer manager would ask
        the bucket to join the parts with every request's short wait, and a bucket that joins
        slowly would fail the store."""
        upload_id = self.start_multipart(relative)

        def put(number: int) -> None:
            start = (number - 1) * PART_BYTES
            with ReadFileChunk.from_filename(str(path), start, PART_BYTES) as body:
                self.put_part(relative, upload_id, number, body)

        count = -(-size // PART_BYTES)
        try:
            with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
                list(pool.map(put, range(1, count + 1)))
            self.finish_multipart(relative, upload_id, count)
        except BaseException:
            with contextlib.suppress(StorageError):
                self.abort_multipart(relative, upload_id)
            raise

    def put_stream(self, relative: str, stream: IO[bytes]) -> None:
        try:
            self.client.upload_fileobj(stream, self.name, self.key(relative), Config=TRANSFER)
        except _FAILURES as exc:
            raise _describe(exc, "save", relative) from None

    # --- Multipart uploads: an object written in parts, as its bytes arrive ---------------

    def start_multipart(self, relative: str) -> str:
        """A new multipart upload to ``relative``; its id."""
        try:
            return self.client.create_multipart_upload(Bucket=self.name, Key=self.key(relative))[
                "UploadId"
            ]
        except _FAILURES as exc:
            raise _describe(exc, "start", relative) from None

    def put_part(self, relative: str, upload_id: str, number: int, body: IO[bytes]) -> None:
        """Part ``number`` (from 1) of the multipart upload; sending a number again replaces it."""
        try:
            self.client.upload_part(
                Bucket=self.name,
                Key=self.key(relative),
                UploadId=upload_id,
                PartNumber=number,
                Body=body,
            )
        except _FAILURES as exc:
            raise _describe(exc, "save", relative) from None

    def parts(self, relative: str, upload_id: str) -> list[dict]:
        """The multipart upload's parts in order: PartNumber, ETag, Size, LastModified.
        FileNotFoundError when it is no longer under way."""
        found: list[dict] = []
        paginator = self.client.get_paginator("list_parts")
        try:
            pages = paginator.paginate(Bucket=self.name, Key=self.key(relative), UploadId=upload_id)
            for page in pages:
                found += page.get("Parts", ())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchUpload"):
                raise FileNotFoundError(relative) from None  # finished or dropped
            raise _describe(exc, "list the parts of", relative) from None
        except _FAILURES as exc:
            raise _describe(exc, "list the parts of", relative) from None
        return found

    def finish_multipart(self, relative: str, upload_id: str, count: int) -> None:
        """Joins parts 1..``count`` into the object (the bucket joins them: no byte is sent)."""
        listed = [p for p in self.parts(relative, upload_id) if p["PartNumber"] <= count]
        if [p["PartNumber"] for p in listed] != list(range(1, count + 1)):
            raise FileNotFoundError(f"{relative} lacks parts of its {count}")
        try:
            self.join_client.complete_multipart_upload(
                Bucket=self.name,
                Key=self.key(relative),
                UploadId=upload_id,
                MultipartUpload={
                    "Parts": [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in listed]
                },
            )
        except _FAILURES as exc:
            raise _describe(exc, "save", relative) from None

    def abort_multipart(self, relative: str, upload_id: str) -> None:
        """Drops the multipart upload's parts; one already finished or dropped is let be."""
        try:
            self.client.abort_multipart_upload(
                Bucket=self.name, Key=self.key(relative), UploadId=upload_id
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchUpload"):
                raise _describe(exc, "delete", relative) from None
        except _FAILURES as exc:
            raise _describe(exc, "delete", relative) from None

    def multiparts(self, relative_prefix: str) -> Iterator[tuple[str, str]]:
        """The multipart uploads under way under the prefix: (key, upload id) each."""
        paginator = self.client.get_paginator("list_multipart_uploads")
        try:
            for page in paginator.paginate(Bucket=self.name, Prefix=self.key(relative_prefix)):
                for item in page.get("Uploads", ()):
                    yield self._relative(item["Key"]), item["UploadId"]
        except _FAILURES as exc:
            raise _describe(exc, "list", relative_prefix) from None

    def multipart_bytes(self, relative_prefix: str) -> int:
        """What the parts of the multipart uploads under way under the prefix weigh."""
        total = 0
        for key, upload_id in self.multiparts(relative_prefix):
            with contextlib.suppress(FileNotFoundError):  # finished or dropped meanwhile
                total += sum(part["Size"] for part in self.parts(key, upload_id))
        return total

    def put_tree(self, relative: str, folder: Path) -> list[str]:
        """Every file under ``folder`` to ``relative/…``, in parallel; the keys written."""
        files = [p for p in folder.rglob("*") if p.is_file()]
        keys = [f"{relative}/{p.relative_to(folder).as_posix()}" for p in files]
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:
            list(pool.map(self.put_file, keys, files))
        return keys

    def get_file(self, relative: str, dest: Path) -> None:
        """Downloads to ``dest`` whole or not at all (a temp name renamed in place). One GET
        (a transfer manager would ask for the size first, doubling the wait for a small file);
        FileNotFoundError when there is no such object."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        temp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
        try:
            with temp.open("wb") as out:
                self.copy_to(relative, out)
            os.replace(temp, dest)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    def copy_to(self, relative: str, out: IO[bytes]) -> None:
        """Streams an object into an open file; FileNotFoundError when there is none."""
        try:
            body = self.client.get_object(Bucket=self.name, Key=self.key(relative))["Body"]
            shutil.copyfileobj(body, out, 8 * 1024**2)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                raise FileNotFoundError(relative) from None
            raise _describe(exc, "read", relative) from None
        except _FAILURES as exc:
            raise _describe(exc, "read", relative) from None

    def listing(self, relative_prefix: str) -> Iterator[Listed]:
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.name, Prefix=self.key(relative_prefix)):
                for item in page.get("Contents", ()):
                    yield Listed(
                        self._relative(item["Key"]),
                        int(item["Size"]),
                        item["LastModified"].timestamp(),
                    )
        except _FAILURES as exc:
            raise _describe(exc, "list", relative_prefix) from None

    def prefix_bytes(self, relative_prefix: str) -> int:
        return sum(item.size for item in self.listing(relative_prefix))

    def delete(self, keys: Iterable[str]) -> None:
        batch: list[str] = []
        for relative in keys:
            batch.append(relative)
            if len(batch) == DELETE_BATCH:
                self._delete_batch(batch)
                batch = []
        if batch:
            self._delete_batch(batch)

    def delete_prefix(self, relative_prefix: str) -> None:
        self.delete(item.key for item in self.listing(relative_prefix))

    def _delete_batch(self, keys: list[str]) -> None:
        try:
            self.client.delete_objects(
                Bucket=self.name,
                Delete={"Objects": [{"Key": self.key(k)} for k in keys], "Quiet": True},
            )
        except _FAILURES as exc:
            raise _describe(exc, "delete", keys[0]) from None


_lock = threading.Lock()


def bucket(url: str) -> Bucket:
    """This process's client of the bucket at ``url``."""
    with _lock:
        return _bucket(url, endpoint_url(), os.getpid())


@cache
def _bucket(url: str, endpoint: str | None, pid: int) -> Bucket:
    return Bucket(url)
