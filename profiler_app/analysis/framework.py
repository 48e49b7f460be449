"""The rules' inputs (``analysis.frames``) from parsed traces and samples.

Steps, nesting and self times are the store's event model (``traces.event_model``). Framework phases are read from annotation
names (PyTorch's own ones and common user ones); CPU operators and GPU work are phases of
their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from profiler_app.analysis import frames
from profiler_app.analysis.events import RankTrace, sums_by_key
from profiler_app.traces.nesting import nearest
from tracefmt.kinds import GPU_OP_KINDS, SAMPLE_KIND_NAMES, EventKind, of_kinds

# First match wins: "DistributedDataParallel.forward" is forward, "Optimizer.zero_grad#..." is
# optimizer, "enumerate(DataLoader)#...__next__" is data loading.
_PHASE_PATTERNS = (
    ("dataloader", re.compile(r"dataloader|data_load|dataset|enumerate\(", re.IGNORECASE)),
    ("optimizer", re.compile(r"optimizer|zero_grad", re.IGNORECASE)),
    ("backward", re.compile(r"backward", re.IGNORECASE)),
    ("forward", re.compile(r"forward", re.IGNORECASE)),
    (
        "communication",
        re.compile(
            r"^nccl:|c10d|all_?reduce|all_?gather|reduce_?scatter|all_to_all|broadcast",
            re.IGNORECASE,
        ),
    ),
)
ANNOTATION_KINDS = (int(EventKind.USER_ANNOTATION), int(EventKind.STEP))


def phase_of(name: str) -> str:
    for phase, pattern in _PHASE_PATTERNS:
        if pattern.search(name):
            return phase
    return "other"


def framework_from_events(trace: RankTrace) -> pd.DataFrame:
    """Time per (name, phase) of the rank: annotations by phase, CPU operators, GPU work.

    Annotations nest (DDP's forward inside the model's "## forward ##", a step around both);
    each instant of a thread counts once, for its innermost annotation: the self time
    (``traces.event_model``) of every event whose closest annotation, itself included, is that
    one. A CPU operator counts its self time; GPU ops count whole.
    """
    events = trace.events
    kind = events["kind"].to_numpy()
    self_ns = events["self_ns"].to_numpy()
    parent = trace.parent_rows
    annotated = of_kinds(kind, ANNOTATION_KINDS)
    owner = nearest(annotated, parent, events["depth"].to_numpy())
    has_owner = owner >= 0
    by_owner = np.bincount(owner[has_owner], weights=self_ns[has_owner], minlength=len(kind))
    operators = kind == EventKind.CPU_OP
    gpu = of_kinds(kind, GPU_OP_KINDS)
    picked = annotated | operators | gpu
    time_ns = np.where(operators, self_ns, events["dur_ns"].to_numpy())
    time_ns[annotated] = by_owner[annotated]  # sums of integers, exact in floats below 2**53
    # Steps are the rules' other input; counting them as a phase would hide the rest.
    picked &= ~events["is_step"].to_numpy()
    per_event = {
        "kind": kind[picked].astype(np.int64),
        "name": events["name"].to_numpy()[picked],
        "dur_ns": time_ns[picked],
    }
    totals = sums_by_key(per_event, ["kind", "name"])
    names = trace.names[totals["name"].to_numpy()].astype(str)
    kinds = totals["kind"].to_numpy()
    phase = np.where(kinds == EventKind.CPU_OP, "cpu", "gpu").astype(object)
    is_annotation = of_kinds(kinds, ANNOTATION_KINDS)
    phase[is_annotation] = [phase_of(n) for n in names[is_annotation]]
    return frames.framework_frame(names, phase, totals["dur_ns"].to_numpy())


def metrics_from_samples(
    columns: Mapping[str, np.ndarray], node: str, gpu_memory_bytes: Mapping[int, int]
) -> pd.DataFrame:
    """A metrics frame from a node's samples (``traces.model.SAMPLE_COLUMNS``), with each GPU's
    memory in use as a share of its ``gpu_memory_bytes`` (device index → total) where known;
    performance counters (kind COUNTER) are not rule inputs and are left out."""
    kind = np.asarray(columns["kind"])
    names = np.array([SAMPLE_KIND_NAMES.get(int(k), "") for k in range(256)], dtype=object)[kind]
    keep = np.isin(names, frames.METRICS)
    time_ns, device = np.asarray(columns["time_ns"]), np.asarray(columns["device"])
    value = np.asarray(columns["value"], dtype=np.float64)
    total = np.array([gpu_memory_bytes.get(int(d), 0) for d in device], dtype=np.float64)
    in_use = (names == frames.GPU_MEM_USED) & (total > 0)
    rows = np.r_[np.flatnonzero(keep), np.flatnonzero(in_use)]
    metric = np.r_[names[keep], np.full(int(in_use.sum()), frames.GPU_MEM_USED_PCT, object)]
    share = 100.0 * value[in_use] / total[in_use]
    return frames.metrics_frame(
        time_ns[rows],
        np.full(len(rows), node, dtype=object),
        device[rows],
        metric,
        np.r_[value[keep], share],
    )
