"""The two windows every figure is shown over: the whole trace, or its complete steps.

The profiler stops in the middle of its last ``ProfilerStep``, so that step's GPU work is partly
missing; Holistic Trace Analysis leaves it out. "Complete steps" is each trace (each part of a
job) without its last profiler step: host events from the start of the last step on are left
out, and so is every GPU op whose launch was (or whose launch is not in the trace). A trace with
fewer than two profiler steps is the same in both windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tracefmt.kinds import DEVICE_KINDS, GPU_OP_KINDS, of_kinds
from tracefmt.names import PROFILER_STEP_RE
from tracefmt.strings import present_ids

WHOLE_TRACE = "whole_trace"
COMPLETE_STEPS = "complete_steps"
WINDOWS = (WHOLE_TRACE, COMPLETE_STEPS)
WINDOW_LABELS = {WHOLE_TRACE: "whole trace", COMPLETE_STEPS: "complete steps"}

# Each aggregate row says, as bits, which windows it counts in.
IN_WHOLE_TRACE = 1
IN_COMPLETE_STEPS = 2
IN_BOTH = IN_WHOLE_TRACE | IN_COMPLETE_STEPS
ROWS_IN = {WHOLE_TRACE: (IN_WHOLE_TRACE, IN_BOTH), COMPLETE_STEPS: (IN_COMPLETE_STEPS, IN_BOTH)}


@dataclass(frozen=True)
class StepCut:
    """Where a trace's complete steps end: its last profiler step's start, and the correlation
    ids of the launches made before it (sorted)."""

    last_step_start_ns: int
    launched: np.ndarray

    def keeps(self, kind: np.ndarray, start_ns: np.ndarray, correlation: np.ndarray) -> np.ndarray:
        """Which events are in the complete steps."""
        keep = start_ns < self.last_step_start_ns
        gpu = np.flatnonzero(_launched_gpu_op(kind, correlation))
        keep[gpu] = _member(correlation[gpu], self.launched)
        return keep

    def before(self, start_ns: np.ndarray) -> np.ndarray:
        """Which time-stamped rows (steps, annotations, samples) are in the complete steps."""
        return np.asarray(start_ns) < self.last_step_start_ns


def step_cut(
    kind: np.ndarray,
    name: np.ndarray,
    names: np.ndarray,
    start_ns: np.ndarray,
    correlation: np.ndarray,
) -> StepCut | None:
    """The cut of one trace's events (``name`` ids into ``names``); None with fewer than two
    profiler steps (the trace is then whole in both windows)."""
    present = present_ids(name)
    step_ids = present[[bool(PROFILER_STEP_RE.search(str(names[i]))) for i in present]]
    if len(step_ids) < 2:
        return None
    launched_gpu_op = _launched_gpu_op(kind, correlation)
    # The host's step annotations only: the GPU's copy of the last step starts later, after
    # the step's first launches, which would then count as complete.
    is_step = ~of_kinds(kind, DEVICE_KINDS) & np.isin(name, step_ids)
    if not is_step.any():
        return None
    last_start = int(start_ns[is_step].max())
    host = ~launched_gpu_op & (start_ns < last_start)
    launched = np.sort(correlation[host & (correlation >= 0)])
    distinct = np.r_[True, launched[1:] != launched[:-1]] if len(launched) else launched > 0
    return StepCut(last_start, launched[distinct])


def _launched_gpu_op(kind: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    return of_kinds(kind, GPU_OP_KINDS) & (correlation >= 0)


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for a sorted, unique set, by binary search (numpy's
    hash-based isin takes a minute over millions of correlation ids)."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def rows_in(window: str) -> tuple[int, int]:
    """The ``windows`` values of the aggregate rows that count in ``window``."""
    if window not in ROWS_IN:
        raise ValueError(f"unknown window {window!r}; use one of {', '.join(WINDOWS)}")
    return ROWS_IN[window]


def consecutive_runs(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ascending ``numbers``: the positions of the first and of the last number of each
    run of consecutive ones ([3, 4, 5, 9] → [0, 3], [2, 3])."""
    numbers = np.asarray(numbers, dtype=np.int64)
    if not len(numbers):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    first = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1] + 1])
    return first, np.r_[first[1:], len(numbers)] - 1


def step_runs(numbers: np.ndarray) -> str:
    """Step numbers as runs of consecutive ones: "3–6, 53–56"."""
    number = np.unique(np.asarray(numbers, dtype=np.int64))
    first, last = consecutive_runs(number)
    return ", ".join(
        f"{number[a]}" if a == b else f"{number[a]}–{number[b]}"
        for a, b in zip(first.tolist(), last.tolist(), strict=True)
    )


def captured_label(captured: np.ndarray, total: int) -> str:
    """How a caption names a collector job's captured steps: "captured steps 3–6, 53–56 (8 of
    160)"."""
    if not len(captured):
        return f"no captured steps (0 of {total})"
    return f"captured steps {step_runs(captured)} ({len(np.unique(captured))} of {total})"
