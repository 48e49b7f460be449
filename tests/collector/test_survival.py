"""The training job never dies because of the profiler: each failure is logged once and the
job finishes normally. Real processes, real sockets, real file systems."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from collector.api import ApiClient, ServerUnreachable
from tests.conftest import wait_for

from .helpers import JOBS, annotation_counts, job_env, python, spooled_chunks, step_names


def closed_port_url() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def port_that_never_takes_a_connection() -> Iterator[str]:
    """A listening port whose queue is full: the kernel drops new connections' SYNs, as a
    firewall or a network partition does, so a connect neither succeeds nor is refused."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)  # room for one connection, which is never accepted
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port))
    wait_for(lambda: accept_queue(port) >= 1, timeout=60, interval=0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        filler.close()
        listener.close()


def accept_queue(port: int) -> int:
    """How many connections wait to be accepted on a listening 127.0.0.1 ``port``."""
    local = f"0100007F:{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[3] == "0A":  # LISTEN; its rx_queue is the queue
            return int(fields[4].split(":")[1], 16)
    return 0


def run_job(env: dict[str, str], *args: str, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python(), str(JOBS / "tiny_job.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
    )


@pytest.mark.slow  # trains a model in a child process
def test_it_trains_on_and_spools_everything_while_the_server_is_down(tmp_path):
    spool = tmp_path / "spool"
    env = job_env(spool, PROFILER_SERVER_URL=closed_port_url(), PROFILER_JOB_NAME="down")
    done = run_job(env, "--steps", "40", "--step-ms", "25")
    assert done.returncode == 0, done.stderr
    assert "TRAINING DONE" in done.stdout
    assert done.stderr.count("unreachable") == 1, done.stderr
    assert "not uploaded yet" in done.stderr
    chunks = spooled_chunks(spool)
    assert [c.meta["seq"] for c in chunks] == list(range(len(chunks)))
    assert len(chunks) >= 2 and chunks[-1].meta["final"] is True
    assert step_names(chunks) == [f"step_{i}" for i in range(40)]
    (info,) = [json.loads(p.read_text()) for p in spool.rglob("job.json")]
    assert info["final_status"] == "completed"
    assert info["server_url"].startswith("http://127.0.0.1:")


@pytest.mark.slow  # trains a model in a child process
def test_it_fails_the_job_but_not_differently_when_the_script_raises(tmp_path):
    spool = tmp_path / "spool"
    done = run_job(job_env(spool, PROFILER_JOB_NAME="boom"), "--steps", "10", "--fail-at", "4")
    assert done.returncode == 1
    assert "RuntimeError: boom at step 4" in done.stderr
    (info,) = [json.loads(p.read_text()) for p in spool.rglob("job.json")]
    assert info["final_status"] == "failed"
    assert step_names(spooled_chunks(spool)) == [f"step_{i}" for i in range(5)]


def _limit_file_size() -> None:
    # Writes past 4 KiB fail with EFBIG instead of killing the process with SIGXFSZ.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.slow  # trains a model in a child process
def test_it_survives_a_spool_it_cannot_write(tmp_path):
    spool = tmp_path / "spool"
    env = job_env(spool, PROFILER_SERVER_URL=closed_port_url(), PROFILER_JOB_NAME="efbig")
    done = run_job(env, "--steps", "30", preexec=_limit_file_size)
    assert done.returncode == 0, done.stderr
    assert "TRAINING DONE" in done.stdout
    assert done.stderr.count("cannot write to the spool") == 1, done.stderr


@pytest.mark.slow  # trains a model in a child process
def test_it_survives_a_full_disk(full_disk):
    env = job_env(
        full_disk / "spool", PROFILER_SERVER_URL=closed_port_url(), PROFILER_JOB_NAME="enospc"
    )
    done = run_job(env, "--steps", "30")
    assert done.returncode == 0, done.stderr
    assert "TRAINING DONE" in done.stdout
    assert done.stderr.count("No space left on device") == 1, done.stderr


@pytest.mark.slow  # trains a model in a child process
def test_it_samples_what_it_can_without_pynvml(tmp_path):
    spool = tmp_path / "spool"
    hide = (
        "import runpy, sys; sys.modules['pynvml'] = None; sys.argv = sys.argv[1:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    done = subprocess.run(
        [python(), "-c", hide, str(JOBS / "tiny_job.py"), "--steps", "10", "--step-ms", "30"],
        env=job_env(spool, PROFILER_JOB_NAME="no-nvml", PROFILER_SAMPLING_INTERVAL_MS="20"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    chunks = spooled_chunks(spool)
    assert chunks[0].meta["sources"]["nvml"] == "pynvml not installed (pip install nvidia-ml-py)"
    assert chunks[0].meta["sources"]["psutil"] == "ok"
    cpu_samples = sum(int((c.samples["s_kind"] == 3).sum()) for c in chunks)
    assert cpu_samples >= os.cpu_count()


@pytest.mark.slow  # trains a model in a child process
@pytest.mark.parametrize(
    "span", [("2", "4"), ("0", "8")], ids=["inside-our-window", "around-our-window"]
)
def test_it_survives_the_scripts_own_torch_profiler(tmp_path, span):
    """Two Kineto sessions end each other, and exporting a session another one ended crashes
    the process (SIGSEGV in torch 2.13). The collector ends its own window when the script's
    profiler starts (or never starts one while it runs) and keeps annotating."""
    spool = tmp_path / "spool"
    env = job_env(
        spool,
        PROFILER_JOB_NAME=f"kineto-{uuid.uuid4().hex[:6]}",
        PROFILER_CPU_OPERATORS="1",
        PROFILER_KINETO_SKIP_FIRST_STEPS="0",
        PROFILER_KINETO_WARMUP_STEPS="1",
        PROFILER_KINETO_ACTIVE_STEPS="3",
        PROFILER_KINETO_WAIT_STEPS="2",
    )
    done = run_job(env, "--steps", "16", "--user-profiler", *span)
    assert done.returncode == 0, done.stderr
    assert "TRAINING DONE" in done.stdout
    assert done.stderr.count("started its own torch.profiler session") == 1, done.stderr
    chunks = spooled_chunks(spool)
    assert step_names(chunks) == [f"step_{i}" for i in range(16)]
    assert annotation_counts(chunks)["Forward"] == 16


def test_the_package_imports_without_django_or_torch():
    code = (
        "import sys; sys.modules['django'] = None; sys.modules['torch'] = None; "
        "import collector, tracefmt.chunk, collector.profiler, collector.cli; "
        "print('ok')"
    )
    done = subprocess.run(
        [python(), "-c", code], capture_output=True, text=True, env=job_env(Path("/nonexistent"))
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_a_server_out_of_reach_costs_a_try_its_connect_timeout_not_the_request_timeout():
    """A job's last try at exit, or the next try of its upload thread, gives up on a host that
    drops its packets at the connect timeout; the request timeout is for an upload's answer
    (with one timeout for both, this waits out the pytest timeout and fails)."""
    with port_that_never_takes_a_connection() as url:
        client = ApiClient(url, "token", timeout_s=3600, connect_timeout_s=1)
        with pytest.raises(ServerUnreachable, match="unreachable") as failed:
            client.find_job("any")
    assert isinstance(failed.value.__cause__, requests.ConnectTimeout)
