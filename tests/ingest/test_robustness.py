"""Failures are per part and readable, re-parsing never duplicates, a killed worker's part is redone."""

import gzip
import hashlib
import io
import json
import logging
import os
import random
import re
import signal
import stat
import string
import subprocess
import sys
import threading
import zlib
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from profiler_app.core import storage
from profiler_app.core.logic import PartSource, reset_part_for_reprocess, store_part
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.ingest import logic
from profiler_app.ingest.save import AGGREGATE_TABLES
from profiler_app.ingest.tasks import ingest_part, sweep_unfinished_parts
from profiler_app.profiles.models import Annotation, KernelStat, PartSummary
from profiler_app.testing import database_url
from profiler_app.traces.window import WHOLE_TRACE, rows_in
from tests.conftest import wait_for
from tests.ingest.helpers import broker_down, upload, wait_parsed
from tests.traces.expected import DATA, expected
from tests.traces.test_hostile_input import npy_bomb, repeated_key_in_values

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
    "header.json.gz": (
        gzip.compress(repeated_key_in_values(160_000)),
        "malformed before 'traceEvents'",
    ),
    "far-future.json": (
        json.dumps({"traceEvents": [EVENT], "baseTimeNanoseconds": 2**63 - 1}).encode(),
        "baseTimeNanoseconds (9223372036854775807)",
    ),
}


def row_counts(part_id: int) -> dict[str, int]:
    return {m.__name__: m.objects.filter(part_id=part_id).count() for m in AGGREGATE_TABLES}


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_fails_hostile_parts_clearly_and_keeps_the_rest(
    api, user, celery_worker_process, tmp_path
):
    hostile = {
        **HOSTILE,
        # A 1 MB chunk holding a 1 GiB array.
        "bomb.pcol": (
            npy_bomb(tmp_path / "bomb.pcol", 1 << 30, 1 << 30).read_bytes(),
            "over the limit of 0.268 GB",
        ),
    }
    job = TrainingJob.objects.create(name="hostile", owner=user)
    good_id = upload(api, job, GOOD, rank=0)["id"]
    bad = {
        name: upload(
            api,
            job,
            Path(name),
            rank=i + 1,
            content=data,
            kind="collector" if name.endswith(".pcol") else "kineto",
        )["id"]
        for i, (name, (data, _)) in enumerate(hostile.items())
    }
    later_id = upload(api, job, DATA / "amd_mi250_small.json.gz", rank=99)["id"]
    # Each ends (the header scan is linear: tests/traces/test_hostile_input.py counts it).
    wait_parsed(good_id, later_id, *bad.values())
    for name, part_id in bad.items():
        part = ProfilePart.objects.get(id=part_id)
        assert part.state == PartState.FAILED, name
        assert part.error.startswith("This file could not be read: "), part.error
        assert hostile[name][1] in part.error, (name, part.error)
        assert sum(row_counts(part_id).values()) == 0
        assert part.file.storage.exists(str(part.file.name))  # kept for reprocess
    assert ProfilePart.objects.get(id=good_id).state == PartState.DONE
    assert ProfilePart.objects.get(id=later_id).state == PartState.DONE
    assert celery_worker_process.poll() is None
    summary = api.get(f"/api/jobs/{job.id}/summary/").json()
    assert summary["parts"]["failed"] == len(hostile)
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
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]
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
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]
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
    kernels = {k["name"]: k for k in api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]}
    assert kernels["volta_sgemm_128x64_nn"]["total_ns"] == 1200


def stored(job: TrainingJob, doc: dict, name: str = "trace.json") -> ProfilePart:
    data = io.BytesIO(json.dumps(doc).encode())
    part, _ = store_part(job, PartSource("algo-1", 0, "kineto", name), data)
    return part


def parsed_here(part: ProfilePart) -> ProfilePart:
    """Parsed in this process (a test using it asks for ``parsed_by_hand``: the run's worker
    must not take the part first)."""
    ingest_part.apply(args=[part.id])
    return ProfilePart.objects.get(id=part.id)


LONG_NAME = "".join(random.Random(15).choices(string.ascii_letters, k=4000))  # incompressible


@pytest.mark.django_db
def test_it_stores_names_postgres_would_refuse(user, parsed_by_hand):
    """NUL characters and names too long for an index entry: the part still parses."""
    job = TrainingJob.objects.create(name="odd-names", owner=user)
    annotation = {**EVENT, "cat": "user_annotation", "tid": 1}
    doc = {
        "traceEvents": [
            {**EVENT, "name": "nul\u0000k"},
            {**EVENT, "name": LONG_NAME},
            {**annotation, "name": "a\u0000"},
            {**annotation, "name": LONG_NAME},
        ],
        "traceName": "t\u0000",
    }
    part = parsed_here(stored(job, doc))
    assert part.state == PartState.DONE, part.error

    marker = f"… [4000 characters, cut; #{hashlib.sha256(LONG_NAME.encode()).hexdigest()[:8]}]"
    long_stored = LONG_NAME[: 2000 - len(marker.encode())] + marker
    kernels = KernelStat.objects.filter(part=part).order_by("name")
    assert sorted(kernels.values_list("name", flat=True)) == sorted(["nul\ufffdk", long_stored])
    annotations = Annotation.objects.filter(part=part).values_list("name", flat=True)
    assert sorted(annotations) == sorted(["a\ufffd", long_stored])
    assert len(long_stored.encode()) == 2000
    assert PartSummary.objects.get(part=part).metadata["trace_name"] == "t\ufffd"


@pytest.mark.django_db
def test_it_writes_the_timeline_store_privately(user, parsed_by_hand):
    job = TrainingJob.objects.create(name="private-store", owner=user)
    part = parsed_here(stored(job, {"traceEvents": [EVENT]}))
    store = storage.stores_dir(part.job_id) / str(part.pk)
    modes = {stat.S_IMODE(p.stat().st_mode) for p in store.rglob("*") if p.is_file()}
    folders = {stat.S_IMODE(p.stat().st_mode) for p in [store, *store.rglob("*")] if p.is_dir()}
    assert (modes, folders) == ({0o600}, {0o700})


@pytest.mark.django_db
def test_it_fails_a_base_time_beyond_int64_clearly(user, parsed_by_hand):
    job = TrainingJob.objects.create(name="far-future", owner=user)
    part = parsed_here(stored(job, {"traceEvents": [EVENT], "baseTimeNanoseconds": 2**63 - 1}))
    assert part.state == PartState.FAILED
    assert part.error == (
        "This file could not be read: its baseTimeNanoseconds (9223372036854775807) is not a "
        "time this trace can have been recorded at (nanoseconds since 1970, before the year 2100)"
    )


@pytest.mark.django_db
def test_it_fails_a_part_whose_results_the_database_refuses(user, parsed_by_hand):
    """Whatever Postgres refuses while the results are written (here a real trigger), the
    write rolls back and the part fails with the reason instead of staying "processing"."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION refuse_kernel() RETURNS trigger AS $$ BEGIN "
            "IF NEW.name = 'refused' THEN RAISE EXCEPTION 'kernel name refused'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql;"
            "CREATE TRIGGER refuse_kernel BEFORE INSERT ON ingest_kernelstat "
            "FOR EACH ROW EXECUTE FUNCTION refuse_kernel();"
        )
    job = TrainingJob.objects.create(name="refused", owner=user)
    part = parsed_here(stored(job, {"traceEvents": [{**EVENT, "name": "refused"}]}))
    assert part.state == PartState.FAILED
    assert part.error == (
        "This file was read, but its results could not be stored: the database refused a value "
        "(kernel name refused)."
    )
    assert sum(row_counts(part.id).values()) == 0


@pytest.mark.django_db
def test_it_fails_a_part_that_killed_its_worker_too_often(user, settings):
    settings.INGEST_MAX_PARSE_ATTEMPTS = 3
    job = TrainingJob.objects.create(name="oom", owner=user)
    part = stored(job, {"traceEvents": [EVENT]})
    for _ in range(3):  # taken, then the worker dies: the broker redelivers the task
        assert logic.claim(part.id, "task-a")
    assert not logic.claim(part.id, "task-a")
    part.refresh_from_db()
    assert part.state == PartState.FAILED
    assert part.error == (
        "The parse of this part was cut short 3 times (its worker died: out of memory, or "
        "stopped; or it lost the database), so it is not tried again. Reprocess it to try once "
        "more."
    )


@pytest.mark.django_db
def test_it_sweeps_parts_with_no_sign_of_life(user, settings, parsed_by_hand):
    """A lost enqueue (pending) and a dead worker's part (processing) are queued again and
    parsed; recent ones are left alone."""
    settings.INGEST_STALL_SECONDS = 600
    job = TrainingJob.objects.create(name="swept", owner=user)
    with broker_down():
        lost = stored(job, {"traceEvents": [EVENT]}, "lost.json")
        dead = stored(job, {"traceEvents": [{**EVENT, "name": "k2"}]}, "dead.json")
        recent = stored(job, {"traceEvents": [{**EVENT, "name": "k3"}]}, "recent.json")
    assert logic.claim(dead.id, "task-of-a-dead-worker")
    long_ago = timezone.now() - timedelta(seconds=601)
    ProfilePart.objects.filter(id__in=[lost.id, dead.id]).update(updated_at=long_ago)

    assert sorted(logic.sweep_unfinished()) == sorted([lost.id, dead.id])
    states = dict(ProfilePart.objects.filter(job=job).values_list("id", "state"))
    assert states == {lost.id: "pending", dead.id: "pending", recent.id: "pending"}
    assert sweep_unfinished_parts.apply().get() == 0  # just queued: not stale any more
    assert parsed_here(lost).state == PartState.DONE
    dead = parsed_here(dead)
    assert (dead.state, dead.parse_attempts) == (PartState.DONE, 2)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_an_upload_during_a_broker_outage_is_kept_and_parsed(api, user, celery_worker_process):
    """The upload answers as usual; the collector's retry (same bytes) queues the part, and
    the sweep would too."""
    job = TrainingJob.objects.create(name="outage", owner=user)
    with broker_down():
        first = upload(api, job, GOOD)
    assert first["state"] == "pending"
    assert ProfilePart.objects.get(id=first["id"]).state == PartState.PENDING
    retry = api.post(
        f"/api/jobs/{job.id}/parts/",
        {"node": "algo-1", "rank": 0, "kind": "kineto", "file": io.BytesIO(GOOD.read_bytes())},
        format="multipart",
    )
    assert retry.status_code == 200 and retry.json()["id"] == first["id"]
    (part,) = wait_parsed(first["id"])
    assert part.state == PartState.DONE, part.error
    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]
    assert sum(k["count"] for k in kernels) == sum(
        expected("nccl_rank0.json.gz").kernel_count.values()
    )


# A pool process as the worker runs it, with a ceiling just above what it holds after start-up;
# then, in the same process, the ceiling lifted and the part parsed again.
PARSE_UNDER_A_CEILING = """
import json
import resource
import sys
import django
django.setup()
from django.conf import settings
from profiler_app.core.models import ProfilePart
from profiler_app.ingest.tasks import ingest_part
from profiler_app.lib.memory import limit_memory
part_id = int(sys.argv[1])
status = open("/proc/self/status").read().splitlines()
data_mb = int(next(line.split()[1] for line in status if line.startswith("VmData:"))) // 1024
settings.WORKER_MEMORY_LIMIT_MB = data_mb + 16
limit_memory(settings.WORKER_MEMORY_LIMIT_MB)
ingest_part.apply(args=[part_id])
failed = ProfilePart.objects.get(id=part_id)
_, hard = resource.getrlimit(resource.RLIMIT_DATA)
resource.setrlimit(resource.RLIMIT_DATA, (hard, hard))
ProfilePart.objects.filter(id=part_id).update(state="pending")
ingest_part.apply(args=[part_id])
print(json.dumps([settings.WORKER_MEMORY_LIMIT_MB, failed.state, failed.error]))
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_part_over_the_memory_ceiling_fails_and_the_worker_lives(user, tmp_path):
    job = TrainingJob.objects.create(name="too-big", owner=user)
    # Not queued (broker down), so that no running worker takes it first.
    with broker_down(), big_trace(tmp_path, copies=4).open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", "big.json.gz"), f)
    env = {**os.environ, "DATABASE_URL": database_url(django_settings.DATABASES["default"])}
    done = subprocess.run(
        [sys.executable, "-c", PARSE_UNDER_A_CEILING, str(part.id)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    limit_mb, state, error = json.loads(done.stdout.splitlines()[-1])
    assert (state, error) == (
        PartState.FAILED,
        f"This part needs more memory than a worker may use (WORKER_MEMORY_LIMIT_MB = {limit_mb:,} MB).",
    )
    part.refresh_from_db()  # the same process parsed it once the ceiling was lifted
    assert (part.state, part.error) == (PartState.DONE, "")
    assert row_counts(part.id)["PartSummary"] == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_part_reprocessed_while_it_is_parsed_ends_parsed_once(user, tmp_path):
    """Two parses of one part at once (it was reprocessed mid-parse) write separate stores;
    the first one's results are refused, the part is parsed once and no store is left over."""
    from django.db import connection

    job = TrainingJob.objects.create(name="twice-at-once", owner=user)
    with broker_down(), big_trace(tmp_path, copies=2).open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", "big.json.gz"), f)
    assert logic.claim(part.id, "first")

    def parse(task_id: str) -> None:
        try:
            logic.parse_claimed_part(part.id, task_id)
        finally:
            connection.close()

    first = threading.Thread(target=parse, args=("first",))
    first.start()
    wait_for(
        lambda: any(storage.stores_dir(part.job_id).glob("*.incoming*")),
        30,
        0.01,
    )
    with broker_down():
        reset_part_for_reprocess(part)
    assert logic.claim(part.id, "second")
    parse("second")
    first.join(60)

    part.refresh_from_db()
    assert (part.state, part.error, part.parse_attempts) == (PartState.DONE, "", 1)
    assert row_counts(part.id)["PartSummary"] == 1
    kernels = KernelStat.objects.filter(part=part, windows__in=rows_in(WHOLE_TRACE))
    assert sum(kernels.values_list("count", flat=True)) == 2 * sum(
        expected("gpu_training_rank0.pt.trace.json.gz").kernel_count.values()
    )
    store = storage.stores_dir(part.job_id) / str(part.pk)
    # Beside it, only what was kept from it (the part's analyses, computed by its parse).
    kept = (storage.media_root() / storage.kept_key(part.job_id, "")).name
    assert sorted(p.name for p in store.parent.iterdir() if p.name != kept) == [store.name]


@pytest.mark.django_db
def test_it_stores_a_read_warning_that_quotes_a_nul(user, parsed_by_hand):
    """The warning about an unknown category quotes its name, NUL included."""
    job = TrainingJob.objects.create(name="odd-category", owner=user)
    part = parsed_here(stored(job, {"traceEvents": [EVENT, {**EVENT, "cat": "c\u0000t"}]}))
    assert (part.state, part.error) == (PartState.DONE, "")
    assert "category 'c\ufffdt' (1)" in part.warning


@pytest.mark.django_db(transaction=True)
def test_an_unexpected_parse_failure_says_so_without_internals(user, monkeypatch, parsed_by_hand):
    from profiler_app.ingest import logic as ingest_logic

    def broken(*args, **kwargs):
        raise RuntimeError("KeyError in frame 0x7f3a (internal detail)")

    monkeypatch.setattr(ingest_logic, "ingest_trace", broken)
    job = TrainingJob.objects.create(name="unexpected", owner=user)
    part = parsed_here(stored(job, {"traceEvents": [EVENT]}))
    assert part.state == PartState.FAILED
    assert part.error == (
        "This file could not be parsed: the server met an unexpected problem with it "
        f"(part {part.id}; the worker's log has the details). Reprocess it to try again."
    )


@pytest.mark.django_db
def test_a_parse_logs_where_its_time_went(user, caplog, parsed_by_hand):
    """One line per parsed part: its events (as many as the file's X and instant events), its
    wall time and each step's; a part that fails logs no such line."""
    job = TrainingJob.objects.create(name="timed", owner=user)
    with GOOD.open("rb") as f:
        good, _ = store_part(job, PartSource("algo-1", 0, "kineto", GOOD.name), f)
    name, (content, _) = next(iter(HOSTILE.items()))
    bad, _ = store_part(job, PartSource("algo-1", 1, "kineto", name), io.BytesIO(content))
    with caplog.at_level(logging.INFO, logger="profiler_app.ingest.logic"):
        ingest_part.apply(args=[good.id])
        ingest_part.apply(args=[bad.id])
    assert ProfilePart.objects.get(id=bad.id).state == PartState.FAILED
    lines = [r.getMessage() for r in caplog.records if " parsed (" in r.getMessage()]
    assert len(lines) == 1, lines
    found = re.fullmatch(r"Part (\d+) parsed \(([\d,]+) events\) in ([\d.]+) s: (.*)", lines[0])
    assert found is not None, lines[0]
    assert int(found[1]) == good.id
    assert int(found[2].replace(",", "")) == len(expected(GOOD.name).events)
    steps = dict(re.fullmatch(r"(.+) ([\d.]+) s", step).groups() for step in found[4].split(", "))
    assert list(steps) == [
        "events read",
        "store written",
        "cluster frames",
        "step breakdown",
        "index and SQL totals",
        "analyses",
        "store kept",
        "results saved",
    ]
    # No step is negative ("events read" is the read less the store's finish, timed inside
    # it), and none is longer than the whole.
    assert all(0 <= float(seconds) <= float(found[3]) for seconds in steps.values()), steps
