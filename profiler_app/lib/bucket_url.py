"""PROFILER_STORAGE_URL's bucket and prefix, and the S3 client settings the storage and
django-storages share. Endpoint, region and credentials come from the usual AWS variables
(boto3 reads the credentials itself); a custom endpoint (MinIO, say) is addressed path-style."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from profiler_app.lib.env import BadSetting, envfloat, envint

# Each S3 request gives up after these, so a stalled bucket (it takes connections and never
# answers) is known for one within seconds: an upload meeting it is answered 503 within
# ATTEMPTS x (READ_TIMEOUT_S + the 1 s a PUT waits for "100 Continue") + the retry's backoff
# (at most 1 s): 9 s. A parse gives up on it within a minute (INGEST_BUCKET_RETRY_SECONDS and
# its last tries). A read timeout bounds the wait for each next byte, not a whole transfer; a
# store slower than this to answer a request raises them (docs/storage.md).
CONNECT_TIMEOUT_S = envfloat("STORAGE_CONNECT_TIMEOUT_S", 3.0)
READ_TIMEOUT_S = envfloat("STORAGE_READ_TIMEOUT_S", 3.0)
ATTEMPTS = envint("STORAGE_ATTEMPTS", 2)  # the first try included
# Joining a multipart upload's parts is the bucket's own work and takes long for a large object
# (S3 documents minutes): one try, waiting this long for its answer. A second try sent while
# the first still joins finds the upload gone (or meets the first's half-done join).
JOIN_TIMEOUT_S = envfloat("STORAGE_JOIN_TIMEOUT_S", 300.0)


@dataclass(frozen=True)
class BucketUrl:
    bucket: str
    prefix: str  # without slashes at either end; "" for the bucket's root

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative


def parse(url: str) -> BucketUrl:
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise BadSetting(
            f"PROFILER_STORAGE_URL={url!r}: expected s3://<bucket>/<prefix> (or leave it unset "
            "to keep profiles in the data directory)"
        )
    return BucketUrl(parts.netloc, parts.path.strip("/"))


def endpoint_url() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def client_config() -> dict:
    """Keyword arguments of botocore's Config for every client of the bucket."""
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "read_timeout": READ_TIMEOUT_S,
        # botocore's max_attempts counts retries only (3 made four tries of 20 s: 82 s).
        "retries": {"total_max_attempts": ATTEMPTS, "mode": "standard"},
        "max_pool_connections": 32,
        "s3": {"addressing_style": "path"} if endpoint_url() else {},
    }


def join_client_config() -> dict:
    """botocore's Config for the requests that join a multipart upload's parts."""
    return {
        **client_config(),
        "read_timeout": JOIN_TIMEOUT_S,
        "retries": {"total_max_attempts": 1, "mode": "standard"},
    }


def django_storage_options(url: str) -> dict:
    """django-storages' S3Storage options: raw uploads under the prefix, never overwritten."""
    where = parse(url)
    from botocore.config import Config

    return {
        "bucket_name": where.bucket,
        "location": where.prefix,
        "endpoint_url": endpoint_url(),
        "region_name": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        "file_overwrite": False,
        "default_acl": None,
        "querystring_auth": False,
        "client_config": Config(**client_config()),
    }
