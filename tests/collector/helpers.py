"""Shared helpers for the collector tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import collector
from collector.api import ApiClient
from collector.profiler import Profiler
from collector.spool import ProcessSpool
from collector.uploader import Uploader
from profiler_app.core.models import PartState, ProfilePart, TrainingJob
from profiler_app.traces import IngestResult, TimelineReader, ingest_trace
from tests.conftest import wait_for
from tracefmt.chunk import Chunk, read_chunk
from tracefmt.kinds import EventKind

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_cnn.py"
JOBS = Path(__file__).parent / "jobs"
DATA = REPO / "tests" / "data"  # the fixtures every test package shares

# Launcher and profiler variables of the machine running the tests must not leak into jobs.
_LEAKY_PREFIXES = ("PROFILER_", "SLURM_", "TORCHELASTIC_")
_LEAKY_NAMES = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "CUDA_VISIBLE_DEVICES",
}


def job_env(spool: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_LEAKY_PREFIXES) and k not in _LEAKY_NAMES
    }
    env.update(
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(REPO),
        PROFILER_SPOOL_DIR=str(spool),
        PROFILER_FLUSH_INTERVAL_S="0.5",
        PROFILER_SHUTDOWN_TIMEOUT_S="20",
    )
    env.update(extra)
    return env


def python() -> str:
    return sys.executable


def run_job_script(server, spool: Path, name: str, script: str, steps: int, **env: str) -> None:
    """Runs ``script`` of jobs/ for ``steps`` steps as a user's training process, its collector
    sending to ``server`` as job ``name``; fails with the end of its stderr."""
    env = job_env(
        spool,
        PROFILER_SERVER_URL=server.url,
        PROFILER_TOKEN=server.token,
        PROFILER_JOB_NAME=name,
        PROFILER_PERF_COUNTERS="0",
        **env,
    )
    done = subprocess.run(
        [python(), str(JOBS / script), str(steps)], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]


def settled_parts(job: TrainingJob) -> list[ProfilePart]:
    """The job's parts once the server's ingest has finished with each (none pending or
    processing), however each ended."""

    def settled():
        parts = list(ProfilePart.objects.filter(job=job))
        busy = {PartState.PENDING, PartState.PROCESSING}
        return parts if parts and not any(p.state in busy for p in parts) else None

    return wait_for(settled, timeout=300)


# Kineto windows at steps 2-3 and 8-9 of a loop of 12: skip 1, warm up 1, record 2, wait 3.
WINDOWS_AT_2_3_AND_8_9 = {
    "kineto_skip_first_steps": 1,
    "kineto_warmup_steps": 1,
    "kineto_active_steps": 2,
    "kineto_wait_steps": 3,
}


def spool_profiler(spool: Path, **config: Any) -> Profiler:
    """A profiler of this process that writes its chunks to ``spool`` and installs no exit hooks
    (the test stops it)."""
    prof = Profiler()
    prof.configure(collector.Config(spool_dir=str(spool), exit_hooks=False, **config))
    return prof


def spooled_chunks(spool: Path) -> list[Chunk]:
    chunks = [read_chunk(p) for p in spool.rglob("*.pcol")]
    return sorted(chunks, key=lambda c: (c.meta["pid"], c.meta["seq"]))


def ingested_chunks(spool: Path) -> Iterator[tuple[Path, IngestResult, TimelineReader]]:
    """Each spooled chunk ingested as the server does, into a store of its own in the spool."""
    for n, path in enumerate(sorted(spool.rglob("*.pcol"))):
        result = ingest_trace(path, "collector", spool / f"store-{n}")
        yield path, result, TimelineReader(spool / f"store-{n}")


def step_names(chunks: list[Chunk]) -> list[str]:
    names: list[str] = []
    for chunk in chunks:
        steps = chunk.events["ev_kind"] == EventKind.STEP
        names.extend(chunk.event_names()[steps].tolist())
    return names


def annotation_counts(chunks: list[Chunk]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for chunk in chunks:
        mask = chunk.events["ev_kind"] == EventKind.USER_ANNOTATION
        for name in chunk.event_names()[mask].tolist():
            counts[name] = counts.get(name, 0) + 1
    return counts


def live_uploader(server_url: str, token: str, spool: Path, job: str) -> Uploader:
    """A training process's upload thread for ``job``, started, with no training around it."""
    info = {
        "job": {"name": job, "status": "in_progress"},
        "source": {"node": "node-0", "rank": 0, "pid": os.getpid(), "hostname": "node-0"},
        "server_url": server_url,
        "final_status": None,
    }
    uploader = Uploader(ProcessSpool(spool), ApiClient(server_url, token), info, 64 << 20)
    uploader.start()
    return uploader


def collector_chunks(count: int) -> list[Path]:
    """The first ``count`` chunks of a real collector job (an H100 CNN)."""
    return sorted((DATA / "h100_collector").glob("*.pcol"))[:count]
