"""The profiler in this process: annotations, steps and Kineto windows, read back from the spool."""

import logging
import os
import threading

import numpy as np
import pytest
import torch

import collector
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

from .helpers import (
    WINDOWS_AT_2_3_AND_8_9,
    annotation_counts,
    ingested_chunks,
    spool_profiler,
    spooled_chunks,
    step_names,
)

COLUMNS = ["kind", "name", "start_ns", "dur_ns"]


@pytest.fixture
def profiler(tmp_path, monkeypatch):
    for name in ("PROFILER_SERVER_URL", "PROFILER_JOB_NAME", "PROFILER_CPU_OPERATORS"):
        monkeypatch.delenv(name, raising=False)
    prof = spool_profiler(
        tmp_path,
        job_name="unit",
        perf_counters=False,
        sampling_interval_ms=20,
    )
    yield prof
    prof.stop_profiling()


def test_it_records_annotations_as_context_managers_decorators_and_begin_end(profiler, tmp_path):
    @collector.annotate("Loss")
    def loss(x):
        return x * 2

    profiler.start_profiling()
    for i in range(3):
        with collector.annotate(f"step_{i}"):
            with collector.annotate("Forward"):
                pass
            loss(1)
            profiler.annotation_begin("Backward")
            profiler.annotation_end("Backward")
    profiler.stop_profiling()

    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == ["step_0", "step_1", "step_2"]
    assert annotation_counts(chunks) == {"Forward": 3, "Loss": 3, "Backward": 3}
    events = chunks[0].events
    assert set(events["ev_tid"].tolist()) == {threading.get_native_id()}
    assert (events["ev_dur_ns"] >= 0).all()
    steps = events["ev_kind"] == EventKind.STEP
    inner = events["ev_kind"] == EventKind.USER_ANNOTATION
    # Every Forward/Loss/Backward lies inside a step.
    for start in events["ev_start_ns"][inner]:
        assert (
            (events["ev_start_ns"][steps] <= start)
            & (start <= events["ev_start_ns"][steps] + events["ev_dur_ns"][steps])
        ).any()
    assert chunks[-1].meta["final"] is True
    assert [c.meta["seq"] for c in chunks] == list(range(len(chunks)))
    # The node's CPUs, for Info's "CPUs per node".
    assert {c.meta["cpu_count"] for c in chunks} == {os.cpu_count()}


def test_the_step_api_records_consecutive_steps(profiler, tmp_path):
    profiler.start_profiling()
    for _ in range(4):
        torch.ones(8).sum()
        profiler.step()
    profiler.stop_profiling()
    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == ["step_0", "step_1", "step_2", "step_3"]
    ev = chunks[0].events
    steps = ev["ev_kind"] == EventKind.STEP
    ends = ev["ev_start_ns"][steps] + ev["ev_dur_ns"][steps]
    assert np.array_equal(ends[:-1], ev["ev_start_ns"][steps][1:])


def test_annotations_do_nothing_outside_profiling(profiler, tmp_path, caplog):
    with collector.annotate("Forward"):
        pass
    collector.annotation_begin("Forward")
    collector.annotation_end("Forward")
    assert not list(tmp_path.rglob("*.pcol"))


def test_an_unmatched_annotation_end_is_reported_once(profiler, caplog):
    profiler.start_profiling()
    with caplog.at_level(logging.WARNING, logger="collector"):
        profiler.annotation_end("Optimizer")
        profiler.annotation_end("Optimizer")
    assert [r.getMessage() for r in caplog.records].count(
        "profiler: annotation_end('Optimizer') without annotation_begin; ignored"
    ) == 1


def test_a_full_buffer_is_flushed_early(tmp_path):
    prof = spool_profiler(
        tmp_path,
        job_name="bounded",
        max_buffered_events=50,
        flush_interval_s=60,
    )
    prof.start_profiling()
    for i in range(400):
        with collector.annotate(f"step_{i}"):
            pass
        if i % 50 == 49:
            threading.Event().wait(0.05)  # let the flusher thread run
    prof.stop_profiling()
    chunks = spooled_chunks(tmp_path)
    assert len(chunks) > 3
    assert step_names(chunks) == [f"step_{i}" for i in range(400)]


def test_kineto_windows_follow_the_schedule_without_duplicating_annotations(tmp_path):
    prof = spool_profiler(
        tmp_path,
        job_name="kineto",
        cpu_operators=True,
        **WINDOWS_AT_2_3_AND_8_9,
    )
    prof.start_profiling()
    for i in range(12):
        with collector.annotate(f"step_{i}"), collector.annotate("Forward"):
            torch.nn.functional.relu(torch.randn(16, 16)).sum()
    prof.stop_profiling()

    chunks = spooled_chunks(tmp_path)
    assert chunks[0].meta["sources"]["kineto"] == "ok"
    assert annotation_counts(chunks) == {"Forward": 12}
    # Steps 2-3 and 8-9 were recorded. The server reads the windows; what it stores has each
    # annotation once (the collector's own).
    recorded = set()
    forward = 0
    for path, result, reader in ingested_chunks(tmp_path):
        table = reader.read_all(COLUMNS)
        ev = {c: table.column(c).to_numpy() for c in COLUMNS}
        names = np.asarray(reader.strings, dtype=object)[ev["name"]]
        steps = ev["kind"] == EventKind.STEP
        ops = ev["start_ns"][ev["kind"] == EventKind.CPU_OP]
        for name, start, dur in zip(
            names[steps], ev["start_ns"][steps], ev["dur_ns"][steps], strict=True
        ):
            if ((ops >= start) & (ops < start + dur)).any():
                recorded.add(name)
        assert not any(n.startswith("ProfilerStep#") for n in names)
        assert "aten::relu" in names or not (ev["kind"] == EventKind.CPU_OP).any()
        forward += names[ev["kind"] == EventKind.USER_ANNOTATION].tolist().count("Forward")
        assert len(result.metadata["captured_windows_ns"]) == len(read_chunk(path).kineto)
    assert recorded == {"step_2", "step_3", "step_8", "step_9"}
    assert forward == 12


# 200,000: the default; 4: the buffer is full when the chunk is cut (steps 0-3 are four rows),
# as on a loaded machine, where a window can take 100,000 steps to pay for. The window's own
# rows (steps 2-4) stay under it: past it they would be cut from it, by design.
@pytest.mark.parametrize("max_buffered_events", [200_000, 4])
def test_a_chunk_cut_inside_a_kineto_window_leaves_its_steps_to_the_windows_chunk(
    tmp_path, max_buffered_events
):
    prof = spool_profiler(
        tmp_path,
        job_name="split",
        cpu_operators=True,
        kineto_skip_first_steps=1,
        kineto_warmup_steps=1,
        kineto_active_steps=3,
        kineto_wait_steps=10,
        flush_interval_s=3600,
        max_buffered_events=max_buffered_events,
    )
    prof.start_profiling()
    for i in range(8):
        with collector.annotate(f"step_{i}"):
            torch.nn.functional.relu(torch.randn(16, 16)).sum()
        if i == 3:
            prof.flush()  # inside the window of steps 2-4
    prof.stop_profiling()

    chunks = spooled_chunks(tmp_path)
    [with_window] = [c for c in chunks if c.kineto]
    assert set(step_names([with_window])) >= {"step_2", "step_3", "step_4"}
    assert step_names(chunks) == [f"step_{i}" for i in range(8)]


def test_windows_spaced_by_the_budget_report_the_steps_kineto_recorded(tmp_path):
    """No schedule given: the budget opens the windows, and each chunk's capture report names
    the steps its windows recorded, as the server reads them from the windows themselves."""
    prof = spool_profiler(
        tmp_path,
        job_name="budget",
        cpu_operators=True,
        overhead_budget_pct=80,  # generous, so that a short loop gets several windows
        flush_interval_s=3600,
    )
    prof.start_profiling()
    steps = 0
    # Until the budget has allowed three windows (each paid for by the steps before it: on a
    # loaded machine a window and its packing cost more, and take more steps to pay for).
    while prof._planner is not None and prof._planner.windows_total < 3 and steps < 2_000_000:
        with collector.annotate(f"step_{steps}"):
            torch.nn.functional.relu(torch.randn(64, 64)).sum()
        steps += 1
    prof.stop_profiling()

    chunks = spooled_chunks(tmp_path)
    reports = [c.meta["capture"] for c in chunks]
    last = reports[-1]
    windows = [w for r in reports for w in r["windows"]]
    assert last["schedule"] == "budget" and last["budget_pct"] == 80
    assert last["steps_run"] == steps
    assert last["windows_total"] == len(windows) == 3
    assert {w["kind"] for w in windows} == {"cpu"}
    reported = {s for w in windows for s in range(w["first_step"], w["last_step"] + 1)}
    assert last["steps_captured"] == len(reported) == 4 * len(windows)
    recorded = set()
    for _, _, reader in ingested_chunks(tmp_path):
        table = reader.read_all([*COLUMNS, "step", "captured"])
        kind, step = table.column("kind").to_numpy(), table.column("step").to_numpy()
        captured = table.column("captured").to_numpy()
        recorded |= set(step[(kind == EventKind.STEP) & captured].tolist())
        ops = (kind == EventKind.CPU_OP) & (step >= 0)
        assert set(step[ops].tolist()) <= reported
    assert recorded == reported
