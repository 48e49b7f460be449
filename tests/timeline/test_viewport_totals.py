"""No event is lost or counted twice at any zoom level: per lane, the events drawn one by one plus
the merged blocks add up to the raw trace's count and summed duration, window after window."""

from collections import Counter

import numpy as np
import pytest

from profiler_app.timeline.pure.query import JobTimeline, LaneRows
from profiler_app.timeline.pure.viewport import Window
from tests.timeline.raw import raw_timeline
from tests.traces.expected import TRACES

# Bucket widths from 1 ns to 1.07 s (2**30 ns): every event individual at the finest, nearly
# all merged at the coarsest.
LEVELS = [0, 6, 10, 13, 16, 19, 22, 26, 30]


def lane_keys(timeline: JobTimeline) -> dict[str, tuple]:
    """Tree lane id → the raw key of what it should hold."""
    keys = {}
    for root in timeline.roots:
        for proc in (n for n in root.walk() if n.kind == "process"):
            pid = proc.info["pid"]
            for node in proc.walk():
                info = node.info
                if node.kind == "stream":
                    keys[node.id] = ("stream", info["device"], info["stream"])
                elif node.kind == "host":
                    keys[node.id] = ("host", pid, info["tid"])
                elif node.kind == "thread":
                    keys[node.id] = ("thread", pid, info["tid"])
                elif node.kind == "other":
                    keys[node.id] = ("other",)
    return keys


def tiled_totals(
    timeline: JobTimeline, lane: str, k: int, pieces: int = 5
) -> tuple[int, int, list]:
    """Count, summed duration and ids of a lane's events over windows that tile the job."""
    whole = Window.at_level(timeline.start_ns, timeline.end_ns + 1, k)
    step = max((whole.n_buckets // pieces) << k, 1 << k)
    count = busy = 0
    seen = []
    start = whole.start_ns
    while start < whole.end_ns:
        window = Window(start, min(start + step, whole.end_ns), k)
        (track,) = timeline.viewport(window, [lane], width_px=1).tracks
        assert isinstance(track, LaneRows)
        for part, row in track.rows:
            own = row.events[part.index.start[row.events] >= window.start_ns]  # not "continued"
            count += len(own) + int(row.block_count.sum())
            busy += int(part.index.dur[own].sum()) + int(row.block_busy_ns.sum())
            seen.extend((part.id, int(i)) for i in own)
        start += step
    return count, busy, seen


@pytest.mark.parametrize("trace", TRACES)
def test_it_keeps_every_event_at_every_level(trace, timeline_of):
    timeline = timeline_of(trace)
    raw = raw_timeline(trace)
    keys = lane_keys(timeline)
    for k in LEVELS:
        got_count: Counter = Counter()
        got_busy: Counter = Counter()
        for lane, key in keys.items():
            count, busy, seen = tiled_totals(timeline, lane, k)
            assert len(seen) == len(set(seen)), f"{lane} drew an event twice at k={k}"
            got_count[key] += count
            got_busy[key] += busy
        assert got_count == raw.count, f"counts differ at k={k}"
        assert got_busy == raw.busy_ns, f"busy time differs at k={k}"
    assert sum(raw.count.values()) == raw.n_events == timeline.n_events


@pytest.mark.parametrize("width_px", [1, 300, 2000, 8000])
def test_it_draws_only_events_at_least_a_bucket_long_one_by_one(width_px, timeline_of):
    timeline = timeline_of("gpu_training_rank0.pt.trace.json.gz")
    window = Window.for_view(timeline.start_ns, timeline.end_ns, width_px)
    assert window.bucket_ns <= (timeline.end_ns - timeline.start_ns) / width_px
    lanes = [n.id for n in timeline.nodes.values() if n.data == "events"]
    for track in timeline.viewport(window, lanes, width_px).tracks:
        for part, row in track.rows:
            assert (part.index.dur[row.events] >= window.bucket_ns).all()
            assert (row.block_end_ns - row.block_start_ns >= window.bucket_ns).all()
            assert (row.block_busy_ns < row.block_count * window.bucket_ns).all()


def test_it_bounds_what_a_screen_receives(timeline_of):
    """At any zoom a 2,000-pixel view returns a few events per pixel and row, not the trace."""
    timeline = timeline_of("gpu_training_rank0.pt.trace.json.gz")
    lanes = [n.id for n in timeline.nodes.values() if n.data == "events"]
    span = timeline.end_ns - timeline.start_ns
    for fraction in (1, 0.1, 0.01, 0.001):
        lo = timeline.start_ns + int(span * 0.4)
        window = Window.for_view(lo, lo + int(span * fraction), 2000)
        rows = [row for t in timeline.viewport(window, lanes, 2000).tracks for _, row in t.rows]
        per_row = max(len(r.events) + len(r.block_count) for r in rows)
        assert per_row <= 2 * window.n_buckets
        assert sum(len(r.events) + len(r.block_count) for r in rows) < timeline.n_events / 3


def test_it_cuts_windows_on_powers_of_two():
    window = Window.for_view(1_000_000_123, 1_000_000_123 + 2_000_000, 1000)
    assert window.k == 10  # 2 µs per pixel: 1,024 ns buckets
    assert window.start_ns % 1024 == 0 and window.end_ns % 1024 == 0
    assert window.start_ns <= 1_000_000_123 and window.end_ns >= 1_000_000_123 + 2_000_000
    assert Window.for_view(0, 10, 1000).k == 0


def test_it_samples_gpu_utilisation_from_kernel_intervals(timeline_of):
    """Per bucket, the share of time some kernel ran on the GPU (union across streams)."""
    timeline = timeline_of("multirank_sampled/rank-0.json.gz")
    (util,) = [n for n in timeline.nodes.values() if n.kind == "gpu_util"]
    window = Window.at_level(timeline.start_ns, timeline.end_ns, 20)
    (counter,) = timeline.viewport(window, [util.id], width_px=window.n_buckets).tracks
    part = next(iter(timeline.parts.values()))
    ix = part.index
    kernels = np.flatnonzero(ix.kind == 5)
    start, end = ix.start[kernels], ix.start[kernels] + ix.dur[kernels]
    edges = window.start_ns + (np.arange(window.n_buckets + 1) << 20)
    expected = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        # Union of the clipped kernel intervals in this bucket, by brute force.
        covered = sorted(
            (max(s, lo), min(e, hi)) for s, e in zip(start, end, strict=True) if s < hi and e > lo
        )
        total, reach = 0, lo
        for s, e in covered:
            total += max(0, e - max(s, reach))
            reach = max(reach, e)
        expected.append(100.0 * total / (1 << 20))
    got = np.nan_to_num(counter.mean, nan=0.0)
    assert got == pytest.approx(expected, abs=1e-9)
    assert max(expected) > 50
