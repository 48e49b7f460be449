"""Turn decoded Kineto chunks and collector chunks into batches of the common event model.

A ``PartContext`` owns the part-wide tables (interned strings, tracks, process and thread
names) and maps each chunk's local ids onto them with a single ``take`` per column.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from profiler_app.traces.kineto_chunk import DecodedChunk
from profiler_app.traces.kineto_encode import StringColumn
from profiler_app.traces.model import EventBatch, FlowBatch, SampleBatch, TrackKey, TrackTable
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import DEVICE_KINDS, SampleKind
from tracefmt.strings import StringTable

# Collector chunk column -> model column, for the columns that carry over as they are.
_COLLECTOR_COLUMNS = {
    "kind": "ev_kind",
    "start_ns": "ev_start_ns",
    "dur_ns": "ev_dur_ns",
    "device": "ev_device",
    "stream": "ev_stream",
    "correlation": "ev_correlation",
    "bytes": "ev_bytes",
    "memcpy_kind": "ev_memcpy_kind",
    "registers": "ev_registers",
    "shared_mem": "ev_shared_mem",
}
_DEVICE_KIND_TABLE = np.zeros(256, dtype=bool)
_DEVICE_KIND_TABLE[[int(k) for k in DEVICE_KINDS]] = True


@dataclass
class PartContext:
    strings: StringTable = field(default_factory=StringTable)
    tracks: TrackTable = field(default_factory=TrackTable)
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    phase_counts: Counter[str] = field(default_factory=Counter)
    unknown_categories: Counter[str] = field(default_factory=Counter)
    device_like_unknown: int = 0
    # Kineto's [memory] events (``kineto_chunk.MEMORY_EVENT_COLUMNS``, global track ids).
    memory: list[dict[str, np.ndarray]] = field(default_factory=list)

    def _global_strings(self, column: StringColumn) -> np.ndarray:
        ids = self.strings.intern_many(column.values)
        out = np.full(len(column.codes), -1, dtype=np.int32)
        present = column.codes >= 0
        out[present] = ids[column.codes[present]] if len(ids) else -1
        return out

    def _global_tracks(self, codes: np.ndarray, keys: list[TrackKey]) -> np.ndarray:
        ids = np.fromiter(map(self.tracks.intern, keys), dtype=np.int32, count=len(keys))
        return ids[codes] if len(codes) else codes.astype(np.int32)

    def kineto_batches(
        self, chunk: DecodedChunk
    ) -> tuple[EventBatch, FlowBatch | None, SampleBatch | None]:
        self.phase_counts.update(chunk.phase_counts)
        self.unknown_categories.update(chunk.unknown_categories)
        self.device_like_unknown += chunk.device_like_unknown
        cols = dict(chunk.columns)
        for col, strings in chunk.strings.items():
            cols[col] = self._global_strings(strings)
        cols["track"] = self._global_tracks(cols["track"], chunk.tracks)
        if chunk.memory:
            memory = dict(chunk.memory)
            memory["track"] = self._global_tracks(memory["track"], chunk.tracks)
            self.memory.append(memory)
        for kind, pid, tid, value in chunk.metadata:
            if kind == "process_name" and isinstance(pid, int):
                self.process_names[pid] = value
            elif kind == "thread_name" and isinstance(pid, int) and isinstance(tid, int):
                self.thread_names[(pid, tid)] = value
        flows = None
        if chunk.flows:
            flow_cols = dict(chunk.flows)
            flow_cols["track"] = self._global_tracks(flow_cols["track"], chunk.flow_tracks)
            flow_cols["category"] = self._global_strings(chunk.flow_categories)
            flows = FlowBatch(flow_cols)
        samples = None
        if chunk.counters:
            series, pids, times, values = zip(*chunk.counters, strict=True)
            samples = SampleBatch(
                {
                    "kind": np.full(len(series), SampleKind.COUNTER, dtype=np.uint8),
                    "device": np.full(len(series), -1, dtype=np.int16),
                    "name": self.strings.intern_many(list(series)),
                    "time_ns": np.asarray(times, dtype=np.int64),
                    "value": np.asarray(values, dtype=np.float64),
                }
            )
        return EventBatch(cols), flows, samples

    def collector_batches(self, chunk: Any, max_rows: int) -> list[tuple[EventBatch, SampleBatch]]:
        """Batches for a ``tracefmt.chunk.Chunk`` (times already unix-epoch ns)."""
        ids = self.strings.intern_many(list(chunk.strings))
        ev = chunk.events
        n = chunk.n_events
        cols = {c: np.full(n, absent, dtype=dtype) for c, (dtype, absent) in EVENT_COLUMNS.items()}
        for ours, theirs in _COLLECTOR_COLUMNS.items():
            cols[ours] = ev[theirs].astype(EVENT_COLUMNS[ours][0])
        cols["name"] = ids[ev["ev_name"].astype(np.int64)] if n else cols["name"]
        for axis, suffix in enumerate("xyz"):
            cols[f"grid_{suffix}"] = np.ascontiguousarray(ev["ev_grid"][:, axis])
            cols[f"block_{suffix}"] = np.ascontiguousarray(ev["ev_block"][:, axis])
        on_device = _DEVICE_KIND_TABLE[cols["kind"]]
        pid = np.where(on_device, ev["ev_device"], ev["ev_pid"]).astype(np.int64)
        tid = np.where(on_device, ev["ev_stream"], ev["ev_tid"]).astype(np.int64)
        cols["track"] = self._collector_tracks(on_device, pid, tid)
        sm = chunk.samples
        samples = SampleBatch(
            {
                "kind": sm["s_kind"].astype(np.uint8),
                "device": sm["s_device"].astype(np.int16),
                "name": ids[sm["s_name"].astype(np.int64)].astype(np.int32),
                "time_ns": sm["s_time_ns"].astype(np.int64),
                "value": sm["s_value"].astype(np.float64),
            }
        )
        if chunk.meta.get("hostname"):
            self.process_names.setdefault(int(chunk.meta["pid"]), str(chunk.meta["hostname"]))
        out = []
        for lo in range(0, max(n, 1), max_rows):
            events = EventBatch({k: v[lo : lo + max_rows] for k, v in cols.items()})
            out.append((events, samples if lo == 0 else SampleBatch.empty()))
        return out

    def _collector_tracks(
        self, on_device: np.ndarray, pid: np.ndarray, tid: np.ndarray
    ) -> np.ndarray:
        if not len(pid):
            return np.empty(0, dtype=np.int32)
        keys = np.stack([on_device.astype(np.int64), pid, tid], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        ids = np.asarray(
            [self.tracks.intern(TrackKey(bool(d), int(p), int(t))) for d, p, t in uniq.tolist()],
            dtype=np.int32,
        )
        return ids[inverse.reshape(-1)]

    def track_frame(self) -> pd.DataFrame:
        keys = self.tracks.tracks
        return pd.DataFrame(
            {
                "track": np.arange(len(keys), dtype=np.int64),
                "on_device": np.fromiter((k.on_device for k in keys), bool, len(keys)),
                "pid": np.fromiter((k.pid for k in keys), np.int64, len(keys)),
                "tid": np.fromiter((k.tid for k in keys), np.int64, len(keys)),
                "label": [self._label(k) for k in keys],
            }
        )

    def _label(self, key: TrackKey) -> str:
        if key.on_device:
            return f"GPU {key.pid} stream {key.tid}"
        if key.label_hint:
            return key.label_hint
        process = self.process_names.get(key.pid) or f"process {key.pid}"
        thread = self.thread_names.get((key.pid, key.tid)) or f"thread {key.tid}"
        return f"{process} / {thread}"
