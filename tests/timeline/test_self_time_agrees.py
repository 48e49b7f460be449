"""One self time: the operator table, the call tree, range totals and the framework metrics give
the same self time for each operator, in both windows, equal to a stack walk over the raw JSON;
and no event of any shared trace has a negative self time."""

from __future__ import annotations

from collections import defaultdict

import pytest

from profiler_app.analysis.events import RankTrace
from profiler_app.analysis.framework import framework_from_events
from profiler_app.analysis.operators import operator_table
from profiler_app.calltree.pure import tree as calltree
from profiler_app.timeline.pure.ranges import range_totals
from profiler_app.traces import TimelineReader
from tests.timeline.test_viewport_totals import lane_keys
from tests.traces.expected import LEGACY_CATEGORIES, expected, ns, raw_trace

TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "amd_mi250_small.json.gz",
    "cpu_only_rank34.pt.trace.json.gz",
    "h100_cnn_kineto.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
    "cpu_memory_profile.json.gz",
]
# What a thread records (instants nest nothing and take no time).
THREAD_CATEGORIES = {
    "cpu_op",
    "user_annotation",
    "python_function",
    "cuda_runtime",
    "cuda_driver",
}


def raw_self_ns(trace: str, before_ns: int | None = None) -> dict[str, int]:
    """Per CPU operator name: the summed self time of its calls (those starting before
    ``before_ns``), by a stack walk per thread: duration less the part of it the direct
    children cover."""
    events = raw_trace(trace)["traceEvents"]
    threads = defaultdict(list)
    for e in events:
        category = LEGACY_CATEGORIES.get(e.get("cat", ""), e.get("cat", ""))
        if e.get("ph") == "X" and category in THREAD_CATEGORIES:
            start = ns(e["ts"])
            operator = category == "cpu_op" and not e["name"].startswith("ProfilerStep#")
            threads[(e["pid"], e["tid"])].append(
                [start, start + ns(e["dur"]), e["name"], operator, 0]
            )
    out: dict[str, int] = defaultdict(int)
    for thread in threads.values():
        thread.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        stack: list[list] = []
        for event in thread:
            while stack and stack[-1][1] <= event[0]:
                stack.pop()
            if stack:
                parent = stack[-1]
                parent[4] += max(min(event[1], parent[1]) - event[0], 0)
            if event[1] > event[0]:
                stack.append(event)
        for start, end, name, operator, children in thread:
            if operator and (before_ns is None or start < before_ns):
                out[name] += max(end - start - children, 0)
    return dict(out)


def operator_self(trace: RankTrace) -> dict[str, int]:
    table = operator_table([trace])
    names = {str(trace.names[i]) for i in trace.events["name"][trace.events["kind"] == 0]}
    return {r.name: int(r.self_ns) for r in table.itertuples() if r.name in names}


def calltree_self(store, names: set[str], complete_steps: bool = False) -> dict[str, int]:
    reader = TimelineReader(store)
    events = calltree.read_host_events(store, reader.tracks["track"].tolist(), complete_steps)
    out: dict[str, int] = defaultdict(int)
    for name, self_ns in zip(events.name.tolist(), events.self_ns.tolist(), strict=True):
        if reader.strings[name] in names:
            out[reader.strings[name]] += self_ns
    return dict(out)


def framework_self(trace: RankTrace) -> dict[str, int]:
    frame = framework_from_events(trace)
    cpu = frame[frame["phase"] == "cpu"]
    return {str(n): int(v) for n, v in zip(cpu["name"], cpu.iloc[:, -1], strict=True)}


@pytest.mark.parametrize("trace", TRACES)
def test_it_gives_one_self_time_for_an_operator_in_the_whole_trace(trace, store_of, timeline_of):
    store = store_of(trace)
    rank = RankTrace.from_store(0, store)
    want = raw_self_ns(trace)
    assert (rank.events["self_ns"] >= 0).all()
    assert operator_self(rank) == want
    assert calltree_self(store, set(want)) == want
    assert {n: v for n, v in framework_self(rank).items() if v} == {
        n: v for n, v in want.items() if v
    }
    timeline = timeline_of(trace)
    lanes = [lane for lane, key in lane_keys(timeline).items() if key[0] == "thread"]
    rows = range_totals(timeline, timeline.start_ns, timeline.end_ns + 1, lanes)
    by_name: dict[str, int] = defaultdict(int)
    for row in rows:
        if row.name in want:
            by_name[row.name] += row.self_ns or 0
    assert dict(by_name) == want


@pytest.mark.parametrize("trace", TRACES)
def test_it_gives_one_self_time_for_an_operator_in_the_complete_steps(trace, store_of):
    store = store_of(trace)
    whole = RankTrace.from_store(0, store)
    kept = whole.complete_steps()
    steps = whole.step_events
    cut = int(steps["start_ns"].max()) if len(steps) >= 2 else None
    want = operator_self(kept)
    before = None if cut is None else cut - expected(trace).offset_ns  # raw JSON times
    assert want == raw_self_ns(trace, before)
    assert calltree_self(store, set(want), complete_steps=True) == want
    assert {n: v for n, v in framework_self(kept).items() if v} == {
        n: v for n, v in want.items() if v
    }
