from types import SimpleNamespace

import pytest

from tests.history.traces import write_slower


@pytest.fixture(scope="session")
def slower_trace(tmp_path_factory):
    """The NCCL trace with its AllReduce 2.8× as long and a GEMM kernel it never ran."""
    return write_slower(tmp_path_factory.mktemp("history") / "nccl_slower.json.gz")


@pytest.fixture
def server(live_server, celery_worker_process, api_token):
    """The real app (live server + Celery worker + PostgreSQL) and an API token."""
    return SimpleNamespace(url=live_server.url, token=api_token)
