"""Each failure message the ingest writes is counted under its own reason on /metrics."""

import errno

import pytest
from botocore.exceptions import ReadTimeoutError

from profiler_app.core.storage import StorageError
from profiler_app.ingest import failures
from profiler_app.metrics.reasons import failure_reason


def raised_while(cause: Exception, exc: Exception) -> Exception:
    """``exc`` as if raised while handling ``cause`` (how a StorageError wraps botocore's)."""
    try:
        try:
            raise cause
        except type(cause):
            raise exc  # noqa: B904 - the context is the point
    except type(exc) as raised:
        return raised


def test_it_names_the_storage_failures(settings):
    settings.INGEST_BUCKET_RETRY_SECONDS = 30
    timeout = ReadTimeoutError(endpoint_url="http://bucket")
    unreachable = raised_while(timeout, StorageError("The object store could not read x (..)."))
    assert failure_reason(failures.storage_failure_message(unreachable)) == "bucket_unreachable"
    refused = StorageError("The object store could not read x (AccessDenied: no).")
    assert failure_reason(failures.storage_failure_message(refused)) == "bucket_refused"
    full = raised_while(OSError(errno.ENOSPC, "No space left on device"), StorageError("x"))
    assert failure_reason(failures.storage_failure_message(full)) == "disk_full"


def test_it_names_a_full_disk_at_any_step():
    full = OSError(errno.ENOSPC, "No space left on device")
    assert failure_reason(failures.unexpected_failure_message(1, full)) == "disk_full"
    assert failure_reason(failures.store_failure_message(full)) == "disk_full"


@pytest.mark.django_db
def test_it_names_the_other_failures():
    assert failure_reason(failures.unexpected_failure_message(1, ValueError("x"))) == "unexpected"
    gone = failures.storage_gone_message(1, FileNotFoundError("raw/1/x"))
    assert failure_reason(gone) == "file_gone"
    assert failure_reason(failures.store_failure_message(ValueError("x"))) == "results_not_stored"
    # Written where the parse meets them (ingest.logic).
    assert failure_reason("This file could not be read: not gzip") == "unreadable_file"
    assert (
        failure_reason(
            "This part needs more memory than a worker may use (WORKER_MEMORY_LIMIT_MB = 8,192 MB)."
        )
        == "out_of_memory"
    )
    assert (
        failure_reason("The parse of this part was cut short 3 times (its worker died: ...)")
        == "worker_died"
    )
    assert failure_reason("Something new") == "other"
