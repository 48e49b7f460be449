"""What Kineto recorded of a collector job whose chunks are of the first format (Kineto's events
converted into the chunk's columns), read from the chunks' arrays alone, without the product's
code: a step is captured when one of Kineto's host calls starts in it, a run of consecutive
captured steps is one recorded window, and GPU work counts where its launch started.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

KINETO_HOST_KINDS = (
    EventKind.CPU_OP,
    EventKind.CUDA_RUNTIME,
    EventKind.CUDA_DRIVER,
    EventKind.PYTHON_FUNCTION,
)
GPU_OP_KINDS = (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)


class GpuOp(NamedTuple):
    kind: int
    name: str
    memcpy_kind: int
    start_ns: int
    dur_ns: int
    step: int | None  # the step its launch started in (None: between two steps)


@dataclass(frozen=True)
class Converted:
    steps: dict[int, tuple[int, int]]  # number -> (start_ns, end_ns), every step
    captured: list[int]  # the steps one of Kineto's host calls starts in
    gpu_ops: list[GpuOp]  # those launched in a window (``windows``)

    @property
    def step_ns(self) -> int:
        """The captured steps' time."""
        return sum(self.steps[s][1] - self.steps[s][0] for s in self.captured)

    @property
    def kernel_ns(self) -> dict[str, int]:
        """Each kernel's summed time (ns) by name, over the kernels launched in a window."""
        totals: dict[str, int] = defaultdict(int)
        for op in self.gpu_ops:
            if op.kind == EventKind.KERNEL:
                totals[op.name] += op.dur_ns
        return dict(totals)

    @property
    def windows(self) -> list[tuple[int, int]]:
        """Each run of consecutive captured steps, from its first step's start to its last
        one's end."""
        runs: list[list[int]] = []
        for step in self.captured:
            if runs and runs[-1][-1] == step - 1:
                runs[-1].append(step)
            else:
                runs.append([step])
        return [(self.steps[run[0]][0], self.steps[run[-1]][1]) for run in runs]


def read_converted(chunks: list[Path]) -> Converted:
    steps: dict[int, tuple[int, int]] = {}
    host_starts: list[int] = []
    launches: dict[int, int] = {}  # correlation -> the launching call's start
    ops: list[tuple[int, int, tuple]] = []  # correlation, start, (kind, name, memcpy, start, dur)
    for path in chunks:
        chunk = read_chunk(path)
        ev, names = chunk.events, chunk.event_names()
        for i in range(chunk.n_events):
            kind, start = int(ev["ev_kind"][i]), int(ev["ev_start_ns"][i])
            dur, correlation = int(ev["ev_dur_ns"][i]), int(ev["ev_correlation"][i])
            if kind == EventKind.STEP:
                steps[int(names[i].removeprefix("step_"))] = (start, start + dur)
            elif kind in KINETO_HOST_KINDS:
                host_starts.append(start)
                if correlation >= 0:
                    launches[correlation] = start
            elif kind in GPU_OP_KINDS:
                memcpy = int(ev["ev_memcpy_kind"][i])
                ops.append((correlation, start, (kind, str(names[i]), memcpy, start, dur)))
    by_start = sorted((a, b, n) for n, (a, b) in steps.items())
    starts = [a for a, _, _ in by_start]

    def step_of(time_ns: int) -> int | None:
        at = bisect_right(starts, time_ns) - 1
        if at < 0 or time_ns >= by_start[at][1]:
            return None
        return by_start[at][2]

    captured = sorted({s for s in map(step_of, host_starts) if s is not None})
    found = Converted(steps, captured, [])
    for correlation, start, op in ops:
        at = launches.get(correlation, start)
        if any(a <= at < b for a, b in found.windows):
            found.gpu_ops.append(GpuOp(*op, step_of(at)))
    return found
