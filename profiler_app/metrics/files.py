"""Where the web processes keep their request counts for /metrics (prometheus_client's
multiprocess files, PROMETHEUS_MULTIPROC_DIR).

The files are memory-mapped and sparse: a process that first touches a page of one needs that
page from the filesystem, and on a full disk it dies of SIGBUS instead of answering (the soak's
disk-full fault: every web process died as it started, so no upload was told the disk was full).
So they live in memory (/dev/shm), in a folder named after the data directory (two instances on
one host keep theirs apart), and under the data directory only where there is no /dev/shm."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

SHARED_MEMORY = Path("/dev/shm")


def metrics_folder(data_dir: Path, shared_memory: Path = SHARED_MEMORY) -> Path:
    if shared_memory.is_dir() and os.access(shared_memory, os.W_OK | os.X_OK):
        digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
        return shared_memory / f"profiler-app-metrics-{os.getuid()}-{digest}"
    return data_dir / "metrics"
