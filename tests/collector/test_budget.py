"""The overhead budget: windows are spaced so that what they cost stays within the budget.

A simulated training loop drives ``WindowPlanner`` the way ``KinetoCapture`` does, on a clock of
its own: every step takes ``STEP_NS``; a window warms up one step, records four steps that each
take ``RECORD_EXTRA_NS`` longer, and stops and exports at the boundary after its last step
(``STOP_NS``, paid by the next step); its packing then takes ``PACK_NS`` of CPU. So each window
costs exactly ``WINDOW_COST_NS`` on the training thread and ``PACK_NS`` more in all, computed
here from those numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from collector.budget import (
    CPU,
    FIRST_WINDOW_BY_NS,
    FULL,
    GPU,
    FixedSchedule,
    WindowPlanner,
)

MS = 1_000_000
STEP_NS = 30 * MS
WARMUP, ACTIVE = 1, 4
RECORD_EXTRA_NS = 25 * MS
STOP_NS = 40 * MS
WINDOW_COST_NS = ACTIVE * RECORD_EXTRA_NS + STOP_NS
PACK_NS = 60 * MS


@dataclass
class Loop:
    """A training loop whose windows cost a known amount."""

    planner: WindowPlanner
    now_ns: int = 0
    state: str = "idle"
    left: int = 0
    extra_next_ns: int = 0
    recorded: list[int] = field(default_factory=list)
    opened_at: list[int] = field(default_factory=list)
    # (elapsed, cost) after each window's cost was measured
    checkpoints: list[tuple[int, int]] = field(default_factory=list)

    def run(self, steps: int, first_step: int = 0) -> None:
        self.planner.resume(self.now_ns)
        for step in range(first_step, first_step + steps):
            recording = self.state == "record"
            self.now_ns += STEP_NS + self.extra_next_ns + (RECORD_EXTRA_NS if recording else 0)
            self.extra_next_ns = 0
            before = self.planner.windows_total
            self.planner.step_ended(self.now_ns, step, recording)
            if self.planner.windows_total != before:
                self.checkpoints.append((self.planner.elapsed_ns, self.planner.cost_ns))
            if recording:
                self.recorded.append(step)
            self._advance()
            if self.state == "idle" and self.planner.should_open(self.now_ns):
                self.planner.opened(self.now_ns, self.planner.next_kind())
                self.opened_at.append(step + 1)  # the window's first step is the next one
                self.state, self.left = ("warmup", WARMUP) if WARMUP else ("record", ACTIVE)

    def _advance(self) -> None:
        if self.state == "idle":
            return
        self.left -= 1
        if self.left > 0:
            return
        if self.state == "warmup":
            self.state, self.left = "record", ACTIVE
        elif self.state == "record":
            self.planner.saved()
            self.planner.handed_over(PACK_NS)  # packed at once (see the test of a slow one)
            self.extra_next_ns += STOP_NS  # the stop and export, at this boundary
            self.state = "idle"  # the planner closes the window at the next boundary


def planner(budget_pct: float = 1.0, kinds=(GPU,), fixed=None, max_windows=0) -> WindowPlanner:
    return WindowPlanner(budget_pct, WARMUP, ACTIVE, 1, kinds, fixed, max_windows)


def test_it_measures_what_each_window_cost():
    loop = Loop(planner(budget_pct=10))
    loop.run(2_000)
    done = list(loop.planner._done)
    assert len(done) >= 3
    assert {w.cost_ns for w in done} == {WINDOW_COST_NS}
    assert loop.planner.cost_ns == (WINDOW_COST_NS + PACK_NS) * loop.planner.windows_total
    assert loop.planner.expected_cost_ns(GPU) == WINDOW_COST_NS + PACK_NS
    assert all(w.last_step - w.first_step == ACTIVE - 1 and w.steps == ACTIVE for w in done)


def test_it_spaces_windows_so_the_cumulative_cost_stays_within_the_budget():
    loop = Loop(planner(budget_pct=1.0))
    loop.run(20_000)  # 10 minutes of 30 ms steps
    p = loop.planner
    # Every window was opened only while its cost fitted: after each, cost <= 1 % of elapsed.
    assert loop.checkpoints
    assert all(cost <= 0.01 * elapsed for elapsed, cost in loop.checkpoints)
    assert p.cost_ns <= 0.01 * p.elapsed_ns
    # ... and the budget was used: a window of 140 ms and its packing of 60 ms whenever 1 % of
    # the time had paid for them.
    affordable = 0.01 * p.elapsed_ns / (WINDOW_COST_NS + PACK_NS)
    assert affordable - 2 <= p.windows_total <= affordable, (p.windows_total, affordable)
    report = p.report()
    assert report["schedule"] == "budget" and report["exceeded"] is False
    assert report["steps_captured"] == ACTIVE * p.windows_total == len(loop.recorded)
    assert report["overhead_pct"] == pytest.approx(100 * p.cost_ns / p.elapsed_ns, abs=1e-4)


def test_a_cheaper_budget_means_fewer_windows_and_a_dearer_one_more():
    counts = {}
    for budget in (0.5, 1.0, 4.0):
        loop = Loop(planner(budget_pct=budget))
        loop.run(20_000)
        counts[budget] = loop.planner.windows_total
        assert loop.planner.cost_ns <= budget / 100 * loop.planner.elapsed_ns
    assert counts[0.5] < counts[1.0] < counts[4.0]


def test_the_first_window_comes_within_the_first_minute_whatever_it_costs():
    # A budget so small that no window would ever fit: the first still comes, at 60 s.
    loop = Loop(planner(budget_pct=0.001))
    loop.run(3_000)
    assert len(loop.opened_at) == 1
    opened_ns = loop.opened_at[0] * STEP_NS
    assert FIRST_WINDOW_BY_NS <= opened_ns <= FIRST_WINDOW_BY_NS + 2 * STEP_NS
    assert loop.planner.report()["exceeded"] is True


def test_the_first_window_comes_early_when_the_budget_allows_it():
    # Its cost is not known yet: assumed to triple its 5 steps (300 ms more), planned at 1.25x:
    # it fits in 1 % of the time after 1,250 steps of 30 ms (37.5 s), and opens on the next.
    loop = Loop(planner(budget_pct=1.0))
    loop.run(1_500)
    assert loop.opened_at[0] == 1_250


def test_an_explicit_schedule_wins_over_the_budget():
    fixed = FixedSchedule(skip_first=1, wait=10, repeat=0)
    loop = Loop(planner(budget_pct=1.0, fixed=fixed))
    loop.run(100)
    # skip 1, then [warm-up 1, active 4, wait 10]: windows open every 15 steps from step 1.
    assert loop.opened_at == [1, 16, 31, 46, 61, 76, 91]
    report = loop.planner.report()
    assert report["schedule"] == "fixed"
    assert report["exceeded"] is True  # every 15 steps is far more than 1 %, and says so


def test_it_stops_after_the_windows_asked_for():
    loop = Loop(planner(budget_pct=10, max_windows=2))
    loop.run(3_000)
    assert loop.planner.windows_total == 2


def test_with_cpu_operators_on_a_gpu_full_windows_come_between_gpu_only_ones():
    loop = Loop(planner(budget_pct=20, kinds=(FULL, GPU)))
    loop.run(3_000)
    kinds = [w["kind"] for w in loop.planner.report()["windows"]]
    assert kinds[:9] == [FULL, GPU, GPU, GPU, FULL, GPU, GPU, GPU, FULL]


def test_profiling_sessions_of_one_job_share_the_budget():
    p = planner(budget_pct=1.0, kinds=(CPU,))
    loop = Loop(p)
    loop.run(1_400)
    loop.now_ns += 3_600 * 10**9  # an hour not profiling: neither elapsed nor a step
    loop.run(1_400, first_step=1_400)
    assert p.steps_run == 2_800
    assert p.elapsed_ns == 2_800 * STEP_NS + WINDOW_COST_NS * p.windows_total
    one_run = Loop(planner(budget_pct=1.0, kinds=(CPU,)))
    one_run.run(2_800)
    assert p.windows_total == one_run.planner.windows_total == 3


def test_a_report_carries_only_the_windows_finished_since_the_last():
    loop = Loop(planner(budget_pct=10))
    loop.run(500)
    first = loop.planner.report()
    loop.run(500, first_step=500)
    second = loop.planner.report()
    assert first["windows_total"] == len(first["windows"]) >= 1
    assert second["windows_total"] == first["windows_total"] + len(second["windows"])
    assert second["windows"][0]["first_step"] > first["windows"][-1]["last_step"]
    assert loop.planner.report()["windows"] == []


def test_the_collectors_threads_and_its_stop_count_as_cost():
    p = planner(budget_pct=1.0)
    loop = Loop(p)
    loop.run(1_000)
    windows_cost = p.cost_ns
    p.add_background(7 * MS)  # the sampler's, flusher's and uploader's CPU time
    stop_begins = loop.now_ns + 2 * MS
    p.pause(stop_begins + 45 * MS, stop_begins)  # a stop of 45 ms, 2 ms after the last step
    assert p.cost_ns == windows_cost + 7 * MS + 45 * MS
    # The windows' steps and stops took wall time, their packing (another process) did not.
    assert p.elapsed_ns == 1_000 * STEP_NS + WINDOW_COST_NS * p.windows_total + 47 * MS
    assert p.report()["background_ns"] == 7 * MS + PACK_NS * p.windows_total


def test_background_cost_delays_the_next_window():
    quiet, busy = Loop(planner()), Loop(planner())
    quiet.run(2_000)
    busy.planner.add_background(100 * MS)
    busy.run(2_000)
    assert busy.opened_at[0] > quiet.opened_at[0]


def test_no_window_opens_before_the_last_ones_packing_cost_is_known():
    p = planner(budget_pct=50)
    loop = Loop(p)
    loop.run(200)
    assert p.windows_total >= 2
    p.saved()  # a window stopped, its packing child still running (its cost unknown)
    opened = len(loop.opened_at)
    loop.run(200, first_step=200)
    assert len(loop.opened_at) == opened  # nothing opened while waiting
    p.handed_over(50 * MS)  # packed: the child's CPU time is known
    loop.run(200, first_step=400)
    assert len(loop.opened_at) > opened
