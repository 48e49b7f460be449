"""Collector uploads: a process's chunks (one part each) draw as one process, and its sampled
series (NVML, psutil, perf counters) become counter tracks, min/max/mean per bucket."""

import numpy as np
import pandas as pd
import pytest

from profiler_app.timeline.pure.index import open_index
from profiler_app.timeline.pure.query import Counter, JobTimeline, LaneRows
from profiler_app.timeline.pure.series import from_frame, per_bucket
from profiler_app.timeline.pure.tree import Part
from profiler_app.timeline.pure.viewport import Window
from profiler_app.traces import ingest_trace
from tests.traces.test_collector_chunk import EVENTS, SAMPLES, T0, meta, write_chunk

SHIFT_NS = 20_000
# The second chunk: the same work 20 µs later, with new correlation ids, and its own samples.
EVENTS_2 = [
    (k, n, s + SHIFT_NS, d, p, t, dev, st, c + 100 if c >= 0 else c, b, m)
    for k, n, s, d, p, t, dev, st, c, b, m in EVENTS
]
SAMPLES_2 = [(0, 0, 0, 2_000_000, 50.0), (3, 0, 0, 2_000_000, 65.0), (3, 1, 0, 2_000_000, 35.0)]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    root = tmp_path_factory.mktemp("collector")
    parts, frames = [], []
    for seq, (events, samples) in enumerate([(EVENTS, SAMPLES), (EVENTS_2, SAMPLES_2)]):
        chunk = write_chunk(
            root / f"c{seq}.pcol", meta(seq=seq, final=seq == 1), events=events, samples=samples
        )
        result = ingest_trace(chunk, "collector", root / f"store{seq}")
        parts.append(Part(seq + 1, "algo-1", 0, 10, open_index(result.store.directory)))
        series = result.aggregates.series
        frames.append(series[series["source"] != "kernel_busy"].assign(node="algo-1"))
    return JobTimeline(parts, from_frame(pd.concat(frames, ignore_index=True)))


def test_it_draws_the_chunks_of_a_process_as_one(collected):
    (root,) = collected.roots
    cpu, gpus = root.children
    assert (cpu.label, cpu.data, gpus.label) == ("CPU", "counter", "GPUs")
    (proc,) = gpus.children
    assert proc.label == "HOST-0 PID-10"
    assert [c.label for c in proc.children] == ["GPU-0 utilisation", "GPU-0 device", "GPU-0 host"]
    streams = {c.label: c for c in proc.children[1].children}
    assert list(streams) == ["stream 7", "stream 9"]
    assert [p.id for p, _ in streams["stream 7"].members] == [1, 2]
    window = Window.at_level(collected.start_ns, collected.end_ns + 1, 0)
    (track,) = collected.viewport(window, [streams["stream 7"].id], 1).tracks
    assert isinstance(track, LaneRows)
    starts = sorted(int(p.index.start[i]) - T0 for p, row in track.rows for i in row.events)
    # Two kernels and a copy on stream 7 in each chunk.
    assert starts == [1_000, 3_000, 8_000, 1_000 + SHIFT_NS, 3_000 + SHIFT_NS, 8_000 + SHIFT_NS]


def test_it_links_launches_within_each_chunk(collected):
    lanes = [n.id for n in collected.nodes.values() if n.data == "events"]
    flows = collected.viewport(
        Window.at_level(collected.start_ns, collected.end_ns + 1, 0), lanes, 1
    ).flows
    pairs = sorted(
        (
            int(p),
            int(collected.parts[int(p)].index.start[launch]) - T0,
            int(collected.parts[int(p)].index.start[run]) - T0,
        )
        for p, launch, run in zip(flows.part, flows.launch, flows.run, strict=True)
    )
    assert pairs == [(1, 900, 1_000), (2, 900 + SHIFT_NS, 1_000 + SHIFT_NS)]


def test_it_draws_sampled_series_per_bucket(collected):
    util = collected.nodes["algo-1/10/gpu0/util"]
    assert util.series is not None  # measured by NVML, so not derived from kernels
    window = Window.at_level(T0, T0 + 3_000_000, 17)  # 131 µs buckets
    counters = collected.viewport(window, [util.id, "algo-1/cpu", "algo-1/gpus"], 100).tracks
    gpu, cpu, gpus = counters
    assert all(isinstance(c, Counter) for c in counters)
    first = (T0 - window.start_ns) >> 17
    ms = 1_000_000 >> 17
    # A sample per millisecond: 10% at 0, 90% at 1 ms, 50% at 2 ms, held in between.
    assert gpu.mean[first] == 10.0 and gpu.mean[first + ms - 1] == 10.0
    assert gpu.mean[(T0 + 1_000_000 - window.start_ns) >> 17] == 90.0
    assert gpu.mean[(T0 + 2_000_000 - window.start_ns) >> 17] == 50.0
    assert np.isnan(gpu.mean[:first]).all() and np.isnan(gpu.mean[-1])
    # CPU: the mean of the two cores at each instant.
    assert cpu.mean[first] == 50.0 and cpu.mean[(T0 + 2_000_000 - window.start_ns) >> 17] == 50.0
    np.testing.assert_array_equal(gpus.mean, gpu.mean)  # the node's only GPU
    counter = collected.nodes["algo-1/cpu"].children[0]
    assert counter.label == "clk_unhalted_ref.tsc"


def test_it_gives_min_max_and_mean_of_the_samples_in_a_bucket():
    series = from_frame(
        pd.DataFrame(
            {
                "node": "algo-1",
                "metric": "gpu_util_pct",
                "device": 0,
                "name": "",
                "time_ns": [100, 150, 180, 250, 420],
                "value": [10.0, 30.0, 20.0, 70.0, 5.0],
            }
        )
    )[0]
    mean, low, high = per_bucket(series, 0, 7, 5)  # 128 ns buckets: [0,128) [128,256) ...
    np.testing.assert_array_equal(mean, [10.0, 40.0, 70.0, 5.0, np.nan])
    np.testing.assert_array_equal(low, [10.0, 20.0, 70.0, 5.0, np.nan])
    np.testing.assert_array_equal(high, [10.0, 70.0, 70.0, 5.0, np.nan])


def sampled(metric: str, times_ns: list[int], values: list[float]):
    frame = {"node": "vm", "metric": metric, "device": 0, "name": "", "time_ns": times_ns}
    return from_frame(pd.DataFrame({**frame, "value": values}))[0]


def test_a_paced_sample_holds_a_few_intervals_not_across_a_stretch_without_samples():
    """The real H200 job's NVML utilisation: a sample every 200 ms in a round of training,
    then 6.4 s without any before the next round. Drawn in 100 ms buckets, a sample holds
    across the buckets up to the next (3 intervals at most), never across the 6.4 s."""
    ms = 1_000_000
    times = [0, 200 * ms, 400 * ms, 600 * ms, 7_000 * ms, 7_200 * ms]
    util = sampled("gpu_util_pct", times, [48.0, 59.0, 3.0, 55.0, 54.0, 0.0])
    assert util.hold_ns == 3 * 200 * ms
    # 2**27 ns buckets (134 ms): 0-134, 134-268, ..., up to 7.25 s.
    k = 27
    mean, _, _ = per_bucket(util, 0, k, 55)
    bucket = lambda t_ms: (t_ms * ms) >> k  # noqa: E731
    assert mean[bucket(0)] == 48.0 and mean[bucket(600)] == 55.0
    assert mean[bucket(600) + 1] == 55.0  # the next bucket holds it
    # Held up to 3 intervals (600 ms) after its sample; from the bucket that starts later on,
    # nothing until the next round.
    gap = mean[bucket(1_200) + 1 : bucket(7_000)]
    assert len(gap) == 43 and np.isnan(gap).all()
    assert mean[bucket(7_000)] == 54.0 and mean[bucket(7_200)] == 0.0
    # A memory curve records each change: it holds until the next, however far.
    allocated = sampled("torch_allocated_bytes", times, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    held, _, _ = per_bucket(allocated, 0, k, 55)
    assert allocated.hold_ns == np.inf
    assert (held[bucket(600) : bucket(7_000)] == 4.0).all()
