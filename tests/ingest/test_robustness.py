"""Failures are per part and readable, re-parsing never duplicates, a killed worker's part is redone."""

import gzip
import json
import os
import signal
import zlib
from pathlib import Path

import psutil
import pytest
from django.core.management import call_command

from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.ingest import logic
from profiler_app.ingest.logic import AGGREGATE_TABLES
from profiler_app.ingest.tasks import ingest_part
from tests.conftest import wait_for
from tests.ingest.helpers import upload, wait_parsed
from tests.traces.expected import DATA, expected

GOOD = DATA / "nccl_rank0.json.gz"
EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2.0}


def deep_args() -> bytes:
    text = json.dumps({"traceEvents": [{**EVENT, "args": {"x": "DEEP"}}]}).encode()
    return text.replace(b'"DEEP"', b"[" * 10_000 + b"]" * 10_000)


def zeros_gz() -> bytes:
    return zlib.compress(b"\0" * (1 << 20), wbits=31) * 2048  # 2 GiB of zeros


HOSTILE = {
    "truncated.json.gz": (GOOD.read_bytes()[:300_000], "truncated"),
    "invalid.json": (b'{"traceEvents": [{"ph": "X",, }]}', "not valid JSON"),
    "config.json": (json.dumps({"lr": 0.1, "epochs": 3}).encode(), "not a PyTorch profiler trace"),
    "types.json": (
        json.dumps({"traceEvents": [{**EVENT, "ts": "noon"}]}).encode(),
        "must be a number",
    ),
    "negative.json": (
        json.dumps({"traceEvents": [{**EVENT, "dur": -1}]}).encode(),
        "invalid duration",
    ),
    "nan.json": (
        json.dumps({"traceEvents": [{**EVENT, "dur": float("nan")}]}).encode(),
        "not valid JSON",
    ),
    "deep.json": (deep_args(), "nested too deeply"),
    "zeros.json.gz": (zeros_gz(), "not a JSON trace"),
}


def row_counts(part_id: int) -> dict[str, int]:
    return {m.__name__: m.objects.filter(part_id=part_id).count() for m in AGGREGATE_TABLES}


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_fails_hostile_parts_clearly_and_keeps_the_rest(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="hostile", owner=user)
    good_id = upload(api, job, GOOD, rank=0)["id"]
    bad = {name: upload(api, job, Path(name), rank=i + 1, content=data)["id"]
           for i, (name, (data, _)) in enumerate(HOSTILE.items())}  # fmt: skip
    later_id = upload(api, job, DATA / "amd_mi250_small.json.gz", rank=99)["id"]
    wait_parsed(good_id, later_id, *bad.values())
    for name, part_id in bad.items():
        part = ProfilePart.objects.get(id=part_id)
        assert part.state == PartState.FAILED, name
        assert part.error.startswith("This file could not be read: "), part.error
        assert HOSTILE[name][1] in part.error, (name, part.error)
        assert sum(row_counts(part_id).values()) == 0
        assert part.file.storage.exists(str(part.file.name))  # kept for reprocess
    assert ProfilePart.objects.get(id=good_id).state == PartState.DONE
    assert ProfilePart.objects.get(id=later_id).state == PartState.DONE
    assert celery_worker_process.poll() is None
    summary = api.get(f"/api/jobs/{job.id}/summary/").json()
    assert summary["parts"]["failed"] == len(HOSTILE)
    assert summary["parts"]["done"] == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_reprocesses_without_duplicating_rows(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="again", owner=user)
    part_id = upload(api, job, GOOD)["id"]
    wait_parsed(part_id)
    before = row_counts(part_id)
    assert api.post(f"/api/parts/{part_id}/reprocess/").status_code == 202
    wait_for(lambda: ProfilePart.objects.get(id=part_id).state == PartState.DONE, timeout=120)
    assert row_counts(part_id) == before
    call_command("reprocess", part_id)
    wait_for(lambda: ProfilePart.objects.get(id=part_id).state == PartState.DONE, timeout=120)
    assert row_counts(part_id) == before
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()
    assert sum(k["count"] for k in kernels) == sum(
        expected("nccl_rank0.json.gz").kernel_count.values()
    )


@pytest.mark.django_db
def test_running_the_task_twice_is_idempotent(user, tmp_path):
    from profiler_app.core.logic import PartSource, store_part

    job = TrainingJob.objects.create(name="twice", owner=user)
    with GOOD.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", GOOD.name), f)
    ingest_part.apply(args=[part.id])
    first = row_counts(part.id)
    assert ProfilePart.objects.get(id=part.id).state == PartState.DONE
    ProfilePart.objects.filter(id=part.id).update(state=PartState.PENDING)
    ingest_part.apply(args=[part.id])
    assert row_counts(part.id) == first
    assert first["KernelStat"] > 0 and first["TimelineTrack"] > 0


@pytest.mark.django_db
def test_a_part_claimed_by_another_task_is_left_alone(user):
    from profiler_app.core.logic import PartSource, store_part

    job = TrainingJob.objects.create(name="claimed", owner=user)
    with GOOD.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", GOOD.name), f)
    assert logic.claim(part.id, "task-a")
    assert not logic.claim(part.id, "task-b")
    assert logic.claim(part.id, "task-a")  # the same task, redelivered


def big_trace(tmp_path: Path, copies: int) -> Path:
    """A larger real trace: the A100 trace repeated with shifted timestamps."""
    with gzip.open(DATA / "gpu_training_rank0.pt.trace.json.gz") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    span = 10**6
    doc["traceEvents"] = [
        {**e, "ts": e["ts"] + k * span} if "ts" in e else e for k in range(copies) for e in events
    ]
    path = tmp_path / "big.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), 1))
    return path


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_worker_killed_mid_parse_has_its_part_redone(api, user, celery_worker_process, tmp_path):
    path = big_trace(tmp_path, copies=8)
    job = TrainingJob.objects.create(name="killed", owner=user)
    part_id = upload(api, job, path)["id"]
    wait_for(
        lambda: ProfilePart.objects.get(id=part_id).state == PartState.PROCESSING,
        timeout=120,
        interval=0.05,
    )
    children = psutil.Process(celery_worker_process.pid).children()
    assert children
    for child in children:
        os.kill(child.pid, signal.SIGKILL)
    (part,) = wait_parsed(part_id, timeout=300)
    assert part.state == PartState.DONE, part.error
    counts = row_counts(part_id)
    assert counts["PartSummary"] == 1
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()
    assert sum(k["count"] for k in kernels) == 8 * sum(
        expected("gpu_training_rank0.pt.trace.json.gz").kernel_count.values()
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_parses_collector_chunks(api, user, celery_worker_process, tmp_path):
    from tests.traces.test_collector_chunk import write_chunk

    path = write_chunk(tmp_path / "job-algo-1-r0-p10-0.pcol")
    job = TrainingJob.objects.create(name="collected", owner=user)
    (part,) = wait_parsed(upload(api, job, path, kind="collector")["id"])
    assert part.state == PartState.DONE, part.error
    kernels = {k["name"]: k for k in api.get(f"/api/jobs/{job.id}/kernels/").json()}
    assert kernels["volta_sgemm_128x64_nn"]["total_ns"] == 1200
