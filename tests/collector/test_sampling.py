import time

import psutil

from collector.perf_events import COUNTERS, PerfCounters
from collector.sampler import Sampler
from tracefmt.kinds import SampleKind


def test_it_samples_every_core_io_wait_and_memory():
    sampler = Sampler(20, cpu=True, gpu=False, perf=False, node_level=True)
    sampler.start()
    samples: list = []
    deadline = time.monotonic() + 60
    # Until a full round of samples arrived (a loaded machine takes longer than 20 ms).
    while time.monotonic() < deadline and not {
        SampleKind.CPU_UTIL_TOTAL_PCT,
        SampleKind.CPU_IOWAIT_PCT,
        SampleKind.HOST_MEM_USED_BYTES,
    } <= {s[0] for s in samples}:
        time.sleep(0.05)
        samples += sampler.drain()
    sampler.stop()
    samples += sampler.drain()
    assert sampler.sources["psutil"] == "ok"
    assert sampler.sources["nvml"] == "off (gpu_sampling disabled)"
    per_core = [s for s in samples if s[0] == SampleKind.CPU_UTIL_PCT]
    assert {s[1] for s in per_core} == set(range(psutil.cpu_count()))
    assert all(0.0 <= s[4] <= 100.0 for s in samples if s[0] != SampleKind.HOST_MEM_USED_BYTES)
    kinds = {s[0] for s in samples}
    assert {
        SampleKind.CPU_UTIL_TOTAL_PCT,
        SampleKind.CPU_IOWAIT_PCT,
        SampleKind.HOST_MEM_USED_BYTES,
    } <= kinds
    memory = [s[4] for s in samples if s[0] == SampleKind.HOST_MEM_USED_BYTES]
    assert 0 < memory[0] < psutil.virtual_memory().total


def test_it_samples_at_the_first_step_boundary_after_each_interval():
    # An interval no test run reaches: the fallback thread never wakes, only boundaries sample.
    sampler = Sampler(600_000, cpu=True, gpu=False, perf=False, node_level=True)
    sampler.start()
    first = time.monotonic_ns()
    sampler.at_step_boundary(first)  # nothing sampled yet: due at once
    memory = SampleKind.HOST_MEM_USED_BYTES  # (CPU shares need clock ticks between samples)
    assert [s[0] for s in sampler.drain()].count(memory) == 1
    sampler.at_step_boundary(first + 1_000_000)  # a step later, well within the interval
    assert sampler.drain() == []
    sampler.at_step_boundary(time.monotonic_ns() + 600 * 10**9)  # an interval after the last
    assert [s[0] for s in sampler.drain()].count(memory) == 1
    sampler.stop()


def test_other_local_ranks_leave_node_metrics_to_local_rank_0():
    sampler = Sampler(20, cpu=True, gpu=True, perf=False, node_level=False)
    sampler.start()
    sampler.stop()
    assert sampler.sources["psutil"] == "sampled by local rank 0 of this node"
    assert sampler.sources["nvml"] == "sampled by local rank 0 of this node"
    assert sampler.drain() == []


def test_perf_counters_count_this_process_or_say_why_not():
    counters = PerfCounters()
    try:
        sum(i * i for i in range(200_000))
        deltas = dict(counters.read_deltas())
        assert set(counters.names) | set(counters.unavailable) == {n for n, *_ in COUNTERS}
    finally:
        counters.close()
    if "task_clock_ns" in deltas:
        assert deltas["task_clock_ns"] > 0
    else:
        assert counters.status().startswith(("unavailable:", "partial:"))
