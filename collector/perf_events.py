"""CPU performance counters of this process through Linux ``perf_event_open`` (ctypes, no tools).

Each counter is opened on its own so one the kernel refuses (no PMU in a VM, a high
``perf_event_paranoid``, a seccomp filter) leaves the others working. Counting is user-space
only (``exclude_kernel``), which ``perf_event_paranoid`` <= 2 allows for one's own process, and
follows the threads the process creates after ``open`` (``inherit``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from dataclasses import dataclass

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_HW_CACHE = 3
PERF_FLAG_FD_CLOEXEC = 8

# flags bit field of struct perf_event_attr
_INHERIT = 1 << 1
_EXCLUDE_KERNEL = 1 << 5
_EXCLUDE_HV = 1 << 6

_SYSCALL_NR = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241}

# (name shown on the timeline, type, config). Names follow the Intel event names the SageMaker
# profiler shows where one exists (clk_unhalted_ref.tsc, itlb_misses.miss_causes_a_walk).
COUNTERS: tuple[tuple[str, int, int], ...] = (
    ("clk_unhalted_ref.tsc", PERF_TYPE_HARDWARE, 9),  # PERF_COUNT_HW_REF_CPU_CYCLES
    ("cpu_cycles", PERF_TYPE_HARDWARE, 0),
    ("instructions", PERF_TYPE_HARDWARE, 1),
    # PERF_COUNT_HW_CACHE_ITLB | OP_READ << 8 | RESULT_MISS << 16
    ("itlb_misses.miss_causes_a_walk", PERF_TYPE_HW_CACHE, 4 | (0 << 8) | (1 << 16)),
    ("task_clock_ns", PERF_TYPE_SOFTWARE, 1),
    ("page_faults", PERF_TYPE_SOFTWARE, 2),
    ("context_switches", PERF_TYPE_SOFTWARE, 3),
)


class _PerfEventAttr(ctypes.Structure):
    # PERF_ATTR_SIZE_VER0 (64 bytes): every kernel since 2.6.31 accepts it.
    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
    ]


@dataclass
class _Counter:
    name: str
    fd: int
    last: int


class PerfCounters:
    """Open what the kernel allows; ``read_deltas()`` returns counts since the previous read."""

    def __init__(self, pid: int | None = None) -> None:
        self._counters: list[_Counter] = []
        self.unavailable: dict[str, str] = {}
        nr = _SYSCALL_NR.get(platform.machine().lower())
        if nr is None or not hasattr(os, "read"):
            self.unavailable = {
                name: f"not supported on {platform.machine()}" for name, *_ in COUNTERS
            }
            return
        libc = ctypes.CDLL(None, use_errno=True)
        target = os.getpid() if pid is None else pid
        for name, type_, config in COUNTERS:
            attr = _PerfEventAttr(
                type=type_,
                size=ctypes.sizeof(_PerfEventAttr),
                config=config,
                flags=_INHERIT | _EXCLUDE_KERNEL | _EXCLUDE_HV,
            )
            fd = libc.syscall(nr, ctypes.byref(attr), target, -1, -1, PERF_FLAG_FD_CLOEXEC)
            if fd < 0:
                self.unavailable[name] = _reason(ctypes.get_errno())
                continue
            self._counters.append(_Counter(name, fd, _read(fd)))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self._counters]

    def status(self) -> str:
        """ "ok", or why some or all counters are missing (the chunk meta's ``sources.perf``)."""
        if not self.unavailable:
            return "ok"
        reasons = sorted(set(self.unavailable.values()))
        missing = ", ".join(self.unavailable)
        if not self._counters:
            return f"unavailable: {'; '.join(reasons)}"
        return f"partial: {', '.join(self.names)}; unavailable: {missing} ({'; '.join(reasons)})"

    def read_deltas(self) -> list[tuple[str, int]]:
        out = []
        for counter in self._counters:
            value = _read(counter.fd)
            out.append((counter.name, value - counter.last))
            counter.last = value
        return out

    def close(self) -> None:
        for counter in self._counters:
            os.close(counter.fd)
        self._counters = []


def _read(fd: int) -> int:
    return int.from_bytes(os.read(fd, 8), "little")


def _reason(err: int) -> str:
    if err == errno.ENOENT or err == errno.EOPNOTSUPP:
        return "event not supported by this CPU or VM"
    if err in (errno.EACCES, errno.EPERM):
        return "not permitted (kernel.perf_event_paranoid or a seccomp filter)"
    if err == errno.ENOSYS:
        return "perf_event_open not available in this kernel"
    return os.strerror(err)
