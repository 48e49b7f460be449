"""When to open a Kineto window: the overhead budget the collector keeps by itself.

A window costs the training process time: the steps it records run slower, and its start, its
stop and its export (handing the trace to the flusher) happen on the training thread.
``WindowPlanner`` measures that cost from the step boundaries it is told of: the wall time from
the boundary where a window opens to the boundary after its export, less the same number of
steps at the median of the steps no window touched. The collector's own threads (sampler,
flusher, uploader) add their CPU time, which they take from the training's cores and GIL; the
packing child runs in the idle scheduling class and takes nothing training wants. The next
window opens only when the job's cumulative cost, with the next window's expected cost, stays
within ``budget_pct`` of the time profiled so far. The first window comes as soon as the budget allows
it on a cautious estimate, and within ``FIRST_WINDOW_BY_NS`` of the start whatever the budget,
so that a short job still gets a capture.

With a fixed schedule (the user set ``kineto_wait_steps``) windows follow the schedule and the
cost is still measured and reported. The planner is pure: no torch, no clock of its own; the
training thread calls ``step_ended``, the flusher thread ``add_background`` and ``report``.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

# The first window opens at the latest this long after profiling starts (budget or not).
FIRST_WINDOW_BY_NS = 60_000_000_000
# Clean steps needed for a baseline before a window may open, and how many the median keeps.
MIN_BASELINE_STEPS = 5
BASELINE_STEPS = 99
# Before any window was measured, one is assumed to triple the time of the steps it spans (its
# recording, stop, export and packing together).
PRIOR_SLOWDOWN = 2.0
# A window is planned at this multiple of its expected cost: costs vary from window to window,
# and the budget must hold at the end of the window, not only at its start.
COST_MARGIN = 1.25
# With CPU operators asked for on a GPU machine, every FULL_EVERY-th window records them; the
# windows between record GPU activity only, which costs far less.
FULL_EVERY = 4

GPU, FULL, CPU = "gpu", "full", "cpu"


@dataclass
class Window:
    kind: str
    first_step: int | None = None
    last_step: int | None = None
    steps: int = 0
    cost_ns: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "first_step": self.first_step,
            "last_step": self.last_step,
            "kind": self.kind,
            "cost_ns": self.cost_ns,
        }


@dataclass(frozen=True)
class FixedSchedule:
    """The user's own schedule: skip, then repeat [warm-up, active, wait] (``repeat`` 0: for
    ever), counted in steps since profiling started."""

    skip_first: int
    wait: int
    repeat: int

    def opens_at(self, step: int, length: int) -> bool:
        if step < self.skip_first:
            return False
        pos = step - self.skip_first
        cycle = length + self.wait
        if self.repeat and pos // cycle >= self.repeat:
            return False
        return pos % cycle == 0


class WindowPlanner:
    """Decides at each step boundary whether a window opens, and measures what windows cost."""

    def __init__(
        self,
        budget_pct: float,
        warmup_steps: int,
        active_steps: int,
        skip_first: int,
        kinds: tuple[str, ...],
        fixed: FixedSchedule | None = None,
        max_windows: int = 0,
    ) -> None:
        self.budget_pct = budget_pct
        self.warmup_steps = warmup_steps
        self.active_steps = active_steps
        self.skip_first = skip_first
        self.kinds = kinds
        self.fixed = fixed
        self.max_windows = max_windows
        self._lock = threading.Lock()
        self._clean: deque[int] = deque(maxlen=BASELINE_STEPS)
        self._last_boundary_ns: int | None = None
        self._last_was_clean = False
        self.steps_run = 0
        self.steps_captured = 0
        self.elapsed_ns = 0
        self.cost_ns = 0
        # The windows of the phase in progress: from the boundary where the first of them opened
        # to the boundary after the last one's export (windows of a fixed schedule with no wait
        # follow each other in one phase).
        self._phase: list[Window] = []
        self._phase_start_ns = 0
        self._phase_steps = 0
        self._saved = 0
        self.background_ns = 0
        # Windows exported and not yet packed: their packing's cost is not known yet, so no
        # window opens in budget mode until it is.
        self.awaiting_handover = 0
        # The latest measured windows, whose costs predict the next ones', and the CPU time
        # their packing took (a child process's, reported when the window is handed over).
        self._done: deque[Window] = deque(maxlen=32)
        self._packing: deque[int] = deque(maxlen=32)
        self._unreported: list[Window] = []
        self.windows_total = 0
        self.windows_opened = 0

    # ---- the training thread ------------------------------------------------------------------

    def resume(self, now_ns: int) -> None:
        """Profiling (re)starts: time between sessions is neither elapsed nor a step."""
        self._last_boundary_ns = now_ns
        self._last_was_clean = False

    def step_ended(self, now_ns: int, step: int | None, recorded: bool) -> None:
        """A step ended at ``now_ns`` (before the collector's own work at this boundary);
        ``recorded``: a window recorded it."""
        last = self._last_boundary_ns
        self._last_boundary_ns = now_ns
        if last is None:
            return
        duration = now_ns - last
        self.elapsed_ns += duration
        self.steps_run += 1
        if self._phase:
            self._phase_steps += 1
            if recorded:
                window = self._phase[-1]
                self.steps_captured += 1
                window.steps += 1
                if step is not None:
                    if window.first_step is None:
                        window.first_step = step
                    window.last_step = step
            if self._saved == len(self._phase):
                self._close_phase(now_ns)
        elif self._last_was_clean:
            self._clean.append(duration)
        self._last_was_clean = not self._phase

    def should_open(self, now_ns: int) -> bool:
        """Whether a window opens at this boundary (call right after ``step_ended``)."""
        if self.fixed is not None:
            if self._phase and self._saved < len(self._phase):
                return False  # a window is still recording
            return self.fixed.opens_at(self.steps_run, self.window_steps)
        if self._phase or self.awaiting_handover or self.steps_run < self.skip_first:
            return False
        if self.max_windows and self.windows_total >= self.max_windows:
            return False
        if len(self._clean) < MIN_BASELINE_STEPS:
            return False
        if not self.windows_total and self.elapsed_ns >= FIRST_WINDOW_BY_NS:
            return True
        expected = COST_MARGIN * self.expected_cost_ns(self.next_kind())
        return self.cost_ns + expected <= self.budget_pct / 100 * self.elapsed_ns

    def pause(self, now_ns: int, stopping_since_ns: int) -> None:
        """Profiling stopped at ``now_ns``, its stop (the last window's export and packing)
        having begun at ``stopping_since_ns``: the time since the last boundary is elapsed, the
        stop is cost, and so is an unfinished phase."""
        if self._last_boundary_ns is not None:
            self.elapsed_ns += now_ns - self._last_boundary_ns
        self._last_boundary_ns = None
        if self._phase:
            self._close_phase(now_ns)
        else:
            with self._lock:
                self.cost_ns += max(0, now_ns - stopping_since_ns)

    def opened(self, now_ns: int, kind: str) -> None:
        """A window of ``kind`` opened at this boundary."""
        if not self._phase:
            self._phase_start_ns = now_ns
            self._phase_steps = 0
        self._phase.append(Window(kind))
        self.windows_opened += 1

    def saved(self) -> None:
        """The window in progress stopped (its export and packing are under way)."""
        self._saved += 1
        with self._lock:
            self.awaiting_handover += 1

    def abandoned(self) -> None:
        """The window in progress ended without an export (another profiler took over)."""
        self._saved += 1

    def next_kind(self) -> str:
        if len(self.kinds) == 1:
            return self.kinds[0]
        # Kinds are (FULL, GPU): a full window first, then every FULL_EVERY-th.
        return self.kinds[0] if self.windows_opened % FULL_EVERY == 0 else self.kinds[1]

    @property
    def window_steps(self) -> int:
        return self.warmup_steps + self.active_steps

    def baseline_ns(self) -> float:
        return statistics.median(self._clean) if self._clean else 0.0

    def expected_cost_ns(self, kind: str) -> float:
        """Mean measured cost of the windows of ``kind`` (of any kind if none yet; a cautious
        prior if none at all), with the mean cost of packing one."""
        with self._lock:
            costs = [w.cost_ns for w in self._done if w.kind == kind] or [
                w.cost_ns for w in self._done
            ]
            packing = statistics.fmean(self._packing) if self._packing else 0.0
        if costs:
            return statistics.fmean(costs) + packing
        return PRIOR_SLOWDOWN * self.window_steps * self.baseline_ns() + packing

    def _close_phase(self, now_ns: int) -> None:
        spent = (now_ns - self._phase_start_ns) - self._phase_steps * self.baseline_ns()
        spent = max(0, int(spent))
        # A window stopped while warming up recorded nothing: its cost counts, it does not.
        windows = [w for w in self._phase if w.steps]
        self._phase = []
        self._saved = 0
        with self._lock:
            for i, window in enumerate(windows):
                # A phase of several windows (a fixed schedule with no wait) shares its cost.
                window.cost_ns = spent // len(windows) + (spent % len(windows) if i == 0 else 0)
                self._done.append(window)
                self._unreported.append(window)
            self.cost_ns += spent
            self.windows_total += len(windows)

    # ---- the flusher thread --------------------------------------------------------------------

    def handed_over(self, packing_ns: int) -> None:
        """A stopped window was exported and packed into a chunk; its packing cost the
        training ``packing_ns`` (part of the next windows' expected cost)."""
        with self._lock:
            self.awaiting_handover = max(0, self.awaiting_handover - 1)
            self._packing.append(packing_ns)
            self.background_ns += packing_ns
            self.cost_ns += packing_ns

    def add_background(self, cpu_ns: int) -> None:
        """CPU time the collector's own threads spent (it counts as cost, as packing does)."""
        with self._lock:
            self.background_ns += cpu_ns
            self.cost_ns += cpu_ns

    def report(self) -> dict[str, Any]:
        """The cumulative figures and the windows finished since the last report (for a chunk)."""
        with self._lock:
            windows, self._unreported = self._unreported, []
            elapsed, cost = self.elapsed_ns, self.cost_ns
            total = self.windows_total
        overhead = 100 * cost / elapsed if elapsed else 0.0
        return {
            "schedule": "fixed" if self.fixed is not None else "budget",
            "budget_pct": self.budget_pct,
            "elapsed_ns": elapsed,
            "cost_ns": cost,
            "background_ns": self.background_ns,
            "overhead_pct": round(overhead, 4),
            "steps_run": self.steps_run,
            "steps_captured": self.steps_captured,
            "windows_total": total,
            "exceeded": overhead > self.budget_pct,
            "windows": [w.as_dict() for w in windows],
        }
