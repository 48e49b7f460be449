"""Aggregates of one part, accumulated batch by batch (memory does not grow with event count,
except for the compact kernel→operator precision links, steps and annotations).

The output is shaped for the pages that read it: kernel statistics per device and name, GPU
activity and memory operations, steps, annotation durations and utilisation series.

One module, one accumulator, on purpose: each batch is read once for every aggregate, and the
batch loop is easier to keep bounded in memory when it is all in one place. What a name says
(category, precision, step) is ``traces.name_rules``; the grouped sums, ``traces.grouped``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profiler_app.traces.grouped import Partials, grouped
from profiler_app.traces.model import DERIVED_SOURCE, EventBatch, SampleBatch
from profiler_app.traces.name_rules import CATEGORIES, PRECISIONS, NameRules
from profiler_app.traces.utilization import DeviceBusy, downsample
from tracefmt import names
from tracefmt.kinds import (
    COPY_KINDS,
    GPU_OP_KINDS,
    KIND_NAMES,
    MEMCPY_KIND_NAMES,
    SAMPLE_KIND_NAMES,
    EventKind,
    SampleKind,
    of_kinds,
)
from tracefmt.strings import StringTable

ACTIVITY_NAMES = {
    int(EventKind.KERNEL): "kernel",
    int(EventKind.GPU_MEMCPY): "memcpy",
    int(EventKind.GPU_MEMSET): "memset",
    int(EventKind.CUDA_SYNC): "sync",
}
# The event columns the aggregates read.
AGGREGATED_COLUMNS = [
    "kind",
    "name",
    "start_ns",
    "dur_ns",
    "device",
    "external_id",
    "correlation",
    "bytes",
    "memcpy_kind",
    "input_types",
]
# Kernel statistics key: device << 40 | copy-or-set << 38 | precision << 32 | name id.
_COPY_OR_SET_BIT = 38
_MEMORY = names.MEM


@dataclass(frozen=True)
class PartAggregates:
    """Everything the database keeps about one part (times on the unix epoch, in ns)."""

    kernels: pd.DataFrame  # device, name, category, precision, count, total/min/max_ns, sumsq
    activities: pd.DataFrame  # device, activity, count, total_ns
    memory_ops: pd.DataFrame  # device, operation, count, total_ns, bytes
    steps: pd.DataFrame  # step, name, start_ns, dur_ns
    annotations: pd.DataFrame  # name, start_ns, dur_ns
    series: pd.DataFrame  # metric, device, source, name, time_ns, value
    event_counts: dict[str, int]
    start_ns: int | None
    end_ns: int | None
    devices: list[int]


def _lookup(pairs: list[tuple[np.ndarray, np.ndarray]], keys: np.ndarray) -> np.ndarray:
    """The value recorded for each key in (keys, values) batches; 0 where none was."""
    out = np.zeros(len(keys), dtype=np.int64)
    if not pairs:
        return out
    known = np.concatenate([k for k, _ in pairs])
    values = np.concatenate([v for _, v in pairs])
    order = np.argsort(known, kind="stable")
    known, values = known[order], values[order]
    at = np.searchsorted(known, keys)
    found = at < len(known)
    found[found] = known[at[found]] == keys[found]
    out[found] = values[at[found]]
    return out


class Aggregator:
    def __init__(self, rules: NameRules) -> None:
        # The part's rules, shared by its passes: each name is asked once.
        self.rules = rules
        self.kernels = Partials()
        self.activities = Partials()
        self.memory_ops = Partials()
        self.deferred: list[tuple[np.ndarray, ...]] = []  # kernels awaiting op precision
        self.op_precision: list[tuple[np.ndarray, np.ndarray]] = []
        self.sizeless_copies: list[tuple[np.ndarray, ...]] = []  # (key, dur, correlation)
        self.launch_bytes: list[tuple[np.ndarray, np.ndarray]] = []  # (correlation, bytes)
        self.steps: list[tuple[np.ndarray, ...]] = []
        self.annotations: list[tuple[np.ndarray, ...]] = []
        self.samples: list[dict[str, np.ndarray]] = []
        self.kind_counts = np.zeros(256, dtype=np.int64)
        self.extra_counts: Counter[str] = Counter()
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.busy: dict[int, DeviceBusy] = {}

    def add_events(self, batch: EventBatch) -> None:
        c = batch.columns
        if not len(batch):
            return
        self.rules.update()
        kind = c["kind"]
        self.kind_counts += np.bincount(kind, minlength=256)
        end = c["start_ns"] + c["dur_ns"]
        first, last = int(c["start_ns"].min()), int(end.max())
        self.start_ns = first if self.start_ns is None else min(self.start_ns, first)
        self.end_ns = last if self.end_ns is None else max(self.end_ns, last)
        self._gpu_ops(c, kind)
        self._launch_bytes(c, kind)
        self._activities(c, kind)
        self._steps_and_annotations(c, kind)
        self._operator_precision(c, kind)
        self._busy(c, kind, end)

    def add_samples(self, batch: SampleBatch) -> None:
        if len(batch):
            self.rules.update()
            self.samples.append(batch.columns)
            self.extra_counts["sample"] += len(batch)

    def count(self, category: str, n: int) -> None:
        self.extra_counts[category] += n

    def _gpu_ops(self, c: dict[str, np.ndarray], kind: np.ndarray) -> None:
        sel = np.flatnonzero(of_kinds(kind, GPU_OP_KINDS))
        if not len(sel):
            return
        name, device, dur = c["name"][sel], c["device"][sel].astype(np.int64), c["dur_ns"][sel]
        precision = self.rules.precision[name].astype(np.int64)
        ext = c["external_id"][sel]
        # Unknown by name and launched by a known operator: decided at the end from its dtype.
        copy_or_set = of_kinds(kind[sel], COPY_KINDS)
        later = (precision == 0) & (ext >= 0)
        if later.any():
            self.deferred.append(
                (device[later], name[later], dur[later], ext[later], copy_or_set[later])
            )
        now = ~later
        self._add_kernels(device[now], name[now], precision[now], dur[now], copy_or_set[now])

        is_memset = kind[sel] == EventKind.GPU_MEMSET
        mem = np.flatnonzero(copy_or_set)
        memcpy_kind = c["memcpy_kind"][sel][mem].astype(np.int64)
        from_name = self.rules.memcpy[name[mem]]
        memcpy_kind = np.where(memcpy_kind > 0, memcpy_kind, from_name)
        op = np.where(is_memset[mem], 6, memcpy_kind)  # 6 = memset
        key = ((device[mem] + 1) << 8) | op
        nbytes = c["bytes"][sel][mem]
        # ROCm records a copy's size on its runtime call only: matched by correlation at the end.
        sizeless = (nbytes < 0) & ~is_memset[mem] & (c["correlation"][sel][mem] >= 0)
        if sizeless.any():
            correlation = c["correlation"][sel][mem][sizeless]
            self.sizeless_copies.append((key[sizeless], dur[mem][sizeless], correlation))
        sized = ~sizeless
        self._add_memory_ops(key[sized], dur[mem][sized], np.maximum(nbytes[sized], 0))

    def _add_memory_ops(self, key: np.ndarray, dur: np.ndarray, nbytes: np.ndarray) -> None:
        self.memory_ops.add(grouped(key, {"total_ns": dur, "bytes": nbytes}))

    def _launch_bytes(self, c: dict[str, np.ndarray], kind: np.ndarray) -> None:
        sel = np.flatnonzero((kind == EventKind.CUDA_RUNTIME) & (c["bytes"] >= 0))
        if len(sel):
            self.launch_bytes.append((c["correlation"][sel], c["bytes"][sel]))

    def _add_kernels(
        self,
        device: np.ndarray,
        name: np.ndarray,
        precision: np.ndarray,
        dur: np.ndarray,
        copy_or_set: np.ndarray,
    ) -> None:
        key = ((device + 1) << 40) | (copy_or_set.astype(np.int64) << _COPY_OR_SET_BIT)
        key |= (precision << 32) | name.astype(np.int64)
        self.kernels.add(
            grouped(
                key,
                {
                    "total_ns": dur,
                    "dur_min": dur,
                    "dur_max": dur,
                    "sumsq": dur.astype(np.float64) ** 2,
                },
            )
        )

    def _activities(self, c: dict[str, np.ndarray], kind: np.ndarray) -> None:
        sel = np.flatnonzero(of_kinds(kind, ACTIVITY_NAMES))
        if len(sel):
            key = ((c["device"][sel].astype(np.int64) + 1) << 8) | kind[sel]
            self.activities.add(grouped(key, {"total_ns": c["dur_ns"][sel]}))

    def _steps_and_annotations(self, c: dict[str, np.ndarray], kind: np.ndarray) -> None:
        sel = np.flatnonzero((kind == EventKind.USER_ANNOTATION) | (kind == EventKind.STEP))
        if not len(sel):
            return
        name = c["name"][sel]
        step = self.rules.step[name]
        is_step = (step >= 0) | (kind[sel] == EventKind.STEP)
        start, dur = c["start_ns"][sel], c["dur_ns"][sel]
        if is_step.any():
            self.steps.append((step[is_step], name[is_step], start[is_step], dur[is_step]))
        if (~is_step).any():
            self.annotations.append((name[~is_step], start[~is_step], dur[~is_step]))

    def _operator_precision(self, c: dict[str, np.ndarray], kind: np.ndarray) -> None:
        types = c["input_types"]
        sel = np.flatnonzero((kind == EventKind.CPU_OP) & (types >= 0) & (c["external_id"] >= 0))
        if len(sel):
            precision = self.rules.input_types_precision(types[sel])
            known = precision > 0
            self.op_precision.append((c["external_id"][sel][known], precision[known]))

    def _busy(self, c: dict[str, np.ndarray], kind: np.ndarray, end: np.ndarray) -> None:
        sel = np.flatnonzero(kind == EventKind.KERNEL)
        if not len(sel):
            return
        device = c["device"][sel]
        for dev in np.unique(device).tolist():
            rows = sel[device == dev]
            self.busy.setdefault(int(dev), DeviceBusy()).add(c["start_ns"][rows], end[rows])

    def _resolve_deferred(self) -> None:
        if self.sizeless_copies:
            key, dur, correlation = (
                np.concatenate(a) for a in zip(*self.sizeless_copies, strict=True)
            )
            self._add_memory_ops(key, dur, _lookup(self.launch_bytes, correlation))
            self.sizeless_copies.clear()
        if not self.deferred:
            return
        device, name, dur, ext, copy_or_set = (
            np.concatenate(a) for a in zip(*self.deferred, strict=True)
        )
        self._add_kernels(device, name, _lookup(self.op_precision, ext), dur, copy_or_set)
        self.deferred.clear()

    def finish(self, strings: StringTable, offset_ns: int) -> PartAggregates:
        self._resolve_deferred()
        names = np.asarray(strings.strings, dtype=object)
        counts = {KIND_NAMES[k]: int(v) for k, v in enumerate(self.kind_counts) if v}
        counts.update(self.extra_counts)
        start = None if self.start_ns is None else self.start_ns + offset_ns
        end = None if self.end_ns is None else self.end_ns + offset_ns
        return PartAggregates(
            kernels=self._kernel_frame(names),
            activities=self._activity_frame(),
            memory_ops=self._memory_frame(),
            steps=self._step_frame(names, offset_ns),
            annotations=self._annotation_frame(names, offset_ns),
            series=self._series_frame(names, offset_ns),
            event_counts=counts,
            start_ns=start,
            end_ns=end,
            devices=sorted(self.busy),
        )

    def _kernel_frame(self, names: np.ndarray) -> pd.DataFrame:
        g = self.kernels.combine()
        key = g["key"]
        name = (key & 0xFFFFFFFF).astype(np.int64)
        return pd.DataFrame(
            {
                "device": (key >> 40) - 1,
                "name": names[name],
                # A copy or set is memory work whatever its name (as in the analyses).
                "category": np.where(
                    (key >> _COPY_OR_SET_BIT) & 1,
                    _MEMORY,
                    np.asarray(CATEGORIES, dtype=object)[self.rules.category[name]],
                ),
                "precision": np.asarray(PRECISIONS, dtype=object)[(key >> 32) & 0x3F],
                "count": g.get("count_sum", np.empty(0, np.int64)),
                "total_ns": g.get("total_ns", np.empty(0, np.int64)),
                "min_ns": g.get("dur_min", np.empty(0, np.int64)),
                "max_ns": g.get("dur_max", np.empty(0, np.int64)),
                "sumsq": g.get("sumsq", np.empty(0, np.float64)),
            }
        )

    def _activity_frame(self) -> pd.DataFrame:
        g = self.activities.combine()
        key = g["key"]
        return pd.DataFrame(
            {
                "device": (key >> 8) - 1,
                "activity": [ACTIVITY_NAMES[int(k)] for k in (key & 0xFF)],
                "count": g.get("count_sum", np.empty(0, np.int64)),
                "total_ns": g.get("total_ns", np.empty(0, np.int64)),
            }
        )

    def _memory_frame(self) -> pd.DataFrame:
        g = self.memory_ops.combine()
        key = g["key"]
        labels = {6: "Memset", 0: "Memcpy Unknown"}
        labels.update({k: f"Memcpy {v}" for k, v in MEMCPY_KIND_NAMES.items()})
        return pd.DataFrame(
            {
                "device": (key >> 8) - 1,
                "operation": [labels[int(k)] for k in (key & 0xFF)],
                "count": g.get("count_sum", np.empty(0, np.int64)),
                "total_ns": g.get("total_ns", np.empty(0, np.int64)),
                "bytes": g.get("bytes", np.empty(0, np.int64)),
            }
        )

    def _step_frame(self, names: np.ndarray, offset_ns: int) -> pd.DataFrame:
        if not self.steps:
            return _typed(
                {"step": np.int64, "name": object, "start_ns": np.int64, "dur_ns": np.int64}
            )
        step, name, start, dur = (np.concatenate(a) for a in zip(*self.steps, strict=True))
        frame = pd.DataFrame(
            {"step": step, "name": names[name], "start_ns": start + offset_ns, "dur_ns": dur}
        )
        return frame.sort_values(["start_ns", "step"], ignore_index=True)

    def _annotation_frame(self, names: np.ndarray, offset_ns: int) -> pd.DataFrame:
        if not self.annotations:
            return _typed({"name": object, "start_ns": np.int64, "dur_ns": np.int64})
        name, start, dur = (np.concatenate(a) for a in zip(*self.annotations, strict=True))
        return pd.DataFrame({"name": names[name], "start_ns": start + offset_ns, "dur_ns": dur})

    def _series_frame(self, names: np.ndarray, offset_ns: int) -> pd.DataFrame:
        frames = []
        sampled = self._sample_frames(names, offset_ns)
        measured = set(sampled.loc[sampled["metric"] == "gpu_util_pct", "device"].tolist())
        frames.append(sampled)
        if self.start_ns is not None and self.end_ns is not None:
            for device, busy in sorted(self.busy.items()):
                if device in measured:
                    continue  # measured utilisation beats the derived one
                times, values = busy.series(self.start_ns, self.end_ns)
                frames.append(
                    pd.DataFrame(
                        {
                            "metric": "gpu_util_pct",
                            "device": device,
                            "source": DERIVED_SOURCE,
                            "name": "",
                            "time_ns": times + offset_ns,
                            "value": values,
                        }
                    )
                )
        return pd.concat(frames, ignore_index=True)

    def _sample_frames(self, names: np.ndarray, offset_ns: int) -> pd.DataFrame:
        empty = _empty_series()
        if not self.samples:
            return empty
        cols = {k: np.concatenate([s[k] for s in self.samples]) for k in self.samples[0]}
        frame = pd.DataFrame(cols)
        out = [empty]
        for (kind, device, name), rows in frame.groupby(["kind", "device", "name"], sort=True):
            times, values = downsample(
                rows["time_ns"].to_numpy(np.int64), rows["value"].to_numpy(np.float64)
            )
            metric = SAMPLE_KIND_NAMES[int(kind)]
            source = SAMPLE_SOURCES.get(int(kind), "counter")
            out.append(
                pd.DataFrame(
                    {
                        "metric": metric,
                        "device": int(device),
                        "source": source,
                        "name": names[int(name)],
                        "time_ns": times + offset_ns,
                        "value": values,
                    }
                )
            )
        return pd.concat(out, ignore_index=True)


def _typed(dtypes: dict[str, type]) -> pd.DataFrame:
    return pd.DataFrame({c: np.empty(0, dtype=t) for c, t in dtypes.items()})


def _empty_series() -> pd.DataFrame:
    return _typed(
        {
            "metric": object,
            "device": np.int64,
            "source": object,
            "name": object,
            "time_ns": np.int64,
            "value": np.float64,
        }
    )


# Which measurement each sample kind comes from (a sample's ``source``).
SAMPLE_SOURCES = {
    int(SampleKind.GPU_UTIL_PCT): "nvml",
    int(SampleKind.GPU_MEM_USED_BYTES): "nvml",
    int(SampleKind.GPU_MEM_UTIL_PCT): "nvml",
    int(SampleKind.CPU_UTIL_PCT): "psutil",
    int(SampleKind.CPU_IOWAIT_PCT): "psutil",
    int(SampleKind.HOST_MEM_USED_BYTES): "psutil",
    int(SampleKind.CPU_UTIL_TOTAL_PCT): "psutil",
    int(SampleKind.COUNTER): "counter",
}
