"""Range totals against a brute force over the raw trace's JSON: every event overlapping the
range, its duration clipped to the range, per lane and name; self time from a stack walk."""

import json
import shutil
from collections import Counter, defaultdict
from functools import cache

import numpy as np
import pytest

from profiler_app.timeline.pure import index_build
from profiler_app.timeline.pure.index import PartIndex
from profiler_app.timeline.pure.index_build import build_index
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.ranges import range_events, range_totals
from profiler_app.timeline.pure.tree import Part
from profiler_app.traces import ingest_trace
from profiler_app.traces.store_files import StoreFiles
from tests.timeline.raw import raw_lane_events
from tests.timeline.test_viewport_totals import lane_keys
from tests.traces.expected import DATA
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]


raw_events = cache(raw_lane_events)


def brute_force(trace: str, key: tuple, start_ns: int, end_ns: int) -> dict[str, dict]:
    """Rows of one lane; self time nests the lane's thread whole (a thread that launches GPU
    work has its annotations and runtime calls on another lane: they are still the children
    and parents of its operators)."""
    thread = {key, ("host", *key[1:])} if key[0] == "thread" else {key}
    events = [(s, d, n, k == key) for k, n, s, d in raw_events(trace) if k in thread]
    out: dict[str, dict] = defaultdict(lambda: {"count": 0, "total": 0, "self": 0, "clips": []})
    clipped = {}
    for i, (s, d, n, shown) in enumerate(events):
        if s < end_ns and (s + d > start_ns or (d == 0 and s >= start_ns)):
            c = min(s + d, end_ns) - max(s, start_ns)
            clipped[i] = c
            if not shown:
                continue
            row = out[n]
            row["count"] += 1
            row["total"] += c
            row["self"] += c
            row["clips"].append(c)
    # Direct parent of each event: the innermost open one (events by start, longest first).
    stack: list[int] = []
    for i in sorted(range(len(events)), key=lambda i: (events[i][0], -events[i][1])):
        s, d, _, _ = events[i]
        while stack and events[stack[-1]][0] + events[stack[-1]][1] <= s:
            stack.pop()
        if stack and i in clipped and stack[-1] in clipped and events[stack[-1]][3]:
            # Only the part of a sloppy child inside its parent is the parent's.
            ps, pd, pn, _ = events[stack[-1]]
            inner = min(s + d, ps + pd, end_ns) - max(s, start_ns)
            out[pn]["self"] -= max(inner, 0)
        if d > 0:  # an instant holds nothing
            stack.append(i)
    return out


@pytest.mark.parametrize("trace", TRACES)
def test_it_totals_a_range_like_the_raw_trace(trace, timeline_of):
    timeline = timeline_of(trace)
    span = timeline.end_ns - timeline.start_ns
    start, end = timeline.start_ns + span // 3, timeline.start_ns + 2 * span // 3
    assert_like_raw(timeline, trace, start, end)


@pytest.mark.parametrize("trace", TRACES)
@pytest.mark.parametrize("super_blocks", [1 << 20, 4], ids=["blocks", "super-blocks"])
def test_whole_blocks_add_up_like_their_events(trace, super_blocks, store_of, monkeypatch):
    """Blocks of 32 events: most of a wide range comes from the blocks' stored sums, the rest
    (blocks at its edges, a block with an event past its end) event by event; with
    super-blocks of 4 blocks, most from theirs, then the blocks', then events."""
    monkeypatch.setattr(index_build, "BLOCK_EVENTS", 32)
    monkeypatch.setattr(index_build, "SUPER_BLOCKS", super_blocks)
    store = store_of(trace)
    folder = "index-with-small-blocks"
    build_index(store, store / folder)
    try:
        index = PartIndex(StoreFiles(store), folder)
        assert index.block_events == 32 and len(index.blk_end) > 100
        assert len(index.sup_end) == -(-len(index.blk_end) // super_blocks)
        if super_blocks == 4:  # the super-blocks' sums are their blocks'
            assert index.sup_count.sum() == index.blk_count.sum() == index.n_events
            assert index.sup_total.sum() == index.blk_total.sum()
            assert len(index.sup_name) < len(index.blk_name)
        timeline = JobTimeline([Part(1, "algo-1", 0, None, index)])
        span = timeline.end_ns - timeline.start_ns
        for lo, hi in [(0, 1), (0.1, 0.9), (0.3, 0.7), (0.05, 0.6)]:
            start, end = timeline.start_ns + int(span * lo), timeline.start_ns + int(span * hi)
            assert_like_raw(timeline, trace, start, end + (hi == 1))
        # A range ending inside a block's last event (one that goes on past it): that block is
        # read event by event, the event clipped.
        keys = lane_keys(timeline)
        checked = {
            row
            for row, lane in enumerate(index.row_lane.tolist())
            if keys.get(timeline.lane_node.get((1, lane)), ("",))[0] in ("thread", "stream")
        }
        ends = [
            int(index.start[p - 1]) + 1
            for row in sorted(checked)
            for p in [(int(index.row_off[row]) // 32 + 3) * 32]
            if p < index.row_off[row + 1]
            and index.dur[p - 1] > 1
            and index.start[p] > index.start[p - 1]
        ]
        assert ends
        assert_like_raw(timeline, trace, timeline.start_ns, ends[0])
    finally:
        shutil.rmtree(store / folder)


def test_a_collector_chunks_blocks_add_up_like_its_events(tmp_path, monkeypatch):
    """A collector chunk from a real H100 loop: over the whole chunk its GPU streams' totals per
    name, added mostly from 32-event blocks, are the chunk's own GPU events; over any range,
    every row (self times included) is what reading each event gives."""
    path = DATA / "h100_collector" / "chunk-003.pcol"
    store = tmp_path / "store"
    ingest_trace(path, "collector", store)
    monkeypatch.setattr(index_build, "BLOCK_EVENTS", 1 << 20)  # no whole block: read each
    build_index(store, store / "one-block")
    read_each = JobTimeline([Part(1, "algo-1", 0, None, PartIndex(StoreFiles(store), "one-block"))])
    monkeypatch.setattr(index_build, "BLOCK_EVENTS", 32)
    build_index(store, store / "small-blocks")
    index = PartIndex(StoreFiles(store), "small-blocks")
    assert index.block_events == 32 and read_each.parts[1].index.block_events > index.n_events
    blocks = JobTimeline([Part(1, "algo-1", 0, None, index)])

    chunk = read_chunk(path)
    events, strings = chunk.events, chunk.strings
    gpu = np.isin(events["ev_kind"], [EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET])
    want_count: Counter = Counter()
    want_ns: Counter = Counter()
    for name, dur in zip(events["ev_name"][gpu], events["ev_dur_ns"][gpu], strict=True):
        want_count[strings[name]] += 1
        want_ns[strings[name]] += int(dur)
    streams = [lane for lane, key in lane_keys(blocks).items() if key[0] == "stream"]
    rows = range_totals(blocks, blocks.start_ns, blocks.end_ns + 1, streams)
    got_count: Counter = Counter()
    got_ns: Counter = Counter()
    for row in rows:
        got_count[row.name] += row.count
        got_ns[row.name] += row.total_ns
    assert (got_count, got_ns) == (want_count, want_ns)

    lanes = list(lane_keys(blocks))
    span = blocks.end_ns - blocks.start_ns
    for lo, hi in [(0, 1), (0.1, 0.9), (0.3, 0.6), (0.45, 0.55)]:
        start, end = blocks.start_ns + int(span * lo), blocks.start_ns + int(span * hi) + 1
        assert [vars(r) for r in range_totals(blocks, start, end, lanes)] == [
            vars(r) for r in range_totals(read_each, start, end, lanes)
        ]


def assert_like_raw(timeline: JobTimeline, trace: str, start: int, end: int) -> None:
    keys = lane_keys(timeline)
    lanes = [lane for lane, key in keys.items() if key[0] in ("thread", "stream")]
    assert lanes
    rows = range_totals(timeline, start, end, lanes)
    checked = 0
    for lane in lanes:
        want = brute_force(trace, keys[lane], start, end)
        got = {r.name: r for r in rows if r.track == lane}
        assert set(got) == set(want), lane
        for name, row in got.items():
            w = want[name]
            assert (row.count, row.total_ns) == (w["count"], w["total"]), name
            assert (row.min_ns, row.max_ns) == (min(w["clips"]), max(w["clips"])), name
            if keys[lane][0] == "thread":
                assert row.self_ns == w["self"], name
            else:
                assert row.self_ns is None
            checked += 1
    assert checked > 10


def test_it_lists_the_events_of_one_name_in_the_range(timeline_of):
    trace = "gpu_training_rank0.pt.trace.json.gz"
    timeline = timeline_of(trace)
    span = timeline.end_ns - timeline.start_ns
    start, end = timeline.start_ns + span // 4, timeline.start_ns + span // 2
    lanes = list(lane_keys(timeline))
    rows = range_totals(timeline, start, end, lanes)
    top = rows[0]
    total, events = range_events(timeline, start, end, [top.track], top.name, 5)
    assert total == top.count
    assert len(events) == min(5, top.count)
    assert all(e["name"] == top.name and e["track"] == top.track for e in events)
    starts = [int(e["start_ns"]) for e in events]
    assert starts == sorted(starts)


def test_an_index_built_before_super_blocks_totals_alike(store_of, monkeypatch, tmp_path):
    """An index from before super-blocks (no ``sup_*``) adds blocks only: same rows."""
    trace = TRACES[0]
    monkeypatch.setattr(index_build, "BLOCK_EVENTS", 32)
    monkeypatch.setattr(index_build, "SUPER_BLOCKS", 4)
    store = store_of(trace)
    try:
        build_index(store, store / "with-super")
        shutil.copytree(store / "with-super", store / "without-super")
        for path in (store / "without-super").glob("sup_*.npy"):
            path.unlink()
        meta_path = store / "without-super" / "meta.json"
        meta = json.loads(meta_path.read_text())
        del meta["super_events"]
        meta_path.write_text(json.dumps(meta))
        old, new = (
            JobTimeline([Part(1, "algo-1", 0, None, PartIndex(StoreFiles(store), folder))])
            for folder in ("without-super", "with-super")
        )
        assert len(old.parts[1].index.block_sums()) == 1
        assert len(new.parts[1].index.block_sums()) == 2
        lanes = [lane for lane, key in lane_keys(new).items() if key[0] in ("thread", "stream")]
        span = new.end_ns - new.start_ns
        for lo, hi in [(0, 1), (0.1, 0.9), (0.3, 0.7)]:
            start, end = new.start_ns + int(span * lo), new.start_ns + int(span * hi) + 1
            assert range_totals(old, start, end, lanes) == range_totals(new, start, end, lanes)
    finally:
        for folder in ("with-super", "without-super"):
            shutil.rmtree(store / folder, ignore_errors=True)
