"""Turns what the collector buffered (annotations, Kineto windows, samples) into one chunk.

A Kineto window goes in packed into compressed columns (``tracefmt.kineto_columns``, about a
sixth of its gzipped JSON), which the server unpacks into the JSON torch.profiler wrote and
parses with the parser it uses for uploaded trace files. Packing parses JSON, which would hold
the training process's GIL for seconds: it runs in a child process kept for the job's windows
(``PackingChild``), at the lowest priority, while the flusher thread waits (without the GIL). A
window the child cannot pack in time goes in gzipped, as torch.profiler wrote it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tracefmt
from collector.identity import Identity
from collector.spool import chunk_file_name
from collector.trace_files import XPLANE_SUFFIX
from tracefmt.chunk import (
    KinetoWindow,
    chunk_bytes,
    empty_events,
    empty_samples,
    kineto_thread_alias,
)
from tracefmt.strings import StringTable

log = logging.getLogger("collector")

# zlib's default: a third of the CPU time of level 9 (what torch's .json.gz export uses) for
# about 10 % more bytes.
KINETO_GZIP_LEVEL = 6
# Packing takes about ten times the window's JSON in memory (Python objects): larger windows
# are gzipped instead, and so is one the child has not packed in this time.
PACK_MAX_JSON_BYTES = 256 << 20
PACK_TIMEOUT_S = 300.0
# After packing a window this large the child exits, handing its memory back to the system;
# the next window starts a new one.
PACK_RECYCLE_JSON_BYTES = 32 << 20
# The child yields the CPU to training: it takes the idle scheduling class where Linux has it
# (it then runs only on a core nothing else wants), else the lowest priority, before it imports
# numpy, so that even its start-up does not slow a training that keeps every core busy.
PACK_CHILD = (
    "import os, sys\n"
    "try:\n"
    "    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "except (AttributeError, OSError):\n"
    "    os.nice(19)\n"
    "from tracefmt.kineto_columns import serve\n"
    "serve(sys.stdin, sys.stdout)\n"
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
            "thread_ids": kineto_thread_ids(),
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


def kineto_thread_ids() -> dict[str, int]:
    """This process's Python threads (the training loop's among them) by the id Kineto may
    give them in a first window, to their OS thread ids: the server puts those events on the
    thread the collector's annotations are on."""
    ids = {}
    for thread in threading.enumerate():
        if thread.ident is None or thread.native_id is None:
            continue
        alias = kineto_thread_alias(thread.ident)
        if alias is not None:
            ids[str(alias)] = thread.native_id
    return ids


def kineto_window(path: Path, annotations: frozenset[str] | set[str]) -> KinetoWindow:
    """The window Kineto exported to ``path``, packed by a child of its own (gzipped if it
    cannot be)."""
    packer = PackingChild()
    try:
        return pack_window(path, annotations, packer)[0]
    finally:
        packer.close()


def pack_window(
    path: Path, annotations: frozenset[str] | set[str], packer: PackingChild
) -> tuple[KinetoWindow, int]:
    """The window Kineto exported to ``path``, packed by ``packer`` (gzipped if it cannot be),
    and the CPU nanoseconds the packing child took. A JAX or TensorFlow window (an XPlane
    profile) goes as its profiler wrote it: the chunk deflates it."""
    names = tuple(sorted(annotations))
    if path.name.endswith(XPLANE_SUFFIX):
        return KinetoWindow(path.read_bytes(), names), 0
    if path.stat().st_size <= PACK_MAX_JSON_BYTES:
        packed, cpu_ns = packer.pack(path)
        if packed is not None:
            return KinetoWindow(packed, names), cpu_ns
        return KinetoWindow(gzip_file(path), names), cpu_ns
    return KinetoWindow(gzip_file(path), names), 0


class PackingChild:
    """The child process that packs Kineto windows (``tracefmt.kineto_columns.serve``), started
    at the first window and kept for the next ones: its start-up, Python and numpy, costs more
    CPU than packing a window of a few thousand events."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def pack(self, path: Path) -> tuple[bytes | None, int]:
        """``path``'s trace packed (None if it could not be, with the reason logged) and the
        child's CPU nanoseconds since its last answer (its start-up included in the first)."""
        target = path.with_name(f".{path.name}.kcol")
        try:
            reply = self._ask(path, target)
            if not reply["ok"]:
                log.info("profiler: a Kineto window is sent gzipped (%s)", reply["reason"])
                return None, reply["cpu_ns"]
            return target.read_bytes(), reply["cpu_ns"]
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            log.info("profiler: a Kineto window is sent gzipped (packing failed: %s)", exc)
            self.close()
            return None, 0
        finally:
            target.unlink(missing_ok=True)
            if path.stat().st_size > PACK_RECYCLE_JSON_BYTES:
                self.close()

    def close(self) -> None:
        """Ends the child (it exits when its requests end; one that does not is killed)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()

    def forget_after_fork(self) -> None:
        """In a forked child (a DataLoader worker): drop the pipes without touching the packer."""
        proc, self._proc = self._proc, None
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()

    def _ask(self, source: Path, target: Path) -> dict[str, Any]:
        proc = self._proc or self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps([str(source), str(target)]).encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], PACK_TIMEOUT_S)
        if not ready:
            proc.kill()
            raise subprocess.TimeoutExpired(PACK_CHILD, PACK_TIMEOUT_S)
        line = proc.stdout.readline()
        if not line:
            raise subprocess.SubprocessError(f"the packing child exited (code {proc.wait()})")
        reply = json.loads(line)
        if not isinstance(reply, dict) or not isinstance(reply.get("cpu_ns"), int):
            raise ValueError(f"unexpected reply from the packing child: {line[:200]!r}")
        return reply

    def _start(self) -> subprocess.Popen[bytes]:
        package_root = str(Path(tracefmt.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(
            [sys.executable, "-c", PACK_CHILD],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        return self._proc


def gzip_file(path: Path) -> bytes:
    """The file gzipped a block at a time (a window can be hundreds of MB of JSON)."""
    packer = zlib.compressobj(KINETO_GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    out = []
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            out.append(packer.compress(block))
    out.append(packer.flush())
    return b"".join(out)
