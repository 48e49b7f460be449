"""Uploading traces through the API and waiting for the real Celery worker to parse them."""

from contextlib import contextmanager
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile

from profiler_app.celery import app
from profiler_app.core.models import PartState, ProfilePart
from tests.conftest import wait_for

FINAL = (PartState.DONE, PartState.FAILED)


def upload(
    client,
    job,
    path: Path,
    rank: int = 0,
    node: str = "algo-1",
    kind: str = "kineto",
    content: bytes | None = None,
) -> dict:
    data = content if content is not None else path.read_bytes()
    response = client.post(
        f"/api/jobs/{job.id}/parts/",
        {"node": node, "rank": rank, "kind": kind, "file": SimpleUploadedFile(path.name, data)},
        format="multipart",
    )
    assert response.status_code in (200, 202), response.content
    return response.json()


def wait_parsed(*part_ids: int, timeout: float = 180) -> list[ProfilePart]:
    def parsed():
        parts = list(ProfilePart.objects.filter(id__in=part_ids).order_by("id"))
        return parts if all(p.state in FINAL for p in parts) else None

    return wait_for(parsed, timeout=timeout, interval=0.3)


def upload_parsed(client, job, path: Path) -> ProfilePart:
    """Uploads ``path`` as rank 0's trace and waits for the worker to parse it; fails unless
    the part parsed."""
    [done] = wait_parsed(upload(client, job, path)["id"])
    assert done.state == PartState.DONE, done.error
    return done


@contextmanager
def broker_down():
    """This process's Celery producer talks to a port where no Redis listens (a real refused
    connection), as during a Redis outage; the worker and the real broker are untouched."""
    url = app.conf.broker_url

    def connect_to(broker_url: str) -> None:
        app.conf.broker_url = broker_url
        app._pool = None  # the connection and producer pools are made again on next use
        app.amqp._producer_pool = None

    connect_to("redis://127.0.0.1:1/0")
    try:
        yield
    finally:
        connect_to(url)
