"""Turns what the collector buffered (annotations, Kineto windows, samples) into one chunk."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from collector.identity import Identity
from collector.kineto_convert import convert_events
from collector.spool import chunk_file_name
from tracefmt.chunk import chunk_bytes, concat_events, empty_events, empty_samples
from tracefmt.kinds import EventKind
from tracefmt.names import PROFILER_STEP_RE
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
        kineto_traces: list[dict[str, Any]],
        samples: list[SampleRow],
        sources: dict[str, str],
        own_names: set[str],
        final: bool,
    ) -> BuiltChunk:
        strings = StringTable()
        parts = [self._annotation_columns(annotations, strings)]
        for trace in kineto_traces:
            parts.append(self._kineto_columns(trace, strings, own_names))
        events = concat_events(parts)
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
        data = chunk_bytes(meta, strings.strings, events, sample_cols)
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

    def _kineto_columns(
        self, trace: dict[str, Any], strings: StringTable, own_names: set[str]
    ) -> dict[str, np.ndarray]:
        """Kineto's rows minus what the collector records itself on every step.

        Host-side ``annotate()`` ranges already arrive from the collector's own recorder (their
        GPU projections stay), and ``ProfilerStep#n`` is torch.profiler's copy of our steps.
        """
        local = StringTable()
        cols = convert_events(trace, local, pid=self.identity.pid)
        profiler_step = np.fromiter(
            (bool(PROFILER_STEP_RE.match(n)) for n in local.strings), dtype=bool
        )
        own = np.fromiter((n in own_names for n in local.strings), dtype=bool)
        kind, name = cols["ev_kind"], cols["ev_name"]
        drop = profiler_step[name] & (
            (kind == EventKind.USER_ANNOTATION) | (kind == EventKind.GPU_USER_ANNOTATION)
        )
        drop |= own[name] & (kind == EventKind.USER_ANNOTATION)
        kept = {col: arr[~drop] for col, arr in cols.items()}
        remap = np.zeros(len(local), dtype=np.uint32)
        for idx in np.unique(kept["ev_name"]):
            remap[idx] = strings.intern(local.strings[idx])
        kept["ev_name"] = remap[kept["ev_name"]]
        return kept

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
