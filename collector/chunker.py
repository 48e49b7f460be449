"""Turns what the collector buffered (annotations, Kineto windows, samples) into one chunk.

Kineto windows go in as torch.profiler wrote them (gzipped): the server parses them with the
parser it uses for uploaded trace files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from collector.identity import Identity
from collector.spool import chunk_file_name
from tracefmt.chunk import KinetoWindow, chunk_bytes, empty_events, empty_samples
from tracefmt.strings import StringTable

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
