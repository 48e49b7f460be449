"""The rules' inputs (``insights.frames``) from parsed traces and samples.

Steps are the ``ProfilerStep#<n>`` annotations of Kineto traces and the collector's step
annotations (``step_<n>``, or events of kind STEP). Framework phases are read from annotation
names (PyTorch's own ones and common user ones); CPU operators and GPU work are phases of
their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from profiler_app.insights import frames
from profiler_app.insights.analyses.events import RankTrace, rows_where
from profiler_app.insights.analyses.operators import nesting
from tracefmt.kinds import GPU_OP_KINDS, SAMPLE_KIND_NAMES, EventKind

_STEP_NAME = re.compile(r"(?:ProfilerStep#|step[_#: ]?)(\d+)$", re.IGNORECASE)
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


def _step_number(name: str) -> int | None:
    found = _STEP_NAME.search(name)
    return int(found.group(1)) if found else None


def steps_from_events(trace: RankTrace, node: str) -> pd.DataFrame:
    """The rank's steps: host annotations named like a step, or events of kind STEP."""
    events = trace.events[trace.events["kind"].isin(ANNOTATION_KINDS)]
    unique, inverse = np.unique(events["name"].to_numpy(), return_inverse=True)
    numbers = [_step_number(str(trace.names[i])) for i in unique]
    per_name = np.array([-1 if n is None else n for n in numbers], dtype=np.int64)
    number = per_name[inverse.reshape(-1)]
    is_step = (number >= 0) | (events["kind"] == EventKind.STEP).to_numpy()
    steps = events[is_step]
    names = trace.names[steps["name"].to_numpy()].astype(str)
    step = number[is_step]
    mode = np.where(np.char.find(np.char.lower(names), "eval") >= 0, frames.EVAL, frames.TRAIN)
    return frames.steps_frame(
        np.full(len(steps), trace.rank),
        np.full(len(steps), node, dtype=object),
        step,
        names,
        steps["start_ns"].to_numpy(),
        steps["dur_ns"].to_numpy(),
        mode,
    )


def phase_of(name: str) -> str:
    for phase, pattern in _PHASE_PATTERNS:
        if pattern.search(name):
            return phase
    return "other"


def exclusive_ns(events: pd.DataFrame) -> np.ndarray:
    """Each event's duration less the part of it its nested events (same track) cover."""
    track = events["track"].to_numpy()
    start = events["start_ns"].to_numpy()
    end = start + events["dur_ns"].to_numpy()
    parent, _ = nesting(track, start, end)
    child = np.flatnonzero(parent >= 0)
    inside = np.minimum(end[child], end[parent[child]]) - start[child]
    covered = np.bincount(parent[child], weights=inside, minlength=len(start))
    return np.maximum(end - start - covered.astype(np.int64), 0)


def framework_from_events(trace: RankTrace) -> pd.DataFrame:
    """Exclusive time per (name, phase) of the rank: annotations by phase, CPU operators, GPU
    work.

    Annotations nest (DDP's forward inside the model's "## forward ##", a step around both);
    each instant of a thread counts once, for its innermost annotation, and likewise for CPU
    operators. GPU ops count whole.
    """
    events = trace.events[["kind", "name", "track", "start_ns", "dur_ns"]]
    kind = events["kind"].to_numpy()
    annotations = rows_where(events, np.isin(kind, ANNOTATION_KINDS))
    operators = rows_where(events, kind == EventKind.CPU_OP)
    gpu = rows_where(events, np.isin(kind, GPU_OP_KINDS))
    picked = pd.DataFrame(
        {
            "kind": np.concatenate([annotations["kind"], operators["kind"], gpu["kind"]]).astype(
                np.int64
            ),
            "name": np.concatenate([annotations["name"], operators["name"], gpu["name"]]),
            "dur_ns": np.concatenate(
                [exclusive_ns(annotations), exclusive_ns(operators), gpu["dur_ns"]]
            ).astype(np.int64),
        }
    )
    totals = picked.groupby(["kind", "name"], sort=False)["dur_ns"].sum().reset_index()
    names = trace.names[totals["name"].to_numpy()].astype(str)
    kinds = totals["kind"].to_numpy()
    phase = np.where(kinds == EventKind.CPU_OP, "cpu", "gpu").astype(object)
    annotated = np.isin(kinds, ANNOTATION_KINDS)
    phase[annotated] = [phase_of(n) for n in names[annotated]]
    # Steps are the rules' other input; counting them as a phase would hide everything else.
    is_step = annotated & (
        (kinds == EventKind.STEP) | np.array([_step_number(n) is not None for n in names])
    )
    keep = ~is_step
    return frames.framework_frame(names[keep], phase[keep], totals["dur_ns"].to_numpy()[keep])


def metrics_from_samples(columns: Mapping[str, np.ndarray], node: str) -> pd.DataFrame:
    """A metrics frame from a node's samples (``traces.model.SAMPLE_COLUMNS``); performance
    counters (kind COUNTER) are not rule inputs and are left out."""
    kind = np.asarray(columns["kind"])
    names = np.array([SAMPLE_KIND_NAMES.get(int(k), "") for k in range(256)], dtype=object)[kind]
    keep = np.isin(names, frames.METRICS)
    return frames.metrics_frame(
        np.asarray(columns["time_ns"])[keep],
        np.full(int(keep.sum()), node, dtype=object),
        np.asarray(columns["device"])[keep],
        names[keep],
        np.asarray(columns["value"])[keep],
    )
