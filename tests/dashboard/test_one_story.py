"""Every page takes a figure over the same thing, gives one step time, and the complete-steps
window cuts every figure at one place.

Two real jobs of one ResNet-50 loop on an NVIDIA H200 (tests/data/README.md): the collector
job of ``h200_resnet50_collector_2026-11-26.tar.gz``'s spool (Kineto recorded 16 of 160 steps),
and the same tarball's torch.profiler trace (``tb/``, 4 ProfilerSteps, the last cut short).
Both go through the server's ingest; every expected figure comes from their raw events.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from statistics import median

import numpy as np
import pytest

from profiler_app.analysis import RankTrace
from profiler_app.cluster.compare import annotation_totals, compare, step_stats
from profiler_app.cluster.queries import cluster
from profiler_app.core.models import TrainingJob
from profiler_app.dashboard.queries import dashboard
from profiler_app.history import logic as history
from profiler_app.insights import logic as insights
from profiler_app.insights.models import JobInsights
from profiler_app.profiles.models import PartSummary
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests import h200
from tests.insights.converted import Converted, read_converted
from tests.traces.expected import launched_before_last_step, ns
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

pytestmark = pytest.mark.django_db

GPU_OPS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHERS = ("cuda_runtime", "cuda_driver")


@pytest.fixture(scope="module")
def raw(h200_unpacked) -> Converted:
    return read_converted(h200.spool_chunks(h200_unpacked))


@pytest.fixture(scope="module")
def tb_events(h200_unpacked) -> list[dict]:
    [path] = (h200_unpacked / "tb").glob("*.json.gz")
    with gzip.open(path) as f:
        doc = json.load(f, parse_float=Decimal)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def captured_ns(raw: Converted) -> list[int]:
    return [raw.steps[s][1] - raw.steps[s][0] for s in raw.captured]


def test_the_dashboard_takes_kernel_shares_over_the_captured_steps(h200_collector_job, raw):
    found = dashboard(h200_collector_job, WHOLE_TRACE)
    assert found["gpus"] == 1
    assert found["over"] == {
        "what": "captured steps",
        "ns": raw.step_ns,
        "steps": 16,
        "label": "the 16 captured steps' time",
    }
    kernels = raw.kernel_ns
    top = found["kernel_time"]["top"]
    assert found["kernel_time"]["total_ns"] == sum(kernels.values())
    assert {r["name"]: r["total_ns"] for r in top} == kernels
    # The shares the panels draw (total ÷ over.ns × gpus): a batch-norm kernel's is a few
    # percent of the captured steps, not the 0.2 % of the 40 s profile span.
    busiest_bn = max((r for r in top if "batch_norm" in r["name"]), key=lambda r: r["total_ns"])
    share = 100 * kernels[busiest_bn["name"]] / raw.step_ns
    assert 100 * busiest_bn["total_ns"] / found["over"]["ns"] == share
    assert share > 1 and found["profile_ns"] > 20 * raw.step_ns


def test_it_gives_one_step_time_on_dashboard_cluster_and_history(h200_collector_job, raw):
    expected = int(median(captured_ns(raw)))
    one = {"median_ns": expected, "steps": 16, "label": "median of 16 captured steps"}
    assert dashboard(h200_collector_job, WHOLE_TRACE)["step_time"] == one
    assert cluster(h200_collector_job, WHOLE_TRACE, None)["step_time"] == one
    figures = history.summary_figures(
        h200_collector_job, WHOLE_TRACE, history.run_figures(h200_collector_job, WHOLE_TRACE)
    )
    assert figures["step_p50_ns"] == expected
    # The Cluster's per-rank figure is the mean captured step, named so, not the step time.
    [rank] = cluster(h200_collector_job, WHOLE_TRACE, None)["ranks"]
    assert rank["dur_ns"] == round(sum(captured_ns(raw)) / 16)
    # The distribution shows every annotated step, and says so.
    assert len(dashboard(h200_collector_job, WHOLE_TRACE)["steps"]["durations_ns"]) == 160


def test_the_cluster_names_the_gpu_of_the_collector_job_as_of_the_trace(
    h200_collector_job, h200_trace_job, h200_unpacked, tb_events
):
    """The same H200 by name and memory, whether the collector's chunk meta (what it read from
    the driver) or the trace's deviceProperties said it."""
    [chunk] = h200.spool_chunks(h200_unpacked)[:1]
    with np.load(chunk) as npz:
        [driver] = json.loads(npz["meta"].tobytes())["devices"]
    [path] = (h200_unpacked / "tb").glob("*.json.gz")
    with gzip.open(path) as f:
        [kineto] = json.load(f)["deviceProperties"]
    assert (driver["name"], driver["total_memory_bytes"]) == ("NVIDIA H200", 150_109_880_320)
    for job, said in ((h200_collector_job, driver), (h200_trace_job, kineto)):
        [device] = cluster(job, WHOLE_TRACE, None)["devices"]
        assert (device["rank"], device["device"]) == (0, 0)
        assert device["name"] == said["name"] == "NVIDIA H200"
        memory = said.get("total_memory_bytes") or said["totalGlobalMem"]
        assert device["memory_bytes"] == memory == 150_109_880_320


def test_the_switch_says_it_changes_nothing_on_a_sampled_job(h200_collector_job):
    whole, complete = (
        dashboard(h200_collector_job, WHOLE_TRACE),
        dashboard(h200_collector_job, COMPLETE_STEPS),
    )
    assert complete["window"]["switch_note"].startswith("The switch changes nothing here")
    assert complete["window"]["steps_dropped"] == 0
    for key in ("over", "step_time", "totals", "kernel_time", "memory_ops"):
        assert whole[key] == complete[key], key


def tb_figures(events: list[dict], complete: bool) -> dict:
    cut, launched = launched_before_last_step(events)
    ops = [e for e in events if e.get("cat") in GPU_OPS]
    if complete:
        ops = [e for e in ops if e["args"].get("correlation") in launched]
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    if complete:
        steps = [s for s in steps if s[0] < cut]
    return {
        "kernel_ns": sum(ns(e["dur"]) for e in ops if e["cat"] == "kernel"),
        "kernel_runs": sum(1 for e in ops if e["cat"] == "kernel"),
        "copy_ns": sum(ns(e["dur"]) for e in ops if e["cat"] == "gpu_memcpy"),
        "memory_ns": sum(ns(e["dur"]) for e in ops if e["cat"] != "kernel"),
        "steps": [d for _, d in steps],
    }


@pytest.mark.parametrize("window", [WHOLE_TRACE, COMPLETE_STEPS])
def test_the_complete_steps_window_cuts_every_figure_at_one_place(
    h200_trace_job, tb_events, window
):
    expected = tb_figures(tb_events, window == COMPLETE_STEPS)
    found = dashboard(h200_trace_job, window)
    assert found["totals"]["kernel_ns"] == expected["kernel_ns"]
    assert found["totals"]["kernel_runs"] == expected["kernel_runs"]
    assert found["totals"]["memory_ns"] == expected["memory_ns"]
    copies = sum(r["total_ns"] for r in found["memory_ops"]["rows"] if r["kind"] != "Memset")
    assert copies == expected["copy_ns"]
    assert found["steps"]["durations_ns"] == expected["steps"]
    assert found["step_time"]["median_ns"] == int(median(expected["steps"]))
    assert cluster(h200_trace_job, window, None)["step_time"] == found["step_time"]
    figures = history.summary_figures(
        h200_trace_job, window, history.run_figures(h200_trace_job, window)
    )
    assert figures["step_p50_ns"] == found["step_time"]["median_ns"]
    assert figures["steps"] == len(expected["steps"])
    info = found["window"]
    assert (info["steps_total"], info["steps_kept"]) == (4, len(expected["steps"]))
    assert info["steps_dropped"] == 4 - len(expected["steps"])
    assert info["switch_note"] is None


def test_the_dropped_step_is_the_last_one_with_its_copy(tb_events):
    whole, complete = tb_figures(tb_events, False), tb_figures(tb_events, True)
    assert (len(whole["steps"]), len(complete["steps"])) == (4, 3)
    # The last step's pageable copy (about 14 ms) is what the cut leaves out of the copies.
    assert 13e6 < whole["copy_ns"] - complete["copy_ns"] < 16e6


def test_the_rules_read_launches_and_copies_cut_at_the_same_place(h200_trace_job, tb_events):
    """What the insights read of the trace in the complete-steps window (``complete_steps``):
    the launches, copies and steps before the last step's start, as the Dashboard's."""
    cut, _ = launched_before_last_step(tb_events)
    [summary] = PartSummary.objects.filter(job=h200_trace_job)
    trace = RankTrace.from_store(0, summary.fetch_store(), summary.part_id).complete_steps()
    kind = trace.events["kind"].to_numpy()
    launches = np.isin(kind, [EventKind.CUDA_RUNTIME, EventKind.CUDA_DRIVER])
    expected = [e for e in tb_events if e.get("cat") in LAUNCHERS]
    assert launches.sum() == sum(1 for e in expected if ns(e["ts"]) < cut) < len(expected)
    copies = kind == EventKind.GPU_MEMCPY
    dur = trace.events["dur_ns"].to_numpy()
    assert dur[copies].sum() == tb_figures(tb_events, True)["copy_ns"]
    steps = trace.events["name"].map(lambda i: str(trace.names[i]).startswith("ProfilerStep#"))
    host_steps = steps.to_numpy() & (kind == EventKind.USER_ANNOTATION)
    assert host_steps.sum() == 3


def test_compare_gives_the_same_step_time_over_the_same_steps(h200_collector_job, raw):
    stats = step_stats(h200_collector_job, WHOLE_TRACE)
    assert stats["p50_ns"] == int(median(captured_ns(raw)))
    assert stats["count"] == 16


def test_compare_takes_a_collector_jobs_annotations_over_its_captured_steps(
    h200_collector_job, h200_unpacked, raw
):
    """The collector annotates all 160 steps; Compare divides by the 16 captured ones, so it
    sums the annotations in those 16 (as the Call tree does), not all 160."""
    phases: dict[str, list[int]] = {"Forward": [], "Backward": [], "Optimizer": []}
    for path in h200.spool_chunks(h200_unpacked):
        chunk = read_chunk(path)
        events = chunk.events
        for name, start, dur in zip(
            events["ev_name"], events["ev_start_ns"], events["ev_dur_ns"], strict=True
        ):
            label = chunk.strings[int(name)]
            in_captured = any(lo <= start < hi for lo, hi in raw.windows)
            if label in phases and in_captured:
                phases[label].append(int(dur))
    rows = compare(h200_collector_job, h200_collector_job, WHOLE_TRACE)["annotations"]["rows"]
    assert rows == []  # nothing changed against itself
    totals = annotation_totals(h200_collector_job, WHOLE_TRACE).set_index("name")
    for phase, durations in phases.items():
        assert len(durations) == 16
        assert totals.loc[phase, "count"] == 16
        assert totals.loc[phase, "total_ns"] == sum(durations)


def _rules(job: TrainingJob, window: str) -> dict[str, dict]:
    """The job's recommendations in ``window``, computed as a worker does."""
    insights.request_run(job.id, delay_s=3600, window=window)
    insights.compute(job.id, JobInsights.objects.get(job=job, window=window).generation, window)
    report = JobInsights.objects.get(job=job, window=window).report
    return {r["rule"]: r for r in report["recommendations"]}


def test_the_rules_read_the_complete_steps_as_the_pages_do(h200_trace_job, tb_events):
    _, launched = launched_before_last_step(tb_events)
    pageable = [
        ns(e["dur"])
        for e in tb_events
        if e.get("cat") == "gpu_memcpy"
        and "Pageable" in e["name"]
        and e["args"]["correlation"] in launched
    ]
    whole, complete = _rules(h200_trace_job, WHOLE_TRACE), _rules(h200_trace_job, COMPLETE_STEPS)
    copies = complete["HostToDeviceCopies"]["evidence"]["ranks"]["0"]
    assert copies["steps"] == 3
    assert (copies["pageable_copies"], copies["pageable_ns"]) == (len(pageable), sum(pageable))
    assert copies["step_ns"] == sum(tb_figures(tb_events, True)["steps"])
    assert complete["DataLoading"]["evidence"]["ranks"]["0"]["steps"] == 3
    # Launches and steps are cut together, so the launch rule's verdict does not flip.
    assert complete["LaunchOverhead"]["status"] == whole["LaunchOverhead"]["status"]
