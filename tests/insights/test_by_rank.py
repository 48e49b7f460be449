"""The insights task reads a job's ranks one at a time (``insights_by_rank``): every figure and
verdict equals the analysis of all ranks at once, on two ranks of a real multi-rank trace and a
real H100 collector chunk, in both windows and with thresholds low enough to flag; and no rank
is still held when the next is read."""

import gc
import json
import weakref
from pathlib import Path

import pandas as pd
import pytest

from profiler_app import analysis
from profiler_app.analysis import RankTrace, analyze
from profiler_app.analysis.cluster import collective_waits_by_window
from profiler_app.analysis.events import ANALYSIS_COLUMNS
from profiler_app.analysis.framework import framework_from_events
from profiler_app.insights.pure.by_rank import (
    combine_facts,
    in_memory,
    insights_by_rank,
    read_facts,
)
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.recommendations import recommend
from profiler_app.insights.summaries import analyses_json, series_lines, tables_json_text
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.held import Made
from tests.traces.expected import DATA

SOURCES = [
    ("multirank_sampled/rank-0.json.gz", "kineto"),
    ("multirank_sampled/rank-1.json.gz", "kineto"),
    ("h100_collector/chunk-003.pcol", "collector"),
]
# Low enough that most recommendations flag a rank: the flagged paths are compared too.
FLAGGING = {
    "DataLoading_threshold_pct": 0.01,
    "Synchronization_threshold_pct": 0.01,
    "TensorCores_threshold_pct": 0.01,
    "HostToDeviceCopies_small_copies_per_step": 0.01,
    "Communication_min_comm_pct": 0.01,
    "Communication_overlap_pct": 100,
    "LaunchOverhead_min_launches": 1,
    "LaunchOverhead_short_kernel_pct": 0.01,
    "LaunchOverhead_gpu_idle_pct": 0.01,
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> list[Path]:
    from profiler_app.traces import ingest_trace

    root = Path(tmp_path_factory.mktemp("by_rank"))
    for rank, (trace, kind) in enumerate(SOURCES):
        ingest_trace(DATA / trace, kind, root / f"rank-{rank}")
    return [root / f"rank-{rank}" for rank in range(len(SOURCES))]


def read(stores: list[Path]) -> list[RankTrace]:
    return [
        RankTrace.from_store(rank, store, part_id=rank + 1) for rank, store in enumerate(stores)
    ]


@pytest.mark.parametrize("window", [COMPLETE_STEPS, WHOLE_TRACE])
@pytest.mark.parametrize("overrides", [None, FLAGGING], ids=["defaults", "flagging"])
def test_a_rank_at_a_time_gives_what_all_ranks_at_once_give(stores, window, overrides):
    params = params_from_overrides(overrides)
    traces = read(stores)
    at_once = analyze(traces, params, window=window)
    found = tuple(recommend(at_once, params))

    by_rank = insights_by_rank(iter(read(stores)), params, window)

    assert by_rank is not None
    assert analyses_json(by_rank.analyses) == analyses_json(at_once)
    assert by_rank.found == found
    if overrides:
        assert sum(r.triggered for r in found) >= 4, [r.rule for r in found if r.triggered]
    waits = collective_waits_by_window(traces)
    assert by_rank.collective_waits.keys() == waits.keys()
    for name, table in waits.items():
        assert by_rank.collective_waits[name].equals(table), name
    each = pd.concat(map(framework_from_events, traces), ignore_index=True)
    assert by_rank.framework.equals(each)


@pytest.mark.parametrize("join_every", [64, 2], ids=["ranks-joined-at-the-end", "two-at-a-time"])
def test_the_kept_json_text_of_the_ranks_tables_is_the_job_s_analyses(
    stores, join_every, monkeypatch
):
    """What a run keeps of a job's analyses (its tables joined as they are gathered and written
    one at a time, its series folded rank by rank)."""
    monkeypatch.setattr(analysis, "JOIN_EVERY", join_every)
    params = params_from_overrides(None)
    each = (
        read_facts(in_memory(t), params, [COMPLETE_STEPS])[COMPLETE_STEPS] for t in read(stores)
    )
    series = series_lines()
    combined = combine_facts(each, {name: lines.add for name, lines in series.items()})
    assert combined is not None
    tables, _ = combined
    assert "queue_length" not in tables.tables  # folded, not kept
    text = tables_json_text(tables, series)
    assert json.loads(text) == analyses_json(analyze(read(stores), params))
    assert tables.tables == {}  # every rank's copy handed over
    assert all(lines.points == {} for lines in series.values())


def test_a_rank_is_read_as_the_store_holds_it(stores):
    """``RankTrace.from_store`` reads a column at a time: the same frame as the whole table
    read through Arrow, to the dtype."""
    for rank, store in enumerate(stores):
        whole = TimelineReader(store).read_all(ANALYSIS_COLUMNS).to_pandas()
        pd.testing.assert_frame_equal(RankTrace.from_store(rank, store).events, whole)


def test_no_rank_is_held_while_the_next_is_read(stores):
    released = []

    def each_rank():
        previous = None
        for rank, store in enumerate(stores):
            if previous is not None:
                gc.collect()
                released.append(previous() is None)
            trace = RankTrace.from_store(rank, store, part_id=rank + 1)
            previous = weakref.ref(trace)
            yield trace
            del trace

    assert insights_by_rank(each_rank(), params_from_overrides(None)) is not None
    assert released == [True] * (len(stores) - 1)


@pytest.mark.parametrize("rank", range(len(SOURCES)), ids=[s for s, _ in SOURCES])
def test_a_rank_s_events_are_held_once_while_its_windows_are_read(stores, rank, monkeypatch):
    """While each window's analyses run, the trace they read is the only one of the rank still
    in memory: the trace as loaded and its captured events are let go once the complete-steps
    window is cut from them."""
    from profiler_app.insights.pure import by_rank

    real_captured, real_analyze = by_rank.captured_only, by_rank.analyze_covered
    made = Made()  # each trace of the rank made for the read
    others_held, analysed = [], []

    def load() -> RankTrace:
        return made.add(RankTrace.from_store(rank, stores[rank], part_id=rank + 1))

    def captured_only(trace):
        return made.add(real_captured(trace))

    def analyze_covered(covered, params):
        others_held.append(made.alive_besides(covered[0]))
        analysed.append(id(covered[0]))
        return real_analyze(covered, params)

    monkeypatch.setattr(by_rank, "captured_only", captured_only)
    monkeypatch.setattr(by_rank, "analyze_covered", analyze_covered)
    read_facts(load, params_from_overrides(None), [WHOLE_TRACE, COMPLETE_STEPS])
    assert others_held == [set(), set()]
    # A trace file's complete steps leave out its last step: a cut, a trace of its own. A
    # collector part recorded whole steps only: its complete steps are its captured events.
    cut = SOURCES[rank][1] == "kineto"
    assert (analysed[0] != analysed[1]) == cut


def test_a_job_with_no_rank_has_no_insights():
    assert insights_by_rank(iter([]), params_from_overrides(None)) is None
