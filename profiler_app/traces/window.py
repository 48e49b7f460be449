"""The two windows every figure is shown over: the whole trace, or its complete steps.

The profiler stops in the middle of its last ``ProfilerStep``, so that step's GPU work is partly
missing; Holistic Trace Analysis leaves it out. "Complete steps" is each trace (each part of a
job) without its last profiler step: host events from the start of the last step on are left
out, and so is every GPU op whose launch was (or whose launch is not in the trace). A trace with
fewer than two profiler steps is the same in both windows.

Which events lie in the complete steps is worked out once, when a part's store is written: the
event model's ``in_complete_steps`` column (``traces.event_model``). Every reader of a window
reads that column; ``StepCut`` says it of the rows kept beside the events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    """Where a part's complete steps end: its last profiler step's start on the host (the
    event model's ``complete_steps_end_ns``)."""

    last_step_start_ns: int

    def before(self, start_ns: np.ndarray) -> np.ndarray:
        """Which time-stamped rows (steps, annotations, samples) are in the complete steps."""
        return np.asarray(start_ns) < self.last_step_start_ns


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
