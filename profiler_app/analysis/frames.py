"""The inputs of the profiler rules: three DataFrames and the job's start and end.

metrics — one row per system sample (what the collector's sampler records)
    time_ns  int64    when the sample was taken (unix epoch, ns)
    node     str      node name, e.g. "algo-1"
    device   int16    GPU index for GPU metrics, CPU core for ``cpu_util_pct``; -1 = whole host
    metric   str/category, one of ``METRICS``
    value    float64  percent for ``*_pct``, bytes for ``*_bytes``

``gpu_mem_util_pct`` is NVML's memory-controller busy share; ``gpu_mem_used_pct`` the share of
the GPU's memory in use (used bytes over the device's total, which the collector records).

steps — one row per training step of one rank
    rank int, node str, step int (the step number), name str (the annotation),
    start_ns int64, dur_ns int64, mode str ("TRAIN" or "EVAL")

framework — time spent in framework activities (annotations, operators, kernels)
    name str      annotation / operator / kernel name
    phase str     one of ``PHASES``
    dur_ns int64  time spent, summed over calls or one row per call

``job_start_ns`` is when the training job started (the collector's start). It is unknown for
imported traces, which start wherever profiling started; rules that need it then say so.

``gpu_util_source`` says where the GPU utilisation samples come from: NVML (the collector), or
kernel busy time (``KERNEL_BUSY``: the share of each bucket in which a kernel ran on the GPU,
the dashboard's series of an imported trace, which has no NVML samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

GPU_UTIL = "gpu_util_pct"
GPU_MEM_UTIL = "gpu_mem_util_pct"
GPU_MEM_USED = "gpu_mem_used_bytes"
GPU_MEM_USED_PCT = "gpu_mem_used_pct"
CPU_UTIL = "cpu_util_pct"
CPU_UTIL_TOTAL = "cpu_util_total_pct"
CPU_IOWAIT = "cpu_iowait_pct"
HOST_MEM_USED = "host_mem_used_bytes"
METRICS = (
    GPU_UTIL,
    GPU_MEM_UTIL,
    GPU_MEM_USED,
    GPU_MEM_USED_PCT,
    CPU_UTIL,
    CPU_IOWAIT,
    HOST_MEM_USED,
    CPU_UTIL_TOTAL,
)

NVML = "nvml"
KERNEL_BUSY = "kernel_busy"

TRAIN = "TRAIN"
EVAL = "EVAL"
MODES = (TRAIN, EVAL)

# Framework phases. "cpu" = CPU operators, "gpu" = GPU kernels and memory operations; the
# others come from annotations (see ``analyses.framework``).
PHASES = ("forward", "backward", "optimizer", "dataloader", "communication", "cpu", "gpu", "other")

METRIC_COLUMNS = ("time_ns", "node", "device", "metric", "value")
STEP_COLUMNS = ("rank", "node", "step", "name", "start_ns", "dur_ns", "mode")
FRAMEWORK_COLUMNS = ("name", "phase", "dur_ns")


def _check(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"the {what} frame lacks the columns {', '.join(missing)}")


def metrics_frame(
    time_ns: np.ndarray | list[int],
    node: np.ndarray | list[str],
    device: np.ndarray | list[int],
    metric: np.ndarray | list[str] | pd.Categorical,
    value: np.ndarray | list[float],
) -> pd.DataFrame:
    """A metrics frame with the documented dtypes."""
    return pd.DataFrame(
        {
            "time_ns": np.asarray(time_ns, dtype=np.int64),
            "node": pd.Series(node, dtype=str),
            "device": np.asarray(device, dtype=np.int16),
            "metric": pd.Categorical(metric, categories=METRICS),
            "value": np.asarray(value, dtype=np.float64),
        }
    )


def steps_frame(
    rank: np.ndarray | list[int],
    node: np.ndarray | list[str],
    step: np.ndarray | list[int],
    name: np.ndarray | list[str],
    start_ns: np.ndarray | list[int],
    dur_ns: np.ndarray | list[int],
    mode: np.ndarray | list[str],
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": np.asarray(rank, dtype=np.int32),
            "node": pd.Series(node, dtype=str),
            "step": np.asarray(step, dtype=np.int64),
            "name": pd.Series(name, dtype=str),
            "start_ns": np.asarray(start_ns, dtype=np.int64),
            "dur_ns": np.asarray(dur_ns, dtype=np.int64),
            "mode": pd.Series(mode, dtype=str),
        }
    )


def framework_frame(
    name: np.ndarray | list[str], phase: np.ndarray | list[str], dur_ns: np.ndarray | list[int]
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": pd.Series(name, dtype=str),
            "phase": pd.Series(phase, dtype=str),
            "dur_ns": np.asarray(dur_ns, dtype=np.int64),
        }
    )


@dataclass(frozen=True)
class Samples:
    """The metrics frame as arrays, ordered by metric, node, device and time: what the rules
    scan (integer codes sort and compare far faster than strings)."""

    metric: np.ndarray  # index into METRICS
    node: np.ndarray  # index into ``nodes``
    device: np.ndarray
    time_ns: np.ndarray
    value: np.ndarray
    nodes: tuple[str, ...]

    def span(self, metric: str) -> slice:
        """The rows of ``metric``."""
        code = METRICS.index(metric)
        first, stop = np.searchsorted(self.metric, (code, code + 1))
        return slice(int(first), int(stop))


@dataclass(frozen=True)
class JobData:
    """Everything the rules look at for one job (any frame may be empty)."""

    metrics: pd.DataFrame
    steps: pd.DataFrame
    framework: pd.DataFrame
    job_start_ns: int | None = None
    job_end_ns: int | None = None
    gpu_util_source: str = NVML

    def __post_init__(self) -> None:
        _check(self.metrics, METRIC_COLUMNS, "metrics")
        _check(self.steps, STEP_COLUMNS, "steps")
        _check(self.framework, FRAMEWORK_COLUMNS, "framework")

    @classmethod
    def empty(cls, job_start_ns: int | None = None) -> JobData:
        return cls(
            metrics_frame([], [], [], [], []),
            steps_frame([], [], [], [], [], [], []),
            framework_frame([], [], []),
            job_start_ns=job_start_ns,
        )

    @cached_property
    def samples(self) -> Samples:
        frame = self.metrics
        metric = pd.Categorical(frame["metric"], categories=METRICS).codes
        node, nodes = pd.factorize(frame["node"], sort=True)
        device = frame["device"].to_numpy()
        time_ns = frame["time_ns"].to_numpy()
        order = np.lexsort((time_ns, device, node, metric))
        known = metric[order] >= 0  # metrics the rules do not know are left out
        order = order[known]
        return Samples(
            metric[order],
            node[order],
            device[order],
            time_ns[order],
            frame["value"].to_numpy()[order],
            tuple(str(n) for n in nodes),
        )

    def has_metric(self, metric: str) -> bool:
        span = self.samples.span(metric)
        return span.stop > span.start

    def data_start_ns(self) -> int | None:
        """The earliest time any input mentions (the job start when it is known)."""
        if self.job_start_ns is not None:
            return self.job_start_ns
        candidates = []
        if len(self.metrics):
            candidates.append(int(self.metrics["time_ns"].min()))
        if len(self.steps):
            candidates.append(int(self.steps["start_ns"].min()))
        return min(candidates) if candidates else None

    def data_end_ns(self) -> int | None:
        """The latest time any input mentions (the job end when it is known)."""
        candidates = [] if self.job_end_ns is None else [self.job_end_ns]
        if len(self.metrics):
            candidates.append(int(self.metrics["time_ns"].max()))
        if len(self.steps):
            candidates.append(int((self.steps["start_ns"] + self.steps["dur_ns"]).max()))
        return max(candidates) if candidates else None
