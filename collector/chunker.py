"""Turns what the collector buffered (annotations, Kineto windows, samples) into one chunk.

A Kineto window goes in packed into compressed columns (``tracefmt.kineto_columns``, about a
sixth of its gzipped JSON), which the server unpacks into the JSON torch.profiler wrote and
parses with the parser it uses for uploaded trace files. Packing parses JSON, which would hold
the training process's GIL for seconds: it runs in a child process of its own, at a lower
priority, while the flusher thread waits (without the GIL). A window the child cannot pack in
time goes in gzipped, as torch.profiler wrote it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tracefmt
from collector.identity import Identity
from collector.spool import chunk_file_name
from tracefmt.chunk import KinetoWindow, chunk_bytes, empty_events, empty_samples
from tracefmt.strings import StringTable

log = logging.getLogger("collector")

# zlib's default: a third of the CPU time of level 9 (what torch's .json.gz export uses) for
# about 10 % more bytes.
KINETO_GZIP_LEVEL = 6
# Packing takes about ten times the window's JSON in memory (Python objects): larger windows
# are gzipped instead, and so is one the child has not packed in this time.
PACK_MAX_JSON_BYTES = 256 << 20
PACK_TIMEOUT_S = 300.0
# The child yields the CPU to training: it takes the idle scheduling class where Linux has it
# (it then runs only on a core nothing else wants), else the lowest priority, before it imports
# numpy, so that even its start-up does not slow a training that keeps every core busy.
PACK_CHILD = (
    "import os, sys\n"
    "try:\n"
    "    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "except (AttributeError, OSError):\n"
    "    os.nice(19)\n"
    "import time\n"
    "from tracefmt.kineto_columns import main\n"
    "code = main(sys.argv[1:])\n"
    "print(time.process_time_ns())\n"  # the CPU it took, start-up included, for the budget
    "sys.exit(code)\n"
)

# (kind, name, start_ns, dur_ns, tid) recorded by annotate()/step()
Annotation = tuple[int, str, int, int, int]
# (kind, device, counter name or "", time_ns, value) recorded by the sampler
SampleRow = tuple[int, int, str, int, float]


@dataclass(frozen=True)
class BuiltChunk:
    name: str
    data: bytes


class ChunkBuilder:
    def __init__(
        self,
        job: str,
        identity: Identity,
        torch_version: str | None,
        cuda: bool,
        devices: list[dict[str, Any]],
    ) -> None:
        self.job = job
        self.identity = identity
        self.torch_version = torch_version
        self.cuda = cuda
        self.devices = devices
        self.seq = 0

    def build(
        self,
        annotations: list[Annotation],
        kineto: list[KinetoWindow],
        samples: list[SampleRow],
        sources: dict[str, str],
        final: bool,
        capture: dict[str, Any] | None = None,
    ) -> BuiltChunk:
        strings = StringTable()
        events = self._annotation_columns(annotations, strings)
        sample_cols = self._sample_columns(samples, strings)
        ident = self.identity
        meta = {
            "job": self.job,
            "node": ident.node,
            "hostname": ident.hostname,
            "rank": ident.rank,
            "local_rank": ident.local_rank,
            "world_size": ident.world_size,
            "pid": ident.pid,
            "seq": self.seq,
            "final": final,
            "created_ns": time.time_ns(),
            "torch_version": self.torch_version,
            "cuda": self.cuda,
            "devices": self.devices,
            "cpu_count": os.cpu_count(),
            "sources": dict(sources),
        }
        if capture is not None:
            # What the Kineto windows cost and caught (``collector.budget``).
            meta["capture"] = capture
        data = chunk_bytes(meta, strings.strings, events, sample_cols, kineto)
        name = chunk_file_name(self.job, ident, self.seq)
        self.seq += 1
        return BuiltChunk(name, data)

    def _annotation_columns(
        self, rows: list[Annotation], strings: StringTable
    ) -> dict[str, np.ndarray]:
        cols = empty_events(len(rows))
        if not rows:
            return cols
        kinds, names, starts, durs, tids = zip(*rows, strict=True)
        cols["ev_kind"] = np.asarray(kinds, dtype=np.uint8)
        cols["ev_name"] = strings.intern_many(list(names), dtype=np.uint32)
        cols["ev_start_ns"] = np.asarray(starts, dtype=np.int64)
        cols["ev_dur_ns"] = np.asarray(durs, dtype=np.int64)
        cols["ev_pid"][:] = self.identity.pid
        cols["ev_tid"] = np.asarray(tids, dtype=np.int64)
        return cols

    def _sample_columns(self, rows: list[SampleRow], strings: StringTable) -> dict[str, np.ndarray]:
        cols = empty_samples(len(rows))
        if not rows:
            return cols
        kinds, devices, names, times, values = zip(*rows, strict=True)
        cols["s_kind"] = np.asarray(kinds, dtype=np.uint8)
        cols["s_device"] = np.asarray(devices, dtype=np.int16)
        cols["s_name"] = strings.intern_many(list(names), dtype=np.uint32)
        cols["s_time_ns"] = np.asarray(times, dtype=np.int64)
        cols["s_value"] = np.asarray(values, dtype=np.float64)
        return cols


def kineto_window(path: Path, annotations: frozenset[str] | set[str]) -> KinetoWindow:
    """The window Kineto exported to ``path``, packed (gzipped if it cannot be)."""
    return pack_window(path, annotations)[0]


def pack_window(path: Path, annotations: frozenset[str] | set[str]) -> tuple[KinetoWindow, int]:
    """The window Kineto exported to ``path``, packed (gzipped if it cannot be), and the CPU
    nanoseconds its packing child took."""
    names = tuple(sorted(annotations))
    if path.stat().st_size <= PACK_MAX_JSON_BYTES:
        packed, cpu_ns = _pack_in_child(path)
        if packed is not None:
            return KinetoWindow(packed, names), cpu_ns
    return KinetoWindow(gzip_file(path), names), 0


def _pack_in_child(path: Path) -> tuple[bytes | None, int]:
    package_root = str(Path(tracefmt.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".pack-") as tmp:
        target = Path(tmp) / "window.kcol"
        command = [sys.executable, "-c", PACK_CHILD]
        try:
            done = subprocess.run(
                [*command, str(path), str(target)],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PACK_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.info("profiler: a Kineto window is sent gzipped (packing failed: %r)", exc)
            return None, 0
        cpu = done.stdout.split()[-1:]
        cpu_ns = int(cpu[0]) if cpu and cpu[0].isdigit() else 0
        if done.returncode != 0 or not target.exists():
            reason = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            log.info("profiler: a Kineto window is sent gzipped (packing failed: %s)", reason)
            return None, cpu_ns
        return target.read_bytes(), cpu_ns


def gzip_file(path: Path) -> bytes:
    """The file gzipped a block at a time (a window can be hundreds of MB of JSON)."""
    packer = zlib.compressobj(KINETO_GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    out = []
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            out.append(packer.compress(block))
    out.append(packer.flush())
    return b"".join(out)
