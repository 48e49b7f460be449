"""The timeline store keeps every event (start, duration, name, track) and reads back exactly."""

from collections import Counter

import numpy as np
import pytest

from profiler_app.traces import TimelineReader
from profiler_app.traces.model import EventBatch
from profiler_app.traces.timeline_store import TimelineWriter
from tests.traces.expected import TRACES, expected
from tracefmt.columns import empty_columns
from tracefmt.kinds import EventKind


@pytest.mark.parametrize("trace", TRACES)
def test_it_round_trips_every_event(trace, ingested):
    want = expected(trace)
    reader = TimelineReader(ingested(trace).store.directory)
    table = reader.read_all(["start_ns", "dur_ns", "name", "track"])
    names = np.asarray(reader.strings, dtype=object)[table.column("name").to_numpy()]
    got = Counter(
        zip(
            table.column("start_ns").to_pylist(),
            table.column("dur_ns").to_pylist(),
            names,
            strict=True,
        )
    )
    assert got == Counter(want.events)
    assert reader.n_events == len(want.events)


@pytest.mark.parametrize("trace", TRACES)
def test_it_sorts_by_track_then_start(trace, ingested):
    reader = TimelineReader(ingested(trace).store.directory)
    table = reader.read_all(["track", "start_ns"])
    track, start = table.column("track").to_numpy(), table.column("start_ns").to_numpy()
    assert (np.diff(track) >= 0).all()
    same = np.diff(track) == 0
    assert (np.diff(start)[same] >= 0).all()
    rows = reader.tracks.sort_values("track")
    assert rows["first_row"].tolist() == np.searchsorted(track, rows["track"]).tolist()
    assert rows["n_rows"].sum() == len(track)


def test_it_keeps_gpu_streams_and_cpu_threads_apart(ingested):
    reader = TimelineReader(ingested("nccl_rank0.json.gz").store.directory)
    labels = set(reader.tracks["label"])
    assert {"GPU 0 stream 7", "GPU 0 stream 40"} <= labels
    assert "python3.10 / thread 2910249 (pt_main_thread)" in labels


def union_ns(start: np.ndarray, end: np.ndarray) -> int:
    total, reach = 0, None
    for s, e in sorted(zip(start.tolist(), end.tolist(), strict=True)):
        if reach is None or s > reach:
            total, reach = total + (e - s), e
        elif e > reach:
            total, reach = total + (e - reach), e
    return total


def test_it_merges_many_spilled_runs(tmp_path):
    rng = np.random.default_rng(7)
    n = 50_000
    cols = empty_columns(n)
    cols["track"] = rng.integers(0, 5, n).astype(np.int32)
    cols["start_ns"] = rng.integers(0, 10**9, n)
    cols["dur_ns"] = rng.integers(0, 10**6, n)
    cols["name"] = rng.integers(0, 3, n).astype(np.int32)
    writer = TimelineWriter(tmp_path / "store", run_rows=3000)
    for lo in range(0, n, 2500):
        writer.add(EventBatch({k: v[lo : lo + 2500] for k, v in cols.items()}))
    import pandas as pd

    labels = pd.DataFrame({"track": range(5), "label": [f"t{i}" for i in range(5)]})
    summary = writer.finish(1000, ["a", "b", "c"], labels)
    assert summary.n_events == n
    table = TimelineReader(tmp_path / "store").read_all(["track", "start_ns", "dur_ns"])
    got = sorted(
        zip(*(table.column(c).to_pylist() for c in ("track", "start_ns", "dur_ns")), strict=True)
    )
    want = sorted(
        zip(
            cols["track"].tolist(),
            (cols["start_ns"] + 1000).tolist(),
            cols["dur_ns"].tolist(),
            strict=True,
        )
    )
    assert got == want
    track = table.column("track").to_numpy()
    start = table.column("start_ns").to_numpy()
    assert np.array_equal(np.lexsort((start, track)), np.arange(n))


def test_the_event_model_written_window_by_window_is_the_whole_parts(tmp_path, monkeypatch):
    """A store is finished a few windows at a time (the event model of each segment that
    starts where nothing is open on its track): written through 9 spilled runs and windows of
    2,000 rows, its nesting, self times and steps equal those computed over the whole part at
    once."""
    from functools import partial

    from profiler_app.traces import ingest_trace, part_sink, timeline_store
    from profiler_app.traces.event_model import _step_of, launch_times, step_numbers
    from profiler_app.traces.nesting import nest, self_times
    from tests.traces.expected import DATA

    monkeypatch.setattr(part_sink, "TimelineWriter", partial(TimelineWriter, run_rows=5000))
    monkeypatch.setattr(timeline_store, "_WINDOW_ROWS", 2000)
    result = ingest_trace(DATA / "gpu_training_rank0.pt.trace.json.gz", "kineto", tmp_path / "s")
    reader = TimelineReader(result.store.directory)
    table = reader.read_all(None)
    c = {name: table.column(name).to_numpy() for name in table.column_names}
    assert len(c["track"]) > 40_000

    end = c["start_ns"] + c["dur_ns"]
    parent, depth = nest(c["track"], c["start_ns"], end)
    assert np.array_equal(c["parent"], parent) and np.array_equal(c["depth"], depth)
    assert np.array_equal(c["self_ns"], self_times(c["start_ns"], end, parent))
    assert depth.max() >= 3  # operators nest in steps, runtime calls in operators

    named = step_numbers(reader.strings)[c["name"]]
    is_step = c["is_step"]
    assert is_step.sum() == len(result.aggregates.steps) >= 2
    at = launch_times(c["kind"], c["start_ns"], c["correlation"])
    step = _step_of(at, c["start_ns"][is_step], end[is_step], named[is_step])
    step[is_step] = named[is_step]
    assert np.array_equal(c["step"], step)
    kernels_in_steps = (c["step"] >= 0) & (c["kind"] == EventKind.KERNEL)
    assert kernels_in_steps.sum() > 1000  # placed by their launch, found in another run


def test_it_cuts_row_groups_at_track_ends(tmp_path, monkeypatch):
    """Row groups follow the tracks (``row_group_sizes``): a track's events start a group of
    their own unless they are few, so a time filter can skip the groups outside its range. Written
    through spilled runs and windows smaller than a group, they come out as over the whole part."""
    from functools import partial

    from profiler_app.traces import ingest_trace, part_sink, timeline_store
    from profiler_app.traces.timeline_store import row_group_sizes
    from tests.traces.expected import DATA

    monkeypatch.setattr(part_sink, "TimelineWriter", partial(TimelineWriter, run_rows=5000))
    monkeypatch.setattr(timeline_store, "_WINDOW_ROWS", 700)
    monkeypatch.setattr(timeline_store, "ROW_GROUP_ROWS", 1000)
    result = ingest_trace(DATA / "gpu_training_rank0.pt.trace.json.gz", "kineto", tmp_path / "s")
    reader = TimelineReader(result.store.directory)
    meta = reader.events.metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    # Tracks of 58, 18,815, 20,436 and 6,110 events, then three of one: the first and the
    # last four's 113 (the 110 past 6,000 and the three) are too few for a group of their own.
    assert reader.tracks["n_rows"].tolist() == [58, 18_815, 20_436, 6_110, 1, 1, 1]
    assert sizes == [58] + [1000] * 18 + [815] + [1000] * 20 + [436] + [1000] * 6 + [113]
    track = reader.column("track")
    assert sizes == row_group_sizes(track)
