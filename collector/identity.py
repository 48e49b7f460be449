"""Who is uploading: node name, rank, local rank and pid of this training process.

Node names follow SageMaker's ``algo-<i>`` (1-based node index) when a launcher says which node
this is (torchrun's ``GROUP_RANK``, SLURM's ``SLURM_NODEID``); otherwise ``PROFILER_NODE_NAME``,
otherwise the host name.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Identity:
    node: str
    hostname: str
    rank: int
    local_rank: int
    world_size: int
    node_count: int
    pid: int


def _first_int(environ: Mapping[str, str], *names: str) -> int | None:
    for name in names:
        raw = environ.get(name)
        if raw is not None and raw.strip().lstrip("-").isdigit():
            return int(raw)
    return None


def detect(
    environ: Mapping[str, str] | None = None,
    node_name: str | None = None,
    hostname: str | None = None,
    pid: int | None = None,
) -> Identity:
    env = os.environ if environ is None else environ
    host = hostname or socket.gethostname()
    node_rank = _first_int(env, "GROUP_RANK", "SLURM_NODEID")
    if node_name:
        node = node_name
    elif node_rank is not None:
        node = f"algo-{node_rank + 1}"
    else:
        node = env.get("PROFILER_NODE_NAME") or host
    return Identity(
        node=node,
        hostname=host,
        rank=_first_int(env, "RANK", "SLURM_PROCID") or 0,
        local_rank=_first_int(env, "LOCAL_RANK", "SLURM_LOCALID") or 0,
        world_size=_first_int(env, "WORLD_SIZE", "SLURM_NTASKS") or 1,
        node_count=_first_int(env, "GROUP_WORLD_SIZE", "SLURM_NNODES", "SLURM_JOB_NUM_NODES") or 1,
        pid=os.getpid() if pid is None else pid,
    )


def default_job_name(environ: Mapping[str, str] | None = None, now: float | None = None) -> str:
    """``<script>-<run id>``: every rank of one launch must arrive at the same name.

    torchrun's ``TORCHELASTIC_RUN_ID`` and SLURM's job id are shared by all ranks; a lone
    process falls back to the local start time.
    """
    env = os.environ if environ is None else environ
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "python"
    run_id = env.get("TORCHELASTIC_RUN_ID", "")
    if not run_id or run_id == "none":
        run_id = env.get("SLURM_JOB_ID", "")
    if not run_id:
        run_id = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return safe_name(f"{script}-{run_id}")


def resource_ids(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Launcher identifiers worth showing on the job's Info page."""
    env = os.environ if environ is None else environ
    keys = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_CLUSTER_NAME", "MASTER_ADDR")
    return {k.lower(): env[k] for k in keys if env.get(k) and env[k] != "none"}


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A job/node name usable in file names (chunk files carry both)."""
    return _UNSAFE.sub("_", name).strip("._") or "job"
