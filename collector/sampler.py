"""Sampler: GPU utilisation/memory (NVML), CPU per core, I/O wait, host memory (psutil) and
this process's perf counters, every ``interval_ms``.

A sample is taken at the first step boundary after ``interval_ms`` has passed, on the training
thread: about 60 us of work there, between two steps. A thread of its own waking at that rate
would take, at any moment of a step, a core from the training's OpenMP threads (which then wait
for it at their next barrier) and the GIL from its Python thread. The thread only takes over
while no step ends (a long step, evaluation, the end of a job); while steps end it wakes every
``FALLBACK_INTERVALS`` intervals to see that they still do.

Every source is optional: what cannot be opened is reported in ``sources`` (and logged once by
the profiler) and the others carry on. Node-wide metrics are sampled by local rank 0 only, so a
node with eight ranks does not report its CPUs eight times.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import deque
from typing import Any

from collector.perf_events import PerfCounters
from tracefmt.kinds import SampleKind

log = logging.getLogger("collector")

# (kind, device, counter name or "", time_ns, value)
Sample = tuple[int, int, str, int, float]

# While steps end, the thread wakes this many intervals apart to see whether they still do.
FALLBACK_INTERVALS = 5


class Sampler:
    def __init__(
        self,
        interval_ms: int,
        cpu: bool,
        gpu: bool,
        perf: bool,
        node_level: bool,
    ) -> None:
        self.interval_s = interval_ms / 1000
        self._interval_ns = interval_ms * 1_000_000
        # Never sampled: the first boundary is due at once, however long the machine has been up.
        self._last_ns = -(2**63)
        # Held while sampling: the training thread and the fallback thread never both do.
        self._busy = threading.Lock()
        self.sources: dict[str, str] = {}
        self._want = {"cpu": cpu, "gpu": gpu, "perf": perf}
        self._node_level = node_level
        self._samples: deque[Sample] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._psutil: Any = None
        self._last_cpu: Any = None
        self._nvml: Any = None
        self._gpus: list[tuple[int, Any]] = []
        self._perf: PerfCounters | None = None
        self._failed: set[str] = set()
        # CPU time of the sampling thread so far (the overhead budget counts it).
        self.cpu_ns = 0

    def start(self) -> None:
        self.sources["psutil"] = self._open_psutil()
        self.sources["nvml"] = self._open_nvml()
        self.sources["perf"] = self._open_perf()
        if self._psutil is None and not self._gpus and self._perf is None:
            return
        self._thread = threading.Thread(target=self._run, name="profiler-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sample_once()
        if self._perf is not None:
            self._perf.close()
            self._perf = None
        if self._nvml is not None:
            # Shutting down: a failure here has nothing left to protect.
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
            self._nvml = None
            self._gpus = []

    def drain(self) -> list[Sample]:
        out = []
        while self._samples:
            out.append(self._samples.popleft())
        return out

    def at_step_boundary(self, now_ns: int) -> None:
        """A step ended (on the training thread, ``time.monotonic_ns()``): sample if due."""
        if now_ns - self._last_ns >= self._interval_ns and self._thread is not None:
            self.sample_once()

    def _run(self) -> None:
        wait = self.interval_s
        while not self._stop.wait(wait):
            late = time.monotonic_ns() - self._last_ns >= 2 * self._interval_ns
            if late:  # no step boundary sampled lately: sample here
                self.sample_once()
                self.cpu_ns = time.thread_time_ns()
            wait = self.interval_s if late else FALLBACK_INTERVALS * self.interval_s

    def sample_once(self) -> None:
        if not self._busy.acquire(blocking=False):
            return  # the other thread is sampling
        try:
            self._last_ns = time.monotonic_ns()
            self._sample()
        finally:
            self._busy.release()

    def _sample(self) -> None:
        now = time.time_ns()
        add = self._samples.append
        if self._psutil is not None:
            self._guard("psutil", self._sample_host, now, add)
        for index, handle in self._gpus:
            self._guard(f"nvml:{index}", self._sample_gpu, now, add, index, handle)
        if self._perf is not None:
            for name, delta in self._perf.read_deltas():
                add((SampleKind.COUNTER, -1, name, now, float(delta)))

    def _guard(self, key: str, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - a sampling failure must not stop the others
            if key not in self._failed:
                self._failed.add(key)
                log.warning("profiler: sampling %s failed (not logged again): %s", key, exc)

    def _sample_host(self, now: int, add: Any) -> None:
        psutil = self._psutil
        cpus = psutil.cpu_times(percpu=True)
        if self._last_cpu is not None and len(self._last_cpu) == len(cpus):
            busy_total = idle_total = iowait_total = 0.0
            for core, (before, after) in enumerate(zip(self._last_cpu, cpus, strict=True)):
                total = sum(after) - sum(before)
                idle = (after.idle - before.idle) + _iowait(after) - _iowait(before)
                if total > 0:
                    add((SampleKind.CPU_UTIL_PCT, core, "", now, _pct(total - idle, total)))
                busy_total += total - idle
                idle_total += total
                iowait_total += _iowait(after) - _iowait(before)
            if idle_total > 0:
                add((SampleKind.CPU_UTIL_TOTAL_PCT, -1, "", now, _pct(busy_total, idle_total)))
                add((SampleKind.CPU_IOWAIT_PCT, -1, "", now, _pct(iowait_total, idle_total)))
        self._last_cpu = cpus
        add((SampleKind.HOST_MEM_USED_BYTES, -1, "", now, float(psutil.virtual_memory().used)))

    def _sample_gpu(self, now: int, add: Any, index: int, handle: Any) -> None:
        nvml = self._nvml
        rates = nvml.nvmlDeviceGetUtilizationRates(handle)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        add((SampleKind.GPU_UTIL_PCT, index, "", now, float(rates.gpu)))
        add((SampleKind.GPU_MEM_UTIL_PCT, index, "", now, float(rates.memory)))
        add((SampleKind.GPU_MEM_USED_BYTES, index, "", now, float(memory.used)))

    def _open_psutil(self) -> str:
        if not self._want["cpu"]:
            return "off (cpu_sampling disabled)"
        if not self._node_level:
            return "sampled by local rank 0 of this node"
        try:
            import psutil
        except ImportError:
            return "psutil not installed (pip install psutil)"
        self._psutil = psutil
        self._last_cpu = psutil.cpu_times(percpu=True)
        return "ok"

    def _open_nvml(self) -> str:
        if not self._want["gpu"]:
            return "off (gpu_sampling disabled)"
        if not self._node_level:
            return "sampled by local rank 0 of this node"
        try:
            import pynvml
        except ImportError:
            return "pynvml not installed (pip install nvidia-ml-py)"
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._nvml = pynvml
            self._gpus = _visible_gpus(pynvml, count)
        except Exception as exc:  # noqa: BLE001 - NVMLError subclasses and missing symbols alike
            return f"NVML unavailable: {exc}"
        if not self._gpus:
            return "no NVIDIA GPU visible"
        return "ok"

    def _open_perf(self) -> str:
        if not self._want["perf"]:
            return "off (perf_counters disabled)"
        try:
            counters = PerfCounters()
        except Exception as exc:  # noqa: BLE001 - ctypes/libc surprises on exotic systems
            return f"unavailable: {exc}"
        if counters.names:
            self._perf = counters
        return counters.status()


def _iowait(times: Any) -> float:
    return float(getattr(times, "iowait", 0.0))


def _pct(part: float, whole: float) -> float:
    return max(0.0, min(100.0, 100.0 * part / whole))


def _visible_gpus(nvml: Any, count: int) -> list[tuple[int, Any]]:
    """(CUDA index, NVML handle) for the GPUs this process's CUDA_VISIBLE_DEVICES exposes."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    out = []
    for cuda_index, item in enumerate(v.strip() for v in visible.split(",") if v.strip()):
        if item.isdigit():
            if int(item) < count:
                out.append((cuda_index, nvml.nvmlDeviceGetHandleByIndex(int(item))))
        else:
            out.append((cuda_index, nvml.nvmlDeviceGetHandleByUUID(item)))
    return out
