"""Collector and CLI against the real server: live_server, a Celery worker and PostgreSQL."""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from django.conf import settings
from django.utils import timezone

from profiler_app.core import logic as core_logic
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.history.models import RunVerdict, SeriesRun
from tests.conftest import wait_for
from tests.h200 import unpack
from tracefmt.chunk import Chunk, read_chunk

from .helpers import (
    DATA,
    EXAMPLE,
    JOBS,
    collector_chunks,
    job_env,
    live_uploader,
    python,
    settled_parts,
    step_names,
)
from .proxy import TcpProxy

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


_running: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_stray_jobs():
    """A failed assertion must not leave a training job talking to the next test's server."""
    yield
    while _running:
        proc = _running.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(
        [python(), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _running.append(proc)
    return proc


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    return out, err


def job_named(name: str) -> TrainingJob:
    return wait_for(lambda: TrainingJob.objects.filter(name=name).first(), timeout=120)


def processed_chunks(job: TrainingJob) -> list[Chunk]:
    """The job's chunks, once the server's ingest has processed every part."""
    parts = settled_parts(job)
    failed = [(p.original_name, p.error) for p in parts if p.state != PartState.DONE]
    assert not failed, failed
    chunks = []
    for part in parts:
        with part.file.open("rb") as fh:
            chunks.append(read_chunk(fh.read()))
    return sorted(chunks, key=lambda c: (c.meta["rank"], c.meta["pid"], c.meta["seq"]))


def assert_complete(chunks: list[Chunk], steps: int) -> None:
    """Nothing lost (every chunk and step arrived) and nothing duplicated."""
    by_process: dict[int, list[int]] = {}
    for chunk in chunks:
        by_process.setdefault(chunk.meta["pid"], []).append(chunk.meta["seq"])
    for seqs in by_process.values():
        assert seqs == list(range(len(seqs)))
    assert [c.meta["final"] for c in chunks].count(True) == len(by_process)
    assert sorted(step_names(chunks), key=lambda n: int(n[5:])) == [
        f"step_{i}" for i in range(steps)
    ]


def proxy_for(server) -> TcpProxy:
    target = urlsplit(server.url)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 80)
    proxy.start()
    return proxy


def test_the_example_job_appears_while_training_and_completes(server, tmp_path):
    env = job_env(tmp_path / "spool", PROFILER_SERVER_URL=server.url, PROFILER_TOKEN=server.token)
    proc = start([str(EXAMPLE), "--steps", "150", "--job-name", "cnn-example"], env)
    job = job_named("cnn-example")
    assert job.status == "in_progress"
    wait_for(lambda: ProfilePart.objects.filter(job=job).exists(), timeout=120)
    assert proc.poll() is None, "a part should arrive while the job is still training"
    out, err = finish(proc)
    assert proc.returncode == 0, err
    assert "trained 150 steps" in out

    job.refresh_from_db()
    assert job.status == "completed"
    assert job.ended_at is not None and job.started_at is not None
    assert job.framework == "PyTorch" and job.framework_version.startswith("2.")
    assert job.hyperparameters == {"batch_size": 32, "lr": 0.01, "steps": 150}
    chunks = processed_chunks(job)
    assert len(chunks) >= 2
    assert_complete(chunks, 150)
    meta = chunks[0].meta
    assert (meta["rank"], meta["pid"], meta["world_size"]) == (0, proc.pid, 1)
    part = ProfilePart.objects.filter(job=job).first()
    assert (part.kind, part.rank, part.pid, part.node.name) == (
        "collector",
        0,
        proc.pid,
        meta["node"],
    )
    assert not list((tmp_path / "spool").rglob("*.pcol")), "uploaded chunks leave the spool"


def test_a_server_outage_mid_run_loses_nothing(server, tmp_path):
    proxy = proxy_for(server)
    env = job_env(tmp_path / "spool", PROFILER_SERVER_URL=proxy.url, PROFILER_TOKEN=server.token)
    log = tmp_path / "stderr.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [python(), str(EXAMPLE), "--steps", "200", "--job-name", "outage"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        _running.append(proc)
        job = job_named("outage")
        wait_for(lambda: ProfilePart.objects.filter(job=job).exists(), timeout=120)
        proxy.stop()
        # Up again only once the collector has met the outage (a chunk merely passing through
        # the spool on its way to the server proves nothing).
        wait_for(lambda: "spooling to" in log.read_text(), timeout=120)
        proxy.start()
        out, _ = finish(proc)
    err = log.read_text()
    assert proc.returncode == 0, err
    assert "server reachable again" in err
    job.refresh_from_db()
    assert job.status == "completed"
    assert_complete(processed_chunks(job), 200)


def test_a_job_ending_while_it_waits_out_an_outage_sends_everything_at_exit(server, tmp_path):
    """The server is back while the upload thread waits before its next try: the job's exit
    tries again at once and sends all, leaving nothing for a later flush."""
    proxy = proxy_for(server)
    proxy.stop()
    uploader = live_uploader(proxy.url, server.token, tmp_path / "spool", "back-at-exit")
    chunks = collector_chunks(2)
    for chunk in chunks:
        uploader.submit(chunk.name, chunk.read_bytes())
    # Four tries failed: the next is 4 s (3.2 to 4.8 s) away.
    wait_for(lambda: uploader.failed_tries >= 4, timeout=120, interval=0.05)
    proxy.start()
    uploader.set_status("completed", timezone.now().isoformat())
    try:
        assert uploader.close(timeout_s=120)
    finally:
        proxy.stop()
    job = TrainingJob.objects.get(name="back-at-exit")
    assert job.status == "completed"
    parts = ProfilePart.objects.filter(job=job)
    assert sorted(parts.values_list("original_name", flat=True)) == [c.name for c in chunks]
    assert not list((tmp_path / "spool").glob("*.pcol"))


def test_chunks_spooled_until_after_exit_are_flushed_once(server, tmp_path):
    spool = tmp_path / "spool"
    proxy = proxy_for(server)
    env = job_env(spool, PROFILER_SERVER_URL=proxy.url, PROFILER_TOKEN=server.token)
    # The job name from the environment, as the README says a launcher may set it.
    env["PROFILER_JOB_NAME"] = "flush-later"
    proc = start([str(EXAMPLE), "--steps", "100"], env)
    job = job_named("flush-later")
    wait_for(lambda: ProfilePart.objects.filter(job=job).exists(), timeout=120)
    proxy.stop()
    out, err = finish(proc)
    assert proc.returncode == 0, err
    assert "profiler-collect flush" in err
    job.refresh_from_db()
    assert job.status == "in_progress"
    backup = tmp_path / "backup"
    shutil.copytree(spool, backup)
    spooled = len(list(backup.rglob("*.pcol")))
    assert spooled >= 1

    cli = [
        python(),
        "-m",
        "collector.cli",
        "flush",
        "--spool",
        str(spool),
        "--server",
        server.url,
        "--token",
        server.token,
    ]
    flushed = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert flushed.returncode == 0, flushed.stderr
    assert "status completed" in flushed.stderr
    job.refresh_from_db()
    assert job.status == "completed"
    chunks = processed_chunks(job)
    assert_complete(chunks, 100)
    assert not spool.exists() or not any(spool.iterdir())

    # A crash between upload and clean-up leaves chunks behind: sending them again is harmless.
    shutil.copytree(backup, spool, dirs_exist_ok=True)
    again = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert ProfilePart.objects.filter(job=job).count() == len(chunks)
    assert f"0 chunk(s) uploaded, {spooled} already on the server" in again.stderr


def test_a_full_spool_disk_still_delivers_everything_from_memory(server, full_disk):
    env = job_env(
        full_disk / "spool",
        PROFILER_SERVER_URL=server.url,
        PROFILER_TOKEN=server.token,
        PROFILER_JOB_NAME="full-disk",
    )
    done = subprocess.run(
        [python(), str(JOBS / "tiny_job.py"), "--steps", "30"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("keeping chunks in memory until they are uploaded") == 1
    job = TrainingJob.objects.get(name="full-disk")
    assert job.status == "completed"
    assert_complete(processed_chunks(job), 30)


def test_an_exception_fails_the_job(server, tmp_path):
    env = job_env(
        tmp_path / "spool",
        PROFILER_SERVER_URL=server.url,
        PROFILER_TOKEN=server.token,
        PROFILER_JOB_NAME="crashes",
    )
    done = subprocess.run(
        [python(), str(JOBS / "tiny_job.py"), "--steps", "50", "--fail-at", "7"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert "RuntimeError: boom at step 7" in done.stderr
    job = TrainingJob.objects.get(name="crashes")
    assert job.status == "failed"
    assert_complete(processed_chunks(job), 8)


def job_running_until_stopped(
    url: str, token: str, spool: Path, name: str
) -> tuple[subprocess.Popen, TrainingJob]:
    """tiny_job.py stepping every 20 ms until it is stopped, sending to ``url`` as job ``name``:
    its process, and its job once the first part has reached the server."""
    env = job_env(spool, PROFILER_SERVER_URL=url, PROFILER_TOKEN=token, PROFILER_JOB_NAME=name)
    proc = start([str(JOBS / "tiny_job.py"), "--forever", "--step-ms", "20"], env)
    job = job_named(name)
    wait_for(lambda: ProfilePart.objects.filter(job=job).exists(), timeout=120)
    return proc, job


def test_sigterm_stops_the_job_through_stopping(server, tmp_path):
    proxy = proxy_for(server)
    proc, job = job_running_until_stopped(proxy.url, server.token, tmp_path / "spool", "terminated")
    proc.send_signal(signal.SIGTERM)
    finish(proc)
    assert proc.returncode == -signal.SIGTERM
    job.refresh_from_db()
    assert job.status == "stopped"
    sent = bytes(proxy.sent)
    assert 0 < sent.index(b'"status": "stopping"') < sent.index(b'"status": "stopped"')
    chunks = processed_chunks(job)
    assert chunks[-1].meta["final"] is True


def test_a_killed_job_ends_after_the_silence_and_is_judged(server, tmp_path):
    proc, job = job_running_until_stopped(server.url, server.token, tmp_path / "spool", "killed")
    proc.kill()  # no final status, no last chunk
    finish(proc)
    processed_chunks(job)
    job.refresh_from_db()
    assert job.status == "in_progress"
    # What the beat's minutely sweep does once the silence (30 min by default) has passed.
    silence = timedelta(minutes=settings.COLLECTOR_SILENCE_MINUTES)
    assert core_logic.end_silent_jobs(timezone.now() + silence + timedelta(seconds=1)) == 1
    job.refresh_from_db()
    assert job.status == "stopped"
    assert job.end_reason.startswith("ended without a final status: nothing received for 30 min")
    # Judged like any ended run: the first of its series has no baseline, and History has its
    # figures (a CPU-only run without kernels among them).
    verdict = wait_for(lambda: RunVerdict.objects.filter(job=job).first(), timeout=120)
    assert (verdict.status, verdict.baseline) == ("unjudged", None)
    figures = SeriesRun.objects.get(job=job).figures
    assert figures["steps"] > 0 and figures["top_kernels"] == []


def test_a_spool_flushed_days_later_with_end_ends_when_its_process_stopped(server, tmp_path):
    """The real H200 spool, flushed days after its process died: the job is Stopped as of the
    last chunk that process wrote (its meta's created_ns), not as of the flush, whether the
    flush says --end or the server's silence sweep ends it."""
    spool = unpack(tmp_path) / "spool"
    chunks = sorted(spool.glob("*/*/*.pcol"))
    with zipfile.ZipFile(chunks[-1]) as archive:  # the raw meta, read without the collector
        meta = json.loads(np.load(io.BytesIO(archive.read("meta.npy"))).tobytes())
    process = json.loads((chunks[-1].parent / "job.json").read_text())
    cli = [
        python(), "-m", "collector.cli", "flush", "--server", server.url, "--token", server.token,
    ]  # fmt: skip
    # A copy of one small chunk flushed without --end, as a job of its own: it stays in
    # progress, and says so.
    unended = tmp_path / "unended"
    shutil.copytree(spool, unended)
    for chunk in sorted(unended.glob("*/*/*.pcol"))[:-1]:
        chunk.unlink()
    info = next(unended.glob("*/*/job.json"))
    info.write_text(json.dumps({**process, "job": {**process["job"], "name": "h200-unended"}}))
    kept = subprocess.run(
        [*cli, "--spool", str(unended)], capture_output=True, text=True, timeout=300
    )
    assert kept.returncode == 0, kept.stderr
    assert "status unchanged: its process never sent one, so the job reads In progress" in (
        kept.stderr
    )
    assert TrainingJob.objects.get(name="h200-unended").status == "in_progress"
    # The server's silence sweep ends it, as of when its chunk was recorded, days before the
    # flush (the sweep's clock set past the silence after the flush).
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    recorded = epoch + timedelta(microseconds=meta["created_ns"] // 1000)
    silence = timedelta(minutes=settings.COLLECTOR_SILENCE_MINUTES, seconds=1)
    core_logic.end_silent_jobs(timezone.now() + silence)
    swept = TrainingJob.objects.get(name="h200-unended")
    assert (swept.status, swept.ended_at.isoformat()) == (
        "stopped",
        "2026-11-26T05:40:09.518585+00:00",
    )
    assert swept.ended_at == recorded
    assert swept.end_reason.endswith("; its last chunk was recorded 2026-11-26 05:40 UTC")

    done = subprocess.run(
        [*cli, "--spool", str(spool), "--end"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    job = TrainingJob.objects.get(name="h200-resnet50-bf16")
    assert job.status == "stopped"
    assert job.started_at == datetime.fromisoformat(process["job"]["started_at"])
    assert job.ended_at == epoch + timedelta(microseconds=meta["created_ns"] // 1000)
    assert job.ended_at.isoformat() == "2026-11-26T05:40:09.518585+00:00"
    assert ProfilePart.objects.filter(job=job).count() == len(chunks) == 8


def test_each_rank_uploads_its_own_parts_of_one_job(server, tmp_path):
    procs = []
    for rank in (0, 1):
        env = job_env(
            tmp_path / "spool",
            PROFILER_SERVER_URL=server.url,
            PROFILER_TOKEN=server.token,
            TORCHELASTIC_RUN_ID="run42",
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE="2",
            GROUP_RANK="0",
            GROUP_WORLD_SIZE="1",
        )
        procs.append(start([str(JOBS / "tiny_job.py"), "--steps", "30"], env))
    for proc in procs:
        _, err = finish(proc)
        assert proc.returncode == 0, err
    job = TrainingJob.objects.get(name="tiny_job-run42")
    assert job.status == "completed"
    chunks = processed_chunks(job)
    assert {(c.meta["rank"], c.meta["local_rank"], c.meta["node"]) for c in chunks} == {
        (0, 0, "algo-1"),
        (1, 1, "algo-1"),
    }
    for rank in (0, 1):
        assert_complete([c for c in chunks if c.meta["rank"] == rank], 30)
    # Node-wide samples come from local rank 0 only.
    rank1 = [c for c in chunks if c.meta["rank"] == 1]
    assert rank1[0].meta["sources"]["psutil"] == "sampled by local rank 0 of this node"
    assert set(ProfilePart.objects.filter(job=job).values_list("node__name", flat=True)) == {
        "algo-1"
    }


def test_the_cli_uploads_multi_rank_traces_as_one_job(server):
    command = [
        python(), "-m", "collector.cli", "upload", str(DATA / "multirank_sampled"),
        "--job", "multirank",
        "--server", server.url,
        "--token", server.token,
        "--wait",
    ]  # fmt: skip
    # Bytes: text mode would turn a carriage return into a newline.
    done = subprocess.run(command, capture_output=True, timeout=300)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "created job 'multirank'" in stderr
    assert "rank-0.json.gz (rank 0, algo-1) [########################] 100%" in stderr
    # Not a terminal: the wait's count is one plain line each time it moves, ending at 2/2.
    assert "\r" not in stderr
    counts = [line for line in stderr.splitlines() if line.startswith("processed ")]
    assert counts[-1] == "processed 2/2"
    assert len(counts) == len(set(counts))
    job = TrainingJob.objects.get(name="multirank")
    assert job.status == "completed"
    parts = ProfilePart.objects.filter(job=job).order_by("rank")
    assert [(p.rank, p.kind, p.node.name, p.original_name) for p in parts] == [
        (0, "kineto", "algo-1", "rank-0.json.gz"),
        (1, "kineto", "algo-1", "rank-1.json.gz"),
    ]
    assert [p.size_bytes for p in parts] == [
        (DATA / "multirank_sampled" / "rank-0.json.gz").stat().st_size,
        (DATA / "multirank_sampled" / "rank-1.json.gz").stat().st_size,
    ]
    assert all(p.state == PartState.DONE for p in parts)
