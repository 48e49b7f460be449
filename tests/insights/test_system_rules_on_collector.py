"""The system rules on a real collector job, against figures computed here from its raw chunks.

``tests/data/h100_collector`` is a 1.6 s job recorded on an NVIDIA H100: 13 chunks, 300 steps,
NVML and psutil samples every 200 ms (one more as the job ended, 6 ms after the last). The job is
parsed and its insights computed as a worker does; every expected figure below comes from the
chunks as ``read_chunk`` returns them, with numpy and pandas: a snapshot is one sampling instant
(the collector stamps all of a round's samples with one time), a node's value at an instant the
mean over its devices (the sum for memory in use).

With nine samples per series the job is shorter than every ``patience`` and under the ten
samples a short job needs, so five rules say why they are not evaluated; their figures are
checked again with parameters that fit nine samples, and on either side of each threshold.
A 26.5 s job built as the collector builds one (53 sampling rounds) checks the verdict a short
job gets instead: taken once over all its samples, and labelled with how many.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from collector.chunker import ChunkBuilder
from collector.identity import Identity
from profiler_app.analysis.frames import JobData
from profiler_app.analysis.framework import framework_from_events
from profiler_app.core.logic import PartSource, delete_job, store_part
from profiler_app.core.models import TrainingJob
from profiler_app.insights import inputs
from profiler_app.insights.models import InsightsStatus
from profiler_app.insights.pure.rules import RuleResult, evaluate_rules, params_from_overrides
from tests.conftest import DATA_DIR
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_stored
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind, SampleKind

pytestmark = pytest.mark.django_db

CHUNKS = sorted((DATA_DIR / "h100_collector").glob("*.pcol"))
NODE = "vm"
# What the collector told the server (chunks do not carry them): it started 3 s before the first
# step and the job ended 0.16 s after the last chunk. Whole and half seconds: exact as floats.
STARTED_NS = 1_795_403_975_000_000_000
ENDED_NS = 1_795_403_979_750_000_000
NS_PER_S = 1e9
SHORT = "a shorter job is judged on its own samples from 10 on"
# Parameters that fit nine samples: no patience, windows shorter than the job.
FITTED = {
    "BatchSize_patience": 0,
    "BatchSize_window": 8,
    "CPUBottleneck_patience": 0,
    "IOBottleneck_patience": 0,
    "GPUMemoryIncrease_patience": 0,
    "GPUMemoryIncrease_window": 4,
    "LowGPUUtilization_patience": 0,
}
METRIC_OF = {int(kind): kind.name.lower() for kind in SampleKind if kind != SampleKind.COUNTER}
# The phase each of this job's annotations names (PyTorch's and SageMaker's vocabulary).
PHASE_OF = {"Forward": "forward", "Backward": "backward", "Optimizer": "optimizer", "Loss": "other"}


@dataclass(frozen=True)
class Raw:
    samples: pd.DataFrame  # metric, device, time_ns, value
    steps: pd.DataFrame  # step, start_ns, dur_ns
    annotations: pd.DataFrame  # name, tid, start_ns, dur_ns
    gpu_ops: pd.DataFrame  # kind, name, dur_ns


def read_raw() -> Raw:
    samples, steps, annotations, gpu_ops = [], [], [], []
    for path in CHUNKS:
        chunk = read_chunk(path)
        s = chunk.samples
        kept = s["s_kind"] != SampleKind.COUNTER  # perf counters are no rule's input
        samples.append(
            pd.DataFrame(
                {
                    "metric": [METRIC_OF[int(k)] for k in s["s_kind"][kept]],
                    "device": s["s_device"][kept].astype(int),
                    "time_ns": s["s_time_ns"][kept],
                    "value": s["s_value"][kept],
                }
            )
        )
        # The share of each GPU's memory in use: used bytes over the device's total.
        total = {d["index"]: d["total_memory_bytes"] for d in chunk.meta["devices"]}
        used = s["s_kind"] == SampleKind.GPU_MEM_USED_BYTES
        samples.append(
            pd.DataFrame(
                {
                    "metric": "gpu_mem_used_pct",
                    "device": s["s_device"][used].astype(int),
                    "time_ns": s["s_time_ns"][used],
                    "value": [
                        100 * v / total[d]
                        for v, d in zip(s["s_value"][used], s["s_device"][used], strict=True)
                    ],
                }
            )
        )
        ev, names = chunk.events, chunk.event_names()
        kind = ev["ev_kind"]
        step = kind == EventKind.STEP
        steps.append(
            pd.DataFrame(
                {
                    "step": [int(n.removeprefix("step_")) for n in names[step]],
                    "start_ns": ev["ev_start_ns"][step],
                    "dur_ns": ev["ev_dur_ns"][step],
                }
            )
        )
        note = kind == EventKind.USER_ANNOTATION
        annotations.append(
            pd.DataFrame(
                {
                    "name": names[note],
                    "tid": ev["ev_tid"][note],
                    "start_ns": ev["ev_start_ns"][note],
                    "dur_ns": ev["ev_dur_ns"][note],
                }
            )
        )
        gpu = np.isin(kind, [EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET])
        gpu_ops.append(
            pd.DataFrame({"kind": kind[gpu], "name": names[gpu], "dur_ns": ev["ev_dur_ns"][gpu]})
        )
    return Raw(
        pd.concat(samples, ignore_index=True).sort_values(["metric", "time_ns", "device"]),
        pd.concat(steps, ignore_index=True).sort_values("start_ns", ignore_index=True),
        pd.concat(annotations, ignore_index=True).sort_values("start_ns", ignore_index=True),
        pd.concat(gpu_ops, ignore_index=True),
    )


@pytest.fixture(scope="module")
def raw() -> Raw:
    return read_raw()


def analysed(name: str, chunks: list[Path], started_ns: int, ended_ns: int) -> tuple[dict, JobData]:
    """The stored report (default parameters) and the rules' input of a collector job of
    ``chunks``, parsed and analysed as a worker does; the job is deleted again."""
    job = TrainingJob.objects.create(
        name=name,
        status="completed",
        started_at=datetime.fromtimestamp(started_ns / NS_PER_S, UTC),
        ended_at=datetime.fromtimestamp(ended_ns / NS_PER_S, UTC),
    )
    try:
        for path in chunks:
            with path.open("rb") as stream:
                part, _ = store_part(job, PartSource(NODE, 0, "collector", path.name), stream)
            parse_stored(part.id)
        row = compute_here(job)
        assert row.status == InsightsStatus.DONE, row.error
        framework = [framework_from_events(t) for t in inputs.rank_traces(job)]
        data = inputs.job_data(job, pd.concat(framework, ignore_index=True))
        return {r["rule"]: r for r in row.report["rules"]}, data
    finally:
        delete_job(job)


@pytest.fixture(scope="module")
def parsed(django_db_setup, django_db_blocker) -> tuple[dict, JobData]:
    with django_db_blocker.unblock():
        return analysed("h100-collector", CHUNKS, STARTED_NS, ENDED_NS)


@pytest.fixture(scope="module")
def report(parsed) -> dict:
    return parsed[0]


def judge(parsed, **overrides) -> dict[str, RuleResult]:
    """Every rule on the job with FITTED parameters and ``overrides`` (``Rule_param=value``)."""
    params = params_from_overrides({**FITTED, **overrides})
    return {r.rule: r for r in evaluate_rules(parsed[1], params)}


def instants(raw: Raw, metric: str) -> pd.Series:
    """The node's value at each sampling instant: the mean over its devices, or the sum for
    memory in use."""
    rows = raw.samples[raw.samples["metric"] == metric].groupby("time_ns")["value"]
    return rows.sum() if metric == "gpu_mem_used_bytes" else rows.mean()


def gpu(raw: Raw, metric: str) -> pd.Series:
    rows = raw.samples[(raw.samples["metric"] == metric) & (raw.samples["device"] == 0)]
    return rows.set_index("time_ns")["value"]


# The percentiles OverallSystemUsage gives, and those the other rules give.
SUMMARY_POINTS = (50, 95, 99)
SPREAD_POINTS = (5, 25, 50, 75, 95)


def stats(values, points=SUMMARY_POINTS) -> dict:
    values = np.asarray(values, dtype=float)
    found = {f"p{p}": v for p, v in zip(points, np.percentile(values, points), strict=True)}
    return {"min": values.min(), **found, "max": values.max()}


def approx(expected: dict) -> dict:
    return {k: pytest.approx(v, rel=1e-12, abs=1e-9) for k, v in expected.items()}


def verdict(found: RuleResult) -> tuple[bool, int, int, int]:
    return found.triggered, found.evaluated, found.violations, found.datapoints


def test_the_raw_job_is_what_the_oracle_assumes(raw):
    """One GPU, one node, nine sampling instants shared by every metric; no nested annotations."""
    assert set(raw.samples.loc[raw.samples["metric"].str.startswith("gpu"), "device"]) == {0}
    per_metric = raw.samples.groupby("metric")["time_ns"].unique()
    first = np.sort(per_metric["gpu_util_pct"])
    assert len(first) == 9
    assert all(np.array_equal(np.sort(t), first) for t in per_metric)
    assert np.diff(first)[-1] < 10_000_000  # the last instant: the job ending, 6 ms on
    assert len(raw.steps) == 300 and raw.steps["step"].tolist() == list(range(300))
    ends = (raw.annotations["start_ns"] + raw.annotations["dur_ns"]).to_numpy()
    assert (raw.annotations["start_ns"].to_numpy()[1:] >= ends[:-1]).all()
    assert raw.annotations["tid"].nunique() == 1


def test_overall_system_usage_summarises_each_sampling_instant(report, raw):
    rule = report["OverallSystemUsage"]
    assert (rule["status"], rule["evaluated"]) == ("no_issue", 1)
    node = rule["evidence"]["nodes"][NODE]
    metrics = sorted(raw.samples["metric"].unique())
    assert sorted(node) == metrics
    for metric in metrics:
        assert node[metric] == approx(stats(instants(raw, metric))), metric
    # Memory in use never changed: the node's total is one GPU's 1.5 GB, not twice it.
    assert node["gpu_mem_used_bytes"]["max"] == gpu(raw, "gpu_mem_used_bytes").max()
    assert rule["evidence"]["gpus"] == {f"{NODE} GPU 0": approx(stats(gpu(raw, "gpu_util_pct")))}
    assert rule["evidence"]["gpu_source"] == "NVML samples"
    assert rule["datapoints"] == sum(len(instants(raw, m)) for m in metrics) == 72
    p95 = np.percentile(instants(raw, "gpu_util_pct"), 95)
    assert p95 < 70 and np.percentile(instants(raw, "cpu_util_pct"), 95) <= 90
    assert rule["recommendation"] == (
        f"On {NODE} the GPUs are lightly used (95th percentile {p95:.0f}%): see "
        "LowGPUUtilization and BatchSize for why and what to do."
    )


WAITING = {
    "BatchSize": "at most {n} CPU snapshots per node; the rule needs more than window=500 and "
    "patience=100",
    "CPUBottleneck": "{n} snapshots with both GPU and CPU utilisation samples; the rule waits "
    "for more than patience=100",
    "IOBottleneck": "{n} snapshots with both GPU and I/O wait samples; the rule waits for more "
    "than patience=1000",
    "GPUMemoryIncrease": "at most {n} GPU memory samples per GPU; the rule needs two windows "
    "(2 x window=500) and more than patience=100",
    "LowGPUUtilization": "at most {n} GPU utilisation samples per GPU; the rule waits for more "
    "than patience=1000",
}


@pytest.mark.parametrize("rule", WAITING)
def test_a_rule_waiting_for_more_samples_than_the_job_has_says_how_many_it_had(report, raw, rule):
    n = len(instants(raw, "cpu_util_pct"))
    assert n == len(gpu(raw, "gpu_util_pct")) == len(gpu(raw, "gpu_mem_used_pct")) == 9
    found = report[rule]
    assert (found["status"], found["triggered"], found["evaluated"]) == ("not_evaluated", False, 0)
    reason = WAITING[rule].format(n=n)
    assert found["not_evaluated_reason"] == f"not evaluated: {reason}; {SHORT}"
    assert (found["datapoints"], found["evidence"]) == (n, {})


def test_load_balancing_needs_two_gpus(report, raw):
    assert raw.samples.loc[raw.samples["metric"] == "gpu_util_pct", "device"].nunique() == 1
    found = report["LoadBalancing"]
    assert found["status"] == "not_evaluated"
    assert found["not_evaluated_reason"] == "not evaluated: only one GPU has utilisation samples"


def test_low_gpu_utilization_on_the_nine_samples(parsed, raw):
    values = gpu(raw, "gpu_util_pct")
    found = judge(parsed)["LowGPUUtilization"]
    p5, p95 = np.percentile(values, (5, 95))
    assert p95 < 70  # under-used: 8-15 % busy
    assert verdict(found) == (True, 1, 1, 9)
    assert found.evidence["issues"] == ["under-used"]
    assert found.evidence["nodes"][NODE]["0"] == approx(
        {
            "under_used_scans": 1,
            "fluctuating_scans": 0,
            "unused": False,
            "window_p95": p95,
            "window_p5": p5,
            **stats(values, SPREAD_POINTS),
        }
    )
    assert [tuple(r)[:4] for r in found.time_ranges] == [
        (values.index[0], values.index[-1], NODE, 0)
    ]
    # Scans every second from the job start: the fourth and fifth have seen samples.
    scans = judge(parsed, LowGPUUtilization_scan_interval_us=1_000_000)["LowGPUUtilization"]
    ends = STARTED_NS + np.arange(1, int(np.ceil((ENDED_NS - STARTED_NS) / NS_PER_S)) + 1) * 10**9
    seen = (ends > values.index[0]).sum()
    assert (scans.evaluated, scans.trigger_count) == (seen, seen) == (2, 2)
    # Either side of its threshold: p95 is 15 %.
    assert not judge(parsed, LowGPUUtilization_threshold_p95=p95)["LowGPUUtilization"].triggered
    just_over = judge(parsed, LowGPUUtilization_threshold_p95=p95 + 0.01)["LowGPUUtilization"]
    assert just_over.triggered


def test_batch_size_on_the_last_eight_snapshots(parsed, raw):
    cpu = instants(raw, "cpu_util_pct")  # the node's mean over its cores
    util, memory = gpu(raw, "gpu_util_pct"), gpu(raw, "gpu_mem_used_pct")
    windows = {
        k: np.percentile(v.to_numpy()[-8:], 95)
        for k, v in (("cpu", cpu), ("util", util), ("memory", memory))
    }
    assert max(windows.values()) < 70
    found = judge(parsed)["BatchSize"]
    assert verdict(found) == (True, 1, 1, 9)
    node = found.evidence["nodes"][NODE]
    assert node["cpu"] == approx(stats(cpu, SPREAD_POINTS))
    assert node["gpus"]["0"] == {
        "violations": 1,
        "util": approx(stats(util, SPREAD_POINTS)),
        "memory": approx(stats(memory, SPREAD_POINTS)),
        "window_p95_util": pytest.approx(windows["util"]),
        "window_p95_memory": pytest.approx(windows["memory"]),
        "window_p95_cpu": pytest.approx(windows["cpu"]),
    }
    assert [tuple(r)[:4] for r in found.time_ranges] == [(util.index[1], util.index[-1], NODE, 0)]
    busiest = max(windows, key=windows.__getitem__)
    key = {
        "cpu": "cpu_threshold_p95",
        "util": "gpu_threshold_p95",
        "memory": "gpu_memory_threshold_p95",
    }[busiest]
    at = {f"BatchSize_{key}": windows[busiest]}
    assert not judge(parsed, **at)["BatchSize"].triggered
    over = {f"BatchSize_{key}": windows[busiest] + 0.01}
    assert judge(parsed, **over)["BatchSize"].triggered


def snapshots(raw: Raw, busy_metric: str, gpu_below: float, busy_above: float) -> pd.DataFrame:
    """Per instant: some GPU below ``gpu_below``, some ``busy_metric`` device above
    ``busy_above``."""
    rows = raw.samples
    low = rows[rows["metric"] == "gpu_util_pct"].groupby("time_ns")["value"].min() < gpu_below
    busy = rows[rows["metric"] == busy_metric].groupby("time_ns")["value"].max() > busy_above
    frame = pd.DataFrame({"low_gpu": low, "busy": busy})
    return frame.assign(bottleneck=frame["low_gpu"] & frame["busy"])


@pytest.mark.parametrize(
    ("rule", "busy_metric", "thresholds", "busy_key"),
    [
        (
            "CPUBottleneck",
            "cpu_util_pct",  # one busy core is a busy CPU
            {"gpu_threshold": 12, "cpu_threshold": 50},
            "high_CPU_utilisation_datapoints",
        ),
        (
            "IOBottleneck",
            "cpu_iowait_pct",
            {"gpu_threshold": 70, "io_threshold": 0.1},
            "high_I/O_wait_datapoints",
        ),
    ],
)
def test_bottlenecks_on_the_nine_snapshots(parsed, raw, rule, busy_metric, thresholds, busy_key):
    gpu_below, busy_above = thresholds.values()
    snaps = snapshots(raw, busy_metric, gpu_below, busy_above)
    count = int(snaps["bottleneck"].sum())
    share = 100 * count / len(snaps)
    assert 0 < count < len(snaps)
    tuned = {f"{rule}_{k}": v for k, v in thresholds.items()}
    found = judge(parsed, **tuned, **{f"{rule}_threshold": share - 0.01})[rule]
    assert verdict(found) == (True, 1, count, 9)
    assert found.evidence == {
        "datapoints": 9,
        "bottlenecks": count,
        "bottleneck_pct": pytest.approx(share),
        "threshold_pct": pytest.approx(share - 0.01),
        "low_gpu_datapoints": int(snaps["low_gpu"].sum()),
        busy_key: int(snaps["busy"].sum()),
        "nodes": {NODE: {"datapoints": 9, "bottlenecks": count}},
        "bottleneck_pct_per_scan": [pytest.approx(share)],
    }
    # Each run of bottleneck instants, up to the next instant.
    times = snaps.index.to_numpy()
    flagged = np.flatnonzero(snaps["bottleneck"].to_numpy())
    assert all(i + 1 < len(times) for i in flagged)
    runs = np.split(flagged, np.flatnonzero(np.diff(flagged) > 1) + 1)
    assert [tuple(r)[:4] for r in found.time_ranges] == [
        (times[run[0]], times[run[-1] + 1], NODE, -1) for run in runs
    ]
    at_share = judge(parsed, **tuned, **{f"{rule}_threshold": share})[rule]
    assert not at_share.triggered and at_share.evaluated == 1


def test_bottlenecks_at_the_default_thresholds(parsed, raw):
    found = judge(parsed)
    cpu = snapshots(raw, "cpu_util_pct", 10, 90)
    io = snapshots(raw, "cpu_iowait_pct", 70, 50)
    assert cpu["busy"].sum() == io["busy"].sum() == 0  # no core past 90 %, I/O wait under 1 %
    for rule in ("CPUBottleneck", "IOBottleneck"):
        assert not found[rule].triggered and found[rule].evaluated == 1
        assert found[rule].evidence["bottlenecks"] == 0
    assert found["CPUBottleneck"].evidence["low_gpu_datapoints"] == cpu["low_gpu"].sum() == 1


def test_gpu_memory_increase_over_two_windows_of_four(parsed, raw):
    values = gpu(raw, "gpu_mem_used_pct").to_numpy()
    growth = [values[end - 4 : end].mean() - values[end - 8 : end - 4].mean() for end in (8, 9)]
    found = judge(parsed)["GPUMemoryIncrease"]
    # The GPU held 1.5 of its 85 GB throughout: no growth, and none at increase=0.
    assert max(growth) == 0 and 1.7 < values.min() == values.max() < 1.8
    assert verdict(found) == (False, 1, 0, 9)
    assert not judge(parsed, GPUMemoryIncrease_increase=0)["GPUMemoryIncrease"].triggered
    assert found.evidence == {
        "increase_threshold": 10,
        "nodes": {
            NODE: {
                "0": approx(
                    {"max_increase": max(growth), "episodes": 0, **stats(values, SPREAD_POINTS)}
                )
            }
        },
    }


def test_max_initialization_time_from_the_job_start(parsed, report, raw):
    first = int(raw.steps["start_ns"].min())
    last_end = int((raw.steps["start_ns"] + raw.steps["dur_ns"]).max())
    found = report["MaxInitializationTime"]
    assert (found["status"], found["evaluated"], found["datapoints"]) == ("no_issue", 1, 300)
    assert found["evidence"] == {
        "job_start_ns": STARTED_NS,
        "first_step_start_ns": first,
        "threshold_min": 20,
        "waited_s": pytest.approx((first - STARTED_NS) / NS_PER_S, abs=1e-9),
        "initialization_s": pytest.approx((first - STARTED_NS) / NS_PER_S, abs=1e-9),
        "training_loop_s": pytest.approx((last_end - first) / NS_PER_S, abs=1e-9),
        # The job's end reaches the rules through a float (insights.inputs._ns): 128 ns off.
        "finalization_s": pytest.approx((ENDED_NS - last_end) / NS_PER_S, abs=1e-6),
    }
    # 2.98 s of initialisation: a threshold of 0.049 min (2.94 s) is passed, 0.05 (3 s) is not.
    assert 2.94 < (first - STARTED_NS) / NS_PER_S < 3
    late = judge(parsed, MaxInitializationTime_threshold=0.049)["MaxInitializationTime"]
    assert late.triggered and late.time_ranges[0][:2] == (STARTED_NS, first)
    assert not judge(parsed, MaxInitializationTime_threshold=0.05)[
        "MaxInitializationTime"
    ].triggered


def test_step_outlier_on_the_300_steps(report, raw):
    durations = raw.steps["dur_ns"].to_numpy()
    mean, std = durations.mean(), durations.std()
    far = np.abs(durations - mean) > 5 * std
    found = report["StepOutlier"]
    assert (found["status"], found["evaluated"], found["datapoints"]) == ("no_issue", 1, 300)
    assert found["violations"] == far.sum() == 1  # step 6: 79 ms against a 3.8 ms median
    group = found["evidence"]["groups"][f"{NODE} rank 0 TRAIN"]
    p50, p95, p99 = np.percentile(durations, (50, 95, 99))
    assert group["stats"] == approx(
        {
            "count": 300,
            "mean_ns": mean,
            "std_ns": std,
            "min_ns": durations.min(),
            "p50_ns": p50,
            "p95_ns": p95,
            "p99_ns": p99,
            "max_ns": durations.max(),
        }
    )
    outliers = raw.steps[far].sort_values("dur_ns", ascending=False)
    assert group["outlier_steps"] == [
        {"step": int(s), "dur_ns": int(d)}
        for s, d in zip(outliers["step"], outliers["dur_ns"], strict=True)
    ]
    assert group["outlier_steps"][0]["step"] == 6
    counts, edges = np.histogram(durations[~far], bins=30)
    assert group["histogram"]["counts"] == counts.tolist()
    assert group["histogram"]["edges_ns"] == pytest.approx(edges.tolist())
    assert [(r["start_ns"], r["end_ns"], r["rank"]) for r in found["time_ranges"]] == [
        (int(s), int(s + d), 0)
        for s, d in zip(outliers["start_ns"], outliers["dur_ns"], strict=True)
    ]


def test_step_outlier_either_side_of_n_outliers(parsed, raw):
    durations = raw.steps["dur_ns"].to_numpy()
    # At 1 standard deviation many steps are outliers: n_outliers one below that count triggers.
    count = int((np.abs(durations - durations.mean()) > durations.std()).sum())
    assert count > 10
    over = judge(parsed, StepOutlier_stddev=1, StepOutlier_n_outliers=count - 1)["StepOutlier"]
    assert over.triggered and over.violations == count
    at = judge(parsed, StepOutlier_stddev=1, StepOutlier_n_outliers=count)["StepOutlier"]
    assert not at.triggered


def test_overall_framework_metrics_splits_annotations_and_gpu_time(report, raw):
    found = report["OverallFrameworkMetrics"]
    assert (found["status"], found["evaluated"]) == ("no_issue", 1)
    evidence = found["evidence"]
    # The annotations do not nest: each one's own time is its duration.
    annotated = raw.annotations.groupby("name")["dur_ns"].sum()
    by_phase = annotated.groupby(annotated.index.map(PHASE_OF)).sum()
    gpu_ns = int(raw.gpu_ops["dur_ns"].sum())
    assert evidence["phases"] == {
        "gpu": {"total_ns": gpu_ns, "pct": 100.0},  # no CPU operators recorded
        **{
            phase: {"total_ns": int(ns), "pct": pytest.approx(100 * ns / by_phase.sum())}
            for phase, ns in by_phase.items()
        },
    }
    forward, backward = by_phase["forward"], by_phase["backward"]
    assert evidence["forward_backward"] == approx(
        {
            "forward_pct": 100 * forward / (forward + backward),
            "backward_pct": 100 * backward / (forward + backward),
        }
    )
    per_gpu_op = raw.gpu_ops.groupby("name")["dur_ns"].sum().sort_values(ascending=False)
    share = 100 * per_gpu_op / gpu_ns
    assert evidence["top"]["gpu"] == [
        {"name": name, "total_ns": int(ns), "pct_of_phase": pytest.approx(share[name])}
        for name, ns in per_gpu_op[share >= 2].head(10).items()
    ]
    for phase, names in annotated.groupby(annotated.index.map(PHASE_OF)):
        assert evidence["top"][phase] == [  # one annotation name per phase in this job
            {"name": name, "total_ns": int(ns), "pct_of_phase": 100.0} for name, ns in names.items()
        ]
    steps_ns = int(raw.steps["dur_ns"].sum())
    span_ns = int((raw.steps["start_ns"] + raw.steps["dur_ns"]).max() - raw.steps["start_ns"].min())
    assert evidence["step_modes"] == {
        "TRAIN": {"total_ns": steps_ns, "pct": pytest.approx(100 * steps_ns / span_ns)},
        "others": {
            "total_ns": span_ns - steps_ns,
            "pct": pytest.approx(100 * (span_ns - steps_ns) / span_ns),
        },
    }
    kinds_names = raw.gpu_ops.groupby(["kind", "name"]).ngroups + len(annotated)
    assert found["datapoints"] == kinds_names
    top = by_phase.idxmax()
    largest = annotated[annotated.index.map(PHASE_OF) == top].sort_values(ascending=False)
    assert found["recommendation"] == (
        f"Most framework time is in {top} ({100 * by_phase[top] / by_phase.sum():.0f}%); the "
        f"largest items there are {', '.join(largest.index[:3])}."
    )


# A short job the way the collector records one: 53 sampling rounds 500 ms apart (26.5 s), as in
# the issue, far fewer than any patience. Each round stamps its samples with one time.
SHORT_ROUNDS = 53
ROUND_NS = 500_000_000
SHORT_T0 = 1_795_500_000_000_000_000
ROUND = np.arange(SHORT_ROUNDS)
SHORT_SERIES = {
    # GPU busy 5 % on even rounds, 40 % on odd ones: under-used, and starved on even rounds ...
    (SampleKind.GPU_UTIL_PCT, 0): np.where(ROUND % 2 == 0, 5.0, 40.0),
    # ... while one core is saturated: 27 CPU bottlenecks of 53 rounds (50.9 %, over 50).
    (SampleKind.CPU_UTIL_PCT, 0): np.where(ROUND % 2 == 0, 95.0, 20.0),
    **{(SampleKind.CPU_UTIL_PCT, core): np.full(SHORT_ROUNDS, 10.0) for core in (1, 2, 3)},
    # I/O wait high in the first 10 rounds only: 18.9 %, under 50.
    (SampleKind.CPU_IOWAIT_PCT, -1): np.where(ROUND < 10, 60.0, 0.0),
    # 20 % of the GPU's 80 GiB in use, then 35 % from round 27: 15 points up between halves
    # (the memory controller's busy share stays flat: it is not memory in use).
    (SampleKind.GPU_MEM_USED_BYTES, 0): np.where(ROUND < 27, 0.20, 0.35) * (80 << 30),
    (SampleKind.GPU_MEM_UTIL_PCT, 0): np.full(SHORT_ROUNDS, 20.0),
    (SampleKind.HOST_MEM_USED_BYTES, -1): np.full(SHORT_ROUNDS, 8.0e9),
}


@pytest.fixture(scope="module")
def short_report(django_db_setup, django_db_blocker, tmp_path_factory) -> dict:
    identity = Identity(
        node=NODE, hostname=NODE, rank=0, local_rank=0, world_size=1, node_count=1, pid=7
    )
    devices = [{"index": 0, "name": "NVIDIA H100", "total_memory_bytes": 80 << 30}]
    builder = ChunkBuilder("short", identity, "2.11.0", True, devices)
    times = SHORT_T0 + ROUND * ROUND_NS
    samples = [
        (int(kind), device, "", int(t), float(v))
        for (kind, device), values in SHORT_SERIES.items()
        for t, v in zip(times, values, strict=True)
    ]
    steps = [(int(EventKind.STEP), f"step_{i}", int(t), ROUND_NS, 7) for i, t in enumerate(times)]
    chunk = builder.build(steps, [], samples, {"nvml": "ok", "psutil": "ok"}, True)
    path = tmp_path_factory.mktemp("short") / chunk.name
    path.write_bytes(chunk.data)
    with django_db_blocker.unblock():
        return analysed("short-collector", [path], SHORT_T0 - 10**9, SHORT_T0 + 27 * 10**9)[0]


def short_note(waived: str, fitted: str) -> str:
    return (
        f"Short job: {waived} exceeds its data, so this verdict is taken once over all of the "
        f"{SHORT_ROUNDS} samples it has ({fitted})."
    )


@pytest.mark.parametrize(
    ("rule", "waived", "fitted"),
    [
        ("BatchSize", "patience=100, window=500", "patience=0, window=52"),
        ("CPUBottleneck", "patience=100", "patience=0"),
        ("IOBottleneck", "patience=1000", "patience=0"),
        ("GPUMemoryIncrease", "patience=100, window=500", "patience=0, window=26"),
        ("LowGPUUtilization", "patience=1000", "patience=0"),
    ],
)
def test_a_short_job_gets_the_verdict_its_samples_support_and_says_on_how_many(
    short_report, rule, waived, fitted
):
    found = short_report[rule]
    note = short_note(waived, fitted)
    assert found["not_evaluated_reason"] is None and found["evaluated"] == 1
    assert found["evidence"]["short_job"] == {"samples": SHORT_ROUNDS, "note": note}
    assert found["recommendation"].startswith(note + " ")
    assert found["params"]["patience"] != 0  # the job's parameters, as set


def test_the_short_jobs_verdicts_and_figures(short_report):
    gpu_util = SHORT_SERIES[(SampleKind.GPU_UTIL_PCT, 0)]
    cores = np.stack([SHORT_SERIES[(SampleKind.CPU_UTIL_PCT, c)] for c in range(4)])
    iowait = SHORT_SERIES[(SampleKind.CPU_IOWAIT_PCT, -1)]
    memory = 100 * SHORT_SERIES[(SampleKind.GPU_MEM_USED_BYTES, 0)] / (80 << 30)
    rules = short_report

    low = rules["LowGPUUtilization"]
    p5, p95 = np.percentile(gpu_util, (5, 95))
    assert (low["status"], low["evidence"]["issues"]) == ("issue_found", ["under-used"])
    figures = low["evidence"]["nodes"][NODE]["0"]
    assert (figures["window_p95"], figures["window_p5"]) == (pytest.approx(p95), pytest.approx(p5))
    assert p95 < 70

    cpu_bottleneck = (gpu_util < 10) & (cores.max(axis=0) > 90)
    cpu = rules["CPUBottleneck"]
    assert cpu["status"] == "issue_found"
    assert (cpu["evidence"]["bottlenecks"], cpu["evidence"]["datapoints"]) == (
        cpu_bottleneck.sum(),
        SHORT_ROUNDS,
    )
    assert cpu["evidence"]["bottleneck_pct"] == pytest.approx(100 * cpu_bottleneck.mean())
    assert 100 * cpu_bottleneck.mean() > 50

    io_bottleneck = (gpu_util < 70) & (iowait > 50)
    io = rules["IOBottleneck"]
    assert io["status"] == "no_issue"
    assert io["evidence"]["bottleneck_pct"] == pytest.approx(100 * io_bottleneck.mean())
    assert 100 * io_bottleneck.mean() < 50

    growth = [
        memory[end - 26 : end].mean() - memory[end - 52 : end - 26].mean() for end in (52, 53)
    ]
    increase = rules["GPUMemoryIncrease"]
    assert increase["status"] == "issue_found" and increase["violations"] == 1
    assert increase["evidence"]["nodes"][NODE]["0"]["max_increase"] == pytest.approx(max(growth))
    assert min(growth) > 10

    batch = rules["BatchSize"]
    window = {
        "window_p95_util": np.percentile(gpu_util[-52:], 95),
        "window_p95_memory": np.percentile(memory[-52:], 95),
        "window_p95_cpu": np.percentile(cores.mean(axis=0)[-52:], 95),
    }
    assert max(window.values()) < 70
    assert batch["status"] == "issue_found"
    gpu0 = batch["evidence"]["nodes"][NODE]["gpus"]["0"]
    assert {key: gpu0[key] for key in window} == approx(window)
