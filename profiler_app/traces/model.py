"""The normalised event model every input format is turned into.

Events are columns (numpy arrays) in batches, never one Python object per event: a 4-million-event
trace must stay within a few hundred megabytes. Times are integer nanoseconds on the unix epoch;
names and track keys are interned into small integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class EventKind(IntEnum):
    """0–10 are the collector chunk format's ``ev_kind`` values; Kineto categories map onto them."""

    CPU_OP = 0
    USER_ANNOTATION = 1
    GPU_USER_ANNOTATION = 2
    CUDA_RUNTIME = 3
    CUDA_DRIVER = 4
    KERNEL = 5
    GPU_MEMCPY = 6
    GPU_MEMSET = 7
    CUDA_SYNC = 8
    PYTHON_FUNCTION = 9
    STEP = 10
    INSTANT = 11
    OTHER = 12


KIND_NAMES: dict[int, str] = {int(k): k.name.lower() for k in EventKind}

# Kinds recorded on a GPU stream rather than on a CPU thread.
DEVICE_KINDS = frozenset(
    {
        EventKind.GPU_USER_ANNOTATION,
        EventKind.KERNEL,
        EventKind.GPU_MEMCPY,
        EventKind.GPU_MEMSET,
        EventKind.CUDA_SYNC,
    }
)


class MemcpyKind(IntEnum):
    """The collector chunk format's ``ev_memcpy_kind`` values."""

    NONE = 0
    HTOD = 1
    DTOH = 2
    DTOD = 3
    HTOH = 4
    PTOP = 5


MEMCPY_KIND_NAMES = {1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "HtoH", 5: "PtoP"}


class SampleKind(IntEnum):
    """The collector chunk format's ``s_kind`` values; ``COUNTER`` carries its name in ``name``."""

    GPU_UTIL_PCT = 0
    GPU_MEM_USED_BYTES = 1
    GPU_MEM_UTIL_PCT = 2
    CPU_UTIL_PCT = 3
    CPU_IOWAIT_PCT = 4
    HOST_MEM_USED_BYTES = 5
    COUNTER = 6
    CPU_UTIL_TOTAL_PCT = 7


SAMPLE_KIND_NAMES: dict[int, str] = {int(k): k.name.lower() for k in SampleKind}

# The source of a GPU utilisation series derived from kernel busy time, where no NVML samples
# exist (imported traces); measured series name their sampler ("nvml", "psutil", "perf").
DERIVED_SOURCE = "kernel_busy"

# Column -> (dtype, value meaning "absent"). Every batch carries all of them, in this order.
EVENT_COLUMNS: dict[str, tuple[type, int | float]] = {
    "kind": (np.uint8, 0),
    "track": (np.int32, 0),
    "name": (np.int32, 0),
    "start_ns": (np.int64, 0),
    "dur_ns": (np.int64, 0),
    "correlation": (np.int64, -1),
    "external_id": (np.int64, -1),
    "device": (np.int16, -1),
    "stream": (np.int32, -1),
    "bytes": (np.int64, -1),
    "memcpy_kind": (np.uint8, 0),
    "bandwidth_gbps": (np.float64, float("nan")),
    "grid_x": (np.int32, 0),
    "grid_y": (np.int32, 0),
    "grid_z": (np.int32, 0),
    "block_x": (np.int32, 0),
    "block_y": (np.int32, 0),
    "block_z": (np.int32, 0),
    "registers": (np.int32, -1),
    "shared_mem": (np.int32, -1),
    "occupancy_pct": (np.float32, float("nan")),
    "input_types": (np.int32, -1),
    "input_dims": (np.int32, -1),
    "collective": (np.int32, -1),
    "dtype": (np.int32, -1),
    "in_nelems": (np.int64, -1),
    "out_nelems": (np.int64, -1),
    "group_size": (np.int32, -1),
    "process_group": (np.int32, -1),
}

SAMPLE_COLUMNS: dict[str, type] = {
    "kind": np.uint8,
    "device": np.int16,
    "name": np.int32,
    "time_ns": np.int64,
    "value": np.float64,
}

FLOW_COLUMNS: dict[str, type] = {
    "flow_id": np.int64,
    "phase": np.uint8,  # 0 start, 1 step, 2 end
    "time_ns": np.int64,
    "track": np.int32,
    "category": np.int32,
}


def empty_columns(n: int) -> dict[str, np.ndarray]:
    """``n`` events with every column at its "absent" value."""
    return {col: np.full(n, absent, dtype=dtype) for col, (dtype, absent) in EVENT_COLUMNS.items()}


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


class StringTable:
    """Interns strings into dense ids; id 0 is the empty string."""

    def __init__(self) -> None:
        self.strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}

    def intern(self, value: str) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.strings)
            self.strings.append(value)
        return found

    def intern_many(self, values: list[str]) -> np.ndarray:
        """Global ids for a chunk's local string list (so callers remap with one ``take``)."""
        return np.fromiter(map(self.intern, values), dtype=np.int32, count=len(values))

    def __len__(self) -> int:
        return len(self.strings)


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
