"""The real H200 job of tests/data (tests/h200.py) as the dashboard tests read it: unpacked
once a module, and stored as a collector job and as a torch.profiler trace job."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler_app.core.logic import delete_job
from tests import h200


@pytest.fixture(scope="module")
def h200_unpacked(tmp_path_factory) -> Path:
    return h200.unpack(tmp_path_factory.mktemp("h200"))


@pytest.fixture(scope="module")
def h200_collector_job(h200_unpacked, django_db_setup, django_db_blocker):
    """The collector's spool, stored as a job for the module and deleted after it."""
    with django_db_blocker.unblock():
        job = h200.stored_job("h200-collector", h200.spool_chunks(h200_unpacked), "collector")
    yield job
    with django_db_blocker.unblock():
        delete_job(job)


@pytest.fixture(scope="module")
def h200_trace_job(h200_unpacked, django_db_setup, django_db_blocker):
    """The torch.profiler trace of the same loop, stored as a job for the module and deleted
    after it."""
    with django_db_blocker.unblock():
        job = h200.stored_job("h200-kineto", h200.tb_traces(h200_unpacked), "kineto")
    yield job
    with django_db_blocker.unblock():
        delete_job(job)
