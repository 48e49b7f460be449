"""The collector's capture report as the server keeps it (``traces.capture``): a chunk's report
is kept only in the collector's shape, and a process's windows are listed up to a limit."""

from __future__ import annotations

import pytest

from profiler_app.traces.capture import MAX_WINDOWS, PartCapture, capture_report, job_capture

REPORT = {
    "schedule": "fixed",
    "budget_pct": 1,
    "elapsed_ns": 1_000,
    "cost_ns": 5,
    "background_ns": 2,
    "overhead_pct": 0.5,
    "steps_run": 100,
    "steps_captured": 8,
    "windows_total": 2,
    "exceeded": False,
    "windows": [{"first_step": 3, "last_step": 6, "kind": "gpu", "cost_ns": 5, "extra": 1}],
}


def test_it_keeps_the_collectors_keys():
    kept = capture_report({**REPORT, "future_key": "x"})
    assert kept == {
        **REPORT,
        "budget_pct": 1.0,
        "windows": [{"first_step": 3, "last_step": 6, "kind": "gpu", "cost_ns": 5}],
    }
    assert capture_report(None) is None
    # A collector from before background_ns: its cost had no part named background.
    older = {k: v for k, v in REPORT.items() if k != "background_ns"}
    assert capture_report(older)["background_ns"] == 0


@pytest.mark.parametrize(
    "change",
    [
        {"schedule": "weekly"},
        {"budget_pct": "1"},
        {"budget_pct": -1.0},
        {"overhead_pct": float("nan")},
        {"cost_ns": -1},
        {"background_ns": 1.5},
        {"steps_run": True},
        {"exceeded": 0},
        {"windows": None},
        {"windows": [{"first_step": 6, "last_step": 3, "kind": "gpu", "cost_ns": 5}]},
        {"windows": [{"first_step": 3, "last_step": 6, "kind": "tpu", "cost_ns": 5}]},
        {"windows": ["3-6"]},
    ],
)
def test_it_drops_a_report_of_another_shape(change):
    assert capture_report({**REPORT, **change}) is None


def windows(first_steps: range) -> list[dict]:
    return [{"first_step": s, "last_step": s, "kind": "full", "cost_ns": 1} for s in first_steps]


def test_it_lists_a_process_s_last_windows_and_counts_them_all():
    # Chunk 0 (windows 0–299) arrives after chunk 1 (windows 300–599), and twice.
    first = {**REPORT, "windows": windows(range(300)), "windows_total": 300}
    second = {**REPORT, "windows": windows(range(300, 600)), "windows_total": 600}
    parts = [
        PartCapture("algo-1", 0, 7, 1, second),
        PartCapture("algo-1", 0, 7, 0, first),
        PartCapture("algo-1", 0, 7, 0, first),
    ]
    [process] = job_capture(parts)["processes"]
    assert process["windows_count"] == 600
    assert [w["first_step"] for w in process["windows"]] == list(range(100, 600))
    assert len(process["windows"]) == MAX_WINDOWS
    assert process["windows_total"] == 600  # from chunk 1, the latest


def test_it_reports_nothing_for_no_reports():
    found = job_capture([])
    assert found["reported"] is False and found["processes"] == []
    assert found["overhead_pct"] is None and found["windows_by_kind"] is None
