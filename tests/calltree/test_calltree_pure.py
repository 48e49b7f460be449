"""The pure call tree over a shared trace's store, against a stack walk over its raw JSON."""

import numpy as np
import pytest

from profiler_app.calltree.pure import tree as calltree
from profiler_app.traces import ingest_trace
from profiler_app.traces.timeline_read import TimelineReader
from tests.calltree.raw import host_events, last_step_start, paths
from tests.traces.expected import DATA

TRACE = "gpu_training_rank0.pt.trace.json.gz"
MAIN, AUTOGRAD = 1102, 1262


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("calltree") / "store"
    ingest_trace(DATA / TRACE, "kineto", directory)
    return directory


def _track(store, tid: int) -> int:
    tracks = TimelineReader(store).tracks
    return int(tracks.loc[(tracks["tid"] == tid) & ~tracks["on_device"], "track"].iloc[0])


def _by_path(store, tree: calltree.Tree) -> dict[tuple[str, ...], tuple[int, int, int]]:
    strings = TimelineReader(store).strings
    out, path = {}, []
    for i in range(len(tree)):
        up = int(tree.parent[i])
        name = "(other)" if tree.name[i] == calltree.OTHER else strings[tree.name[i]]
        path.append((path[up] if up >= 0 else ()) + (name,))
        out[path[i]] = (int(tree.total_ns[i]), int(tree.self_ns[i]), int(tree.count[i]))
    return out


@pytest.mark.parametrize("tid", [MAIN, AUTOGRAD])
def test_it_matches_a_stack_walk_over_the_raw_json(store, tid):
    events = calltree.read_host_events(store, [_track(store, tid)])
    tree, frame = calltree.top_down(events)
    total, self_ns, count, _ = paths(host_events(TRACE, tid))
    assert _by_path(store, tree) == {p: (total[p], self_ns[p], count[p]) for p in total}
    assert len(np.unique(frame)) == len(tree)


def test_bottom_up_puts_each_names_self_time_at_the_top(store):
    events = calltree.read_host_events(store, [_track(store, MAIN)])
    tree = calltree.bottom_up(calltree.top_down(events)[0])
    roots = {p[0]: v[0] for p, v in _by_path(store, tree).items() if len(p) == 1}
    *_, by_name = paths(host_events(TRACE, MAIN))
    assert roots == {name: ns for name, ns in by_name.items() if ns > 0}
    # Each frame's callers split its time: a parent's total is its self plus its children's.
    has = tree.parent >= 0
    children = np.bincount(tree.parent[has], weights=tree.total_ns[has], minlength=len(tree))
    assert (tree.total_ns == tree.self_ns + children).all()


def test_complete_steps_leave_out_the_last_step(store):
    events = calltree.read_host_events(store, [_track(store, MAIN)], complete_steps=True)
    total, *_ = paths(host_events(TRACE, MAIN, before_ns=last_step_start(TRACE)))
    got = _by_path(store, calltree.top_down(events)[0])
    assert {p: v[0] for p, v in got.items()} == dict(total)
    assert not any(p[0] == "ProfilerStep#105" for p in got) and len(got) < len(
        _by_path(store, calltree.top_down(calltree.read_host_events(store, [1]))[0])
    )


def test_it_finds_a_frames_occurrences_both_ways(store):
    events = calltree.read_host_events(store, [_track(store, MAIN)])
    strings = TimelineReader(store).strings
    ids = {s: i for i, s in enumerate(strings)}
    raw = sorted(host_events(TRACE, MAIN), key=lambda e: (e[0], -e[1]))
    total, _, count, _ = paths(raw)
    path = max((p for p in total if len(p) == 3), key=lambda p: total[p])
    found = calltree.occurrences(events, [ids[n] for n in path], inverted=False)
    assert len(found) == count[path]
    assert int(events.dur[found].sum()) == total[path]
    assert (np.diff(events.start[found]) >= 0).all()
    leaf = calltree.occurrences(events, [ids[path[-1]], ids[path[-2]]], inverted=True)
    assert all(events.name[events.parent[i]] == ids[path[-2]] for i in leaf)


def test_pruning_merges_small_frames_into_other_and_caps_the_frames(store):
    events = calltree.read_host_events(store, [_track(store, MAIN)])
    tree, _ = calltree.top_down(events)
    pruned = calltree.prune(tree, 1_000_000, 20000)
    roots = pruned.parent < 0
    assert pruned.total_ns[roots].sum() == tree.total_ns[tree.parent < 0].sum()
    assert (pruned.total_ns[pruned.name != calltree.OTHER] >= 1_000_000).all()
    assert calltree.OTHER in pruned.name
    assert len(calltree.prune(tree, 0, 50)) <= 50 + 50


def test_merged_trees_sum_frames_of_one_path_and_keep_the_rest(store):
    """The trace's main thread split at its third step, as a collector job's chunks split a
    process: merged, the halves' trees are the whole thread's tree."""
    events = calltree.read_host_events(store, [_track(store, MAIN)])
    events, names = calltree.steps_as_one(events, TimelineReader(store).strings)
    whole, _ = calltree.top_down(events)
    third_step = np.sort(events.start[events.is_step])[2]
    halves = []
    for keep in (events.start < third_step, events.start >= third_step):
        # A kept event's parent is kept too (events nest inside their steps).
        index = np.flatnonzero(keep)
        parent = np.where(
            events.parent[index] >= 0, np.searchsorted(index, events.parent[index]), -1
        )
        half = calltree.Events(
            events.row[index], events.track[index], events.name[index], events.start[index],
            events.dur[index], parent, events.self_ns[index], events.is_step[index],
        )  # fmt: skip
        halves.append(calltree.top_down(half)[0])
    merged = calltree.merge(halves)

    def by_path(tree: calltree.Tree) -> dict:
        out, path = {}, []
        for i in range(len(tree)):
            up = int(tree.parent[i])
            path.append((path[up] if up >= 0 else ()) + (names[tree.name[i]],))
            out[path[i]] = (int(tree.total_ns[i]), int(tree.self_ns[i]), int(tree.count[i]))
        return out

    assert by_path(merged) == by_path(whole)
    assert len(by_path(halves[0])) < len(by_path(whole))
    steps = int(events.is_step.sum())
    assert by_path(merged)[("ProfilerStep*",)][2] == steps
    assert by_path(halves[0])[("ProfilerStep*",)][2] == 2


def test_steps_are_one_frame_and_other_names_are_left_alone():
    named = ["ProfilerStep#4", "ProfilerStep#5", "step_12", "aten::mm", "step_13"]
    n = len(named)
    events = calltree.Events(
        row=np.arange(n), track=np.zeros(n, np.int64), name=np.arange(n),
        start=np.arange(n) * 10, dur=np.full(n, 5), parent=np.full(n, -1),
        self_ns=np.full(n, 5), is_step=np.array([True, True, True, False, False]),
    )  # fmt: skip
    merged, names = calltree.steps_as_one(events, named)
    assert names == [*named, "ProfilerStep*", "step_*"]
    # "step_13" is not a step here (not annotated as one): it keeps its own name.
    assert [names[i] for i in merged.name] == [
        "ProfilerStep*",
        "ProfilerStep*",
        "step_*",
        "aten::mm",
        "step_13",
    ]
