"""Each part's analyses are kept by the worker that parsed it (``profiles.part_analyses``) and
the run history reads them instead of the stores: kept equal to what the analysis computes
from the part's store, in both windows; the history's figures equal those read from the
stores as it read them before; a part without kept analyses has them computed by the task that
judges it (a web request never writes them). On real traces."""

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profiler_app.analysis import RankTrace, captured_only
from profiler_app.analysis.idle import HOST_WAIT, idle_intervals
from profiler_app.analysis.operators import operator_table
from profiler_app.analysis.part_figures import part_figures, store_part_figures
from profiler_app.core import storage
from profiler_app.history import logic
from profiler_app.history.pure.regression import Thresholds
from profiler_app.profiles import part_analyses
from profiler_app.profiles.models import PartSummary
from profiler_app.traces import ingest_trace
from profiler_app.traces.store_layout import EVENTS_FILE
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.cluster.raw import load
from tests.h200 import spool_chunks, unpack
from tests.held import Made
from tests.history.traces import NCCL
from tests.timeline.jobs import TWO_RANKS, parse_job
from tests.traces.expected import DATA
from tracefmt.kinds import EventKind

PARTS = [*TWO_RANKS, ("algo-3", 2, NCCL)]


def _store_trace(summary: PartSummary) -> RankTrace:
    folder = storage.store_files(summary.store_path).folder()
    return RankTrace.from_store(summary.rank, folder, summary.part_id)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("name", ignore_index=True)


def _figures_as_before(trace: RankTrace, window: str) -> tuple[pd.DataFrame, int]:
    """One part's operators and host wait from all its events, as the history computed them."""
    trace = captured_only(trace)
    if window == COMPLETE_STEPS:
        trace = trace.complete_steps()
    gaps = idle_intervals(trace)
    host_wait = int(gaps.loc[gaps["category"] == HOST_WAIT, "idle_ns"].sum())
    no_steps = trace.events["kind"].to_numpy() != int(EventKind.STEP)
    trace = replace(trace, events=trace.events[no_steps])
    return operator_table([trace])[["name", "count", "self_ns"]].reset_index(drop=True), host_wait


def _read_as_before(job, window: str) -> tuple[pd.DataFrame, int]:
    """The history's operators and host wait read from every store, as it read them before
    they were kept: the oracle the kept ones must equal."""
    frames, host_wait = [], 0
    for summary in PartSummary.objects.filter(job=job).order_by("rank", "part_id"):
        operators, waited = _figures_as_before(_store_trace(summary), window)
        frames.append(operators)
        host_wait += waited
    operators = pd.concat(frames, ignore_index=True).groupby("name", as_index=False).sum()
    return operators, host_wait


@pytest.fixture(scope="module")
def odd_stores(tmp_path_factory) -> list[Path]:
    """Parts the history's three traces are not: H200 collector chunks (steps outside the
    ranges Kineto recorded), a trace of allocations, a PyTorch 1.8 trace."""
    root = tmp_path_factory.mktemp("odd")
    sources = [(path, "collector") for path in spool_chunks(unpack(root / "h200"))[:2]]
    sources += [(DATA / "cpu_memory_profile.json.gz", "kineto")]
    sources += [(DATA / "resnet50_pt18_workers4.pt.trace.json.gz", "kineto")]
    sources += [(DATA / "gpu_training_rank0.pt.trace.json.gz", "kineto")]
    stores = []
    for number, (path, kind) in enumerate(sources):
        ingest_trace(path, kind, root / f"part-{number}")
        stores.append(root / f"part-{number}")
    _uncapture_one_host_call(stores[-1])
    return stores


def _uncapture_one_host_call(store: Path) -> None:
    """Marks one host call outside the recorded ranges, as if Kineto had missed it: every step
    and GPU op is still captured, so only that call tells ``captured_only`` to cut the part."""
    events = pq.read_table(store / EVENTS_FILE)
    kind = events.column("kind").to_numpy()
    row = int(np.flatnonzero(kind == int(EventKind.CPU_OP))[0])
    captured = events.column("captured").to_numpy().copy()
    captured[row] = False
    at = events.schema.get_field_index("captured")
    pq.write_table(events.set_column(at, "captured", pa.array(captured)), store / EVENTS_FILE)


def test_a_store_s_figures_read_from_the_rows_they_need_are_those_of_all_its_events(odd_stores):
    """``store_part_figures`` reads the GPU side and the operators apart: the same figures."""
    cut = [s for s in odd_stores if not TimelineReader(s).column("captured").all()]
    assert len(cut) == 3  # the collector chunks and the call: ``captured_only`` cuts them
    for store in odd_stores:
        found = store_part_figures(store, 0, 1, [COMPLETE_STEPS, WHOLE_TRACE])
        for window in (COMPLETE_STEPS, WHOLE_TRACE):
            operators, host_wait = _figures_as_before(RankTrace.from_store(0, store, 1), window)
            assert found[window].host_wait_ns == host_wait, (store, window)
            # The same rows, to the dtype (operators of equal self time may come in either order).
            pd.testing.assert_frame_equal(
                _sorted(found[window].operators), _sorted(operators), check_exact=True
            )
    # Something to compare: a chunk whose GPU waited on its host.
    assert store_part_figures(cut[0], 0, 1, [WHOLE_TRACE])[WHOLE_TRACE].host_wait_ns > 0


def test_each_window_s_host_wait_holds_one_read_of_the_part(odd_stores, monkeypatch):
    """While a window's idle intervals are found, the rows read for it are the only ones held:
    the complete steps' cut lets go of the rows it was cut from, and the whole trace's window
    reads its own (held beside the cut, they made the part's analyses the parse's highest
    step)."""
    from profiler_app.analysis import part_figures as module

    real_read, real_captured, real_idle = (
        RankTrace.from_reader,
        module.captured_only,
        module.idle_intervals,
    )
    made = Made()  # every trace read, and every captured cut of one
    held: list[set[int]] = []  # per window: those still alive besides the one analysed

    def from_reader(cls, *args, **kwargs):
        return made.add(real_read(*args, **kwargs))

    def captured_only(trace):
        return made.add(real_captured(trace))

    def idle_intervals(trace):
        held.append(made.alive_besides(trace))
        return real_idle(trace)

    monkeypatch.setattr(RankTrace, "from_reader", classmethod(from_reader))
    monkeypatch.setattr(module, "captured_only", captured_only)
    monkeypatch.setattr(module, "idle_intervals", idle_intervals)
    for store in odd_stores:
        held.clear()
        store_part_figures(store, 0, 1, [COMPLETE_STEPS, WHOLE_TRACE])
        assert held == [set(), set()], store


@pytest.mark.django_db
def test_the_worker_keeps_each_part_s_analyses_as_computed_from_its_store(user):
    job = parse_job(user, "kept-1", PARTS)
    summaries = list(PartSummary.objects.filter(job=job).order_by("rank"))
    assert len(summaries) == 3
    for summary in summaries:
        kept = part_analyses.kept(summary)  # kept by the parse, nothing computed here
        assert kept is not None, summary.part_id
        trace = _store_trace(summary)
        for window in (COMPLETE_STEPS, WHOLE_TRACE):
            expected = part_figures(trace, window)
            assert kept[window].host_wait_ns == expected.host_wait_ns
            pd.testing.assert_frame_equal(
                _sorted(kept[window].operators), _sorted(expected.operators), check_dtype=False
            )
    # Against the raw JSON: the NCCL trace's operators are called as often as it records them.
    nccl = part_analyses.kept(summaries[2])[WHOLE_TRACE].operators.set_index("name")["count"]
    raw = Counter(
        e["name"]
        for e in load(NCCL)["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"].startswith("aten::")
    )
    assert {n: int(c) for n, c in nccl.items() if n.startswith("aten::")} == dict(raw)
    assert raw["aten::mm"] > 0


@pytest.mark.django_db
def test_the_history_s_figures_are_those_read_from_the_stores(user):
    job = parse_job(user, "kept-2", PARTS)
    for window in (COMPLETE_STEPS, WHOLE_TRACE):
        figures = logic.run_figures(job, window)
        operators, host_wait = _read_as_before(job, window)
        assert figures.host_wait_ns == host_wait
        pd.testing.assert_frame_equal(
            _sorted(figures.operators), _sorted(operators), check_dtype=False
        )
        assert host_wait > 0 and len(operators) > 50
        summary = logic.summary_figures(job, window, figures)
        top = operators.set_index("name")["self_ns"].astype(np.int64).nlargest(logic.TOP_ROWS)
        per = max(figures.rank_steps, 1)
        assert summary["top_operators"] == [
            {"name": n, "ns_per_step": round(v / per)} for n, v in top.items()
        ]


@pytest.mark.django_db
def test_a_part_without_kept_analyses_has_them_kept_by_the_task_not_the_web(user, monkeypatch):
    job = parse_job(user, "kept-3", PARTS[:1])
    baseline = parse_job(user, "kept-3-base", PARTS[:1])
    logic.assign(baseline, "kept")
    logic.assign(job, "kept")
    storage.remove_kept(job.pk)  # as a part parsed before they were kept
    [summary] = PartSummary.objects.filter(job=job)
    assert part_analyses.kept(summary) is None

    computed: list[int] = []
    real = part_analyses.compute

    def recorded(store_dir, rank, part_id):
        computed.append(part_id)
        return real(store_dir, rank, part_id)

    monkeypatch.setattr(part_analyses, "compute", recorded)
    logic.verdict_of(job, baseline, Thresholds())  # what a web request reads
    assert computed == [summary.part_id] and part_analyses.kept(summary) is None
    logic.judge_job(job.pk)  # the task
    assert computed == [summary.part_id] * 2
    assert part_analyses.kept(summary) is not None
    logic.judge_job(job.pk)  # kept now: no store is read
    assert computed == [summary.part_id] * 2
