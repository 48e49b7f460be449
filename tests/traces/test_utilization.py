"""GPU utilisation derived from kernel busy time (no NVML samples in imported traces)."""

import gzip
import json
from decimal import Decimal

import numpy as np

from profiler_app.traces.utilization import DeviceBusy, merge_intervals
from tests.traces.expected import DATA, ns
from tests.traces.test_timeline_store import union_ns


def test_it_merges_overlapping_kernel_intervals():
    start, end = merge_intervals(np.array([5, 0, 2, 20]), np.array([9, 3, 6, 25]))
    assert list(zip(start.tolist(), end.tolist(), strict=True)) == [(0, 9), (20, 25)]


def test_it_splits_busy_time_at_bucket_edges_and_keeps_idle_buckets():
    busy = DeviceBusy(width_ns=10)
    busy.add(np.array([5, 8]), np.array([15, 12]))  # union [5, 15)
    times, values = busy.series(0, 40)
    assert times.tolist() == [0, 10, 20, 30]
    assert values.tolist() == [50.0, 50.0, 0.0, 0.0]


def test_it_derives_utilisation_from_the_union_of_kernels(ingested):
    result = ingested("gpu_training_rank0.pt.trace.json.gz")
    series = result.aggregates.series
    gpu = series[(series["metric"] == "gpu_util_pct") & (series["device"] == 0)]
    assert set(gpu["source"]) == {"kernel_busy"}
    width = int(np.diff(gpu["time_ns"]).min())
    with gzip.open(DATA / "gpu_training_rank0.pt.trace.json.gz") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    kernels = [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e.get("cat") == "kernel"
    ]
    start, end = (np.array(x) for x in zip(*kernels, strict=True))
    derived_busy = (gpu["value"] * width / 100).sum()
    assert abs(derived_busy - union_ns(start, end)) < 1e-3 * width
    assert gpu["value"].between(0, 100).all()
    assert gpu["time_ns"].iloc[0] <= result.aggregates.start_ns < gpu["time_ns"].iloc[0] + width
