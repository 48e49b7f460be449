"""Batches of the normalised event model (``tracefmt.columns``) and the tables of one part.

Events are columns (numpy arrays) in batches, never one Python object per event: a 4-million-event
trace must stay within a few hundred megabytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tracefmt.columns import SAMPLE_COLUMNS

# The source of a GPU utilisation series derived from kernel busy time, where no NVML samples
# exist (imported traces); measured series name their sampler ("nvml", "psutil", "perf").
DERIVED_SOURCE = "kernel_busy"


@dataclass(frozen=True)
class EventBatch:
    """A run of events (any order) with global string and track ids."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["kind"])


@dataclass(frozen=True)
class SampleBatch:
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["kind"])

    @classmethod
    def empty(cls) -> SampleBatch:
        return cls({c: np.empty(0, dtype=t) for c, t in SAMPLE_COLUMNS.items()})


@dataclass(frozen=True)
class FlowBatch:
    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["flow_id"])


@dataclass(frozen=True)
class TrackKey:
    """Where an event was recorded: a CPU thread (pid, tid) or a GPU stream (device, stream).

    Kineto names a few tracks with strings ("Spans", "Traces"); those keep the string in
    ``label_hint`` and get negative placeholder ids.
    """

    on_device: bool
    pid: int
    tid: int
    label_hint: str = ""


@dataclass
class TrackTable:
    """Interns track keys into dense ids, in order of first appearance."""

    tracks: list[TrackKey] = field(default_factory=list)
    _ids: dict[TrackKey, int] = field(default_factory=dict)

    def intern(self, key: TrackKey) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.tracks)
            self.tracks.append(key)
        return found
