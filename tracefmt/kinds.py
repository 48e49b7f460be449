"""Kinds of events and samples. The numbers are the chunk wire format's ``ev_kind``/``s_kind``."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

import numpy as np


class EventKind(IntEnum):
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
    # Only in imported traces (a collector chunk never holds these).
    INSTANT = 11
    OTHER = 12


# The largest kind a collector chunk may hold.
CHUNK_MAX_KIND = EventKind.STEP

KIND_NAMES: dict[int, str] = {int(k): k.name.lower() for k in EventKind}

# GPU work ("GPU ops"): what a device stream runs, as Holistic Trace Analysis lists GPU kernels
# (every event with a stream): kernels, memory copies, memory sets, and the device-side waits and
# syncs ("Stream Wait Event", MTIA's "event_wait"). A wait is typed by its name as HTA types it
# (``tracefmt.names.kernel_category``: a "Stream Wait Event" is COMP, an "Event Sync" OTHER), and
# ``profiler_app.traces.figures`` says which types kernel time counts.
GPU_OP_KINDS = (
    int(EventKind.KERNEL),
    int(EventKind.GPU_MEMCPY),
    int(EventKind.GPU_MEMSET),
    int(EventKind.CUDA_SYNC),
)
# The GPU ops that move memory: typed MEM whatever their name.
COPY_KINDS = (int(EventKind.GPU_MEMCPY), int(EventKind.GPU_MEMSET))

# Kinds recorded on a device stream rather than on a CPU thread.
DEVICE_KINDS = frozenset(
    {
        EventKind.GPU_USER_ANNOTATION,
        EventKind.KERNEL,
        EventKind.GPU_MEMCPY,
        EventKind.GPU_MEMSET,
        EventKind.CUDA_SYNC,
    }
)


# Kinds recorded on a CPU thread that a thread's stack is made of: operators, annotations,
# Python frames, steps, and the runtime and driver calls they make.
HOST_KINDS = (
    int(EventKind.CPU_OP),
    int(EventKind.USER_ANNOTATION),
    int(EventKind.PYTHON_FUNCTION),
    int(EventKind.CUDA_RUNTIME),
    int(EventKind.CUDA_DRIVER),
    int(EventKind.STEP),
)
# The host calls that enqueue GPU work: a GPU op shares its correlation id with one of them.
LAUNCH_KINDS = (int(EventKind.CUDA_RUNTIME), int(EventKind.CUDA_DRIVER))


class MemcpyKind(IntEnum):
    NONE = 0
    HTOD = 1
    DTOH = 2
    DTOD = 3
    HTOH = 4
    PTOP = 5


MEMCPY_KIND_NAMES = {1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "HtoH", 5: "PtoP"}


class SampleKind(IntEnum):
    """``COUNTER`` (a perf counter, or a counter track of an imported trace) names itself."""

    GPU_UTIL_PCT = 0
    GPU_MEM_USED_BYTES = 1
    GPU_MEM_UTIL_PCT = 2
    CPU_UTIL_PCT = 3
    CPU_IOWAIT_PCT = 4
    HOST_MEM_USED_BYTES = 5
    COUNTER = 6
    CPU_UTIL_TOTAL_PCT = 7


SAMPLE_KIND_NAMES: dict[int, str] = {int(k): k.name.lower() for k in SampleKind}


def of_kinds(kind: np.ndarray, kinds: Iterable[int]) -> np.ndarray:
    """Which events' ``kind`` is one of ``kinds``: ``np.isin`` by one comparison per kind, as
    kinds are few (``np.isin`` sorts or hashes, and costs 60 times as much over a trace)."""
    found = np.zeros(np.shape(kind), dtype=bool)
    for one in kinds:
        found |= kind == int(one)
    return found
