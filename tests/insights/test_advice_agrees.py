"""The report's advice agrees with itself (``rules.causes``), on the job of issue 46: a
ResNet-50 loop on an NVIDIA H200 whose DataLoader copies from pageable memory.

- The collector spool (``h200_resnet50_collector_2026-11-26.tar.gz``, tests/data/README.md):
  the GPU is under-used because it waits on pageable host-to-device copies; LowGPUUtilization
  and BatchSize name them as their cause and do not advise a larger batch.
- The torch.profiler trace of the same loop (``tb/`` in the same tarball): the framework
  summary states data loading in the DataLoading rule's figure, never "a large share".

Both jobs go the server's way (stored, parsed, analysed as a worker does); every expected
figure comes from the chunks' arrays (``tests.insights.converted``) or the trace's JSON.
"""

from __future__ import annotations

import gzip
import json
import tarfile
from pathlib import Path

import pytest

from profiler_app.analysis.frames import CPU_UTIL, GPU_MEM_USED_PCT, GPU_UTIL
from profiler_app.core.logic import PartSource, delete_job, store_part
from profiler_app.core.models import TrainingJob
from profiler_app.insights.models import RuleOverrides
from profiler_app.insights.pure.report import profiler_report, report_json
from profiler_app.insights.pure.report_html import render_html
from profiler_app.insights.pure.rules.base import result
from profiler_app.insights.pure.rules.recommendations.host import DataLoadingParams
from tests.insights.converted import Converted, read_converted
from tests.insights.helpers import compute_here, rules_by_name
from tests.insights.series import job as series_job
from tests.insights.series import series
from tests.insights.test_converted_chunks import TARBALL, pageable_copies
from tests.timeline.jobs import parse_paths, parse_stored

pytestmark = pytest.mark.django_db

UNDER_USE = ("LowGPUUtilization", "BatchSize")
# The batch-size advice of each under-use rule, as it stands when nothing explains the under-use.
BATCH_ADVICE = {
    "LowGPUUtilization": "increase the batch size",
    "BatchSize": "Increase the batch size",
}


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("h200")
    with tarfile.open(TARBALL) as archive:
        archive.extractall(folder, filter="data")
    return folder


@pytest.fixture(scope="module")
def raw(unpacked) -> Converted:
    return read_converted(sorted((unpacked / "spool").glob("*/*/*.pcol")))


@pytest.fixture(scope="module")
def collector_job(unpacked, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        job = TrainingJob.objects.create(name="h200-resnet50-bf16", status="completed")
        for path in sorted((unpacked / "spool").glob("*/*/*.pcol")):
            with path.open("rb") as stream:
                part, _ = store_part(job, PartSource("vm", 0, "collector", path.name), stream)
            parse_stored(part.id)
        yield job
        delete_job(job)


@pytest.fixture(scope="module")
def collector(collector_job, django_db_blocker) -> dict[str, dict]:
    with django_db_blocker.unblock():
        return rules_by_name(compute_here(collector_job))


@pytest.fixture(scope="module")
def trace_path(unpacked) -> Path:
    [path] = (unpacked / "tb").glob("*.pt.trace.json.gz")
    return path


@pytest.fixture(scope="module")
def imported(trace_path, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        job = parse_paths(None, "h200-resnet50-tb", [("vm", 0, trace_path)])
        yield rules_by_name(compute_here(job))
        delete_job(job)


def test_the_h200_gpu_waits_on_pageable_copies_not_on_a_small_batch(collector, raw):
    copies = collector["HostToDeviceCopies"]
    assert copies["status"] == "issue_found"
    share = 100 * sum(pageable_copies(raw)) / raw.step_ns
    assert copies["evidence"]["ranks"]["0"]["pageable_pct_of_steps"] == pytest.approx(share)
    for rule in UNDER_USE:
        found = collector[rule]
        assert found["status"] == "issue_found"  # the GPU is under-used: the rule still fires
        assert found["caused_by"] == "HostToDeviceCopies"
        advice = found["recommendation"]
        assert "batch size" not in advice.lower()
        assert f"host-to-device copies from pageable memory take {share:.1f}%" in advice
        assert "pin_memory=True" in advice and "non_blocking=True" in advice
    usage = collector["OverallSystemUsage"]["recommendation"]
    assert "lightly used" in usage and "batch" not in usage.replace("BatchSize", "")
    for rule, found in collector.items():
        if rule not in UNDER_USE:
            assert found["caused_by"] is None, rule


def test_the_rule_order_puts_the_largest_wait_first(collector, raw):
    """Synchronisations also hold the host (a wait of their own): stated in their rule's
    figure, after the copies that take more of the captured steps."""
    sync = collector["Synchronization"]
    assert sync["status"] == "issue_found"
    waiting = sync["evidence"]["ranks"]["0"]["share_pct"]
    assert waiting < 100 * sum(pageable_copies(raw)) / raw.step_ns
    for rule in UNDER_USE:
        advice = collector[rule]["recommendation"]
        assert f"synchronisations takes {waiting:.1f}% (Synchronization)" in advice
        assert advice.index("HostToDeviceCopies") < advice.index("Synchronization")


def test_without_the_waits_the_under_used_gpu_gets_the_batch_size_advice(
    collector_job, django_db_blocker
):
    """The same job, with thresholds under which the copies, synchronisations and launches
    are no issue: nothing explains the under-use, and the batch-size advice is back. (Of the
    launches HTA counts, 50.3 % are short kernels, just over LaunchOverhead's 50 %.)"""
    with django_db_blocker.unblock():
        RuleOverrides.objects.create(
            job=collector_job,
            params={
                "HostToDeviceCopies_pageable_pct": 100,
                "HostToDeviceCopies_small_copies_per_step": 100,
                "Synchronization_threshold_pct": 100,
                "LaunchOverhead_short_kernel_pct": 100,
            },
        )
        try:
            found = rules_by_name(compute_here(collector_job))
        finally:
            RuleOverrides.objects.filter(job=collector_job).delete()
    assert found["HostToDeviceCopies"]["status"] == found["Synchronization"]["status"]
    assert found["Synchronization"]["status"] == "no_issue"
    for rule in UNDER_USE:
        assert found[rule]["status"] == "issue_found"
        assert found[rule]["caused_by"] is None
        assert BATCH_ADVICE[rule] in found[rule]["recommendation"]


def trace_events(path: Path) -> list[dict]:
    with gzip.open(path) as stream:
        return [e for e in json.load(stream)["traceEvents"] if e.get("ph") == "X"]


def ns(us: float) -> int:
    return round(us * 1000)


def data_loading_share(path: Path) -> float:
    """Per cent of the ProfilerStep annotations' time covered by the DataLoader's
    ``__next__`` annotations that start inside one (nested ones once), from the JSON."""
    events = trace_events(path)
    steps = [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    ]
    loading = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e["name"].startswith("enumerate(DataLoader)")
        and any(start <= ns(e["ts"]) < end for start, end in steps)
    )
    covered, reached = 0, None
    for start, end in loading:
        if reached is None or start >= reached:
            covered += end - start
            reached = end
        elif end > reached:
            covered += end - reached
            reached = end
    assert len(steps) == 4 and len(loading) == 4
    return 100 * covered / sum(end - start for start, end in steps)


def test_the_framework_summary_states_data_loading_in_the_data_loading_figure(imported, trace_path):
    share = data_loading_share(trace_path)
    loading = imported["DataLoading"]
    assert loading["status"] == "no_issue"
    assert loading["evidence"]["ranks"]["0"]["share_pct"] == pytest.approx(share)
    summary = imported["OverallFrameworkMetrics"]["recommendation"]
    assert "large share" not in summary and "DataLoader workers" not in summary
    window = loading["evidence"]["ranks"]["0"]["window"]
    assert f"Data loading takes {share:.1f}% of the {window} (DataLoading: no issue)." in summary


def test_the_collector_summary_says_nothing_of_data_loading_it_did_not_record(collector):
    """No DataLoader annotation in the captured steps: DataLoading says it cannot tell (never
    0 %), and the summary makes no statement about data loading at all."""
    assert collector["DataLoading"]["status"] == "not_evaluated"
    assert "no data-loader events" in collector["DataLoading"]["not_evaluated_reason"]
    summary = collector["OverallFrameworkMetrics"]["recommendation"]
    assert "Data loading" not in summary and "large share" not in summary


def test_the_imported_trace_names_its_pageable_copies_as_the_cause_of_idle_gpu(
    imported, trace_path
):
    """Kernel busy time alternates between busy and idle; the pageable copies (from the
    JSON: launched in a step, by their runtime call's correlation) are named as the cause."""
    events = trace_events(trace_path)
    steps = [
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    ]
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime"
        and any(start <= ns(e["ts"]) < end for start, end in steps)
    }
    pageable_ns = sum(
        ns(e["dur"])
        for e in events
        if e.get("cat") == "gpu_memcpy"
        and "Pageable" in e["name"]
        and e["args"]["correlation"] in launched
    )
    share = 100 * pageable_ns / sum(end - start for start, end in steps)
    low = imported["LowGPUUtilization"]
    assert low["status"] == "issue_found" and low["caused_by"] == "HostToDeviceCopies"
    assert f"host-to-device copies from pageable memory take {share:.1f}%" in low["recommendation"]
    assert "batch size" not in low["recommendation"].lower()


def under_used_job():
    """Every sample of CPU, GPU and GPU memory at 30 %: a GPU truly under-used."""
    n = 501
    return series_job(
        series(CPU_UTIL, [30.0] * n),
        series(GPU_UTIL, [30.0] * n),
        series(GPU_MEM_USED_PCT, [30.0] * n),
    )


def data_loading(share_pct: float, triggered: bool):
    """DataLoading's result on one rank spending ``share_pct`` of its steps on the next batch."""
    return result(
        "DataLoading",
        DataLoadingParams(),
        evaluated=1,
        trigger_count=int(triggered),
        violations=int(triggered),
        datapoints=10,
        evidence={
            "ranks": {"0": {"steps": 10, "window": "annotated steps", "share_pct": share_pct}}
        },
        recommendation="",
    )


def test_a_gpu_under_used_with_nothing_to_wait_on_gets_the_batch_size_advice():
    for recommendations in ((), (data_loading(2.0, triggered=False),)):
        report = profiler_report(under_used_job(), recommendations=recommendations)
        found = {r.rule: r for r in report.results}
        for rule in UNDER_USE:
            assert found[rule].triggered and found[rule].caused_by is None
            assert BATCH_ADVICE[rule] in found[rule].recommendation


def test_a_data_loader_wait_is_named_as_the_cause_of_the_idle_gpu():
    report = profiler_report(under_used_job(), recommendations=(data_loading(30.5, True),))
    found = {r.rule: r for r in report.results}
    for rule in UNDER_USE:
        assert found[rule].caused_by == "DataLoading"
        advice = found[rule].recommendation
        assert "waiting for the next batch takes 30.5% of the annotated steps" in advice
        assert "more DataLoader workers" in advice and "batch size" not in advice.lower()


def test_the_report_page_links_a_finding_to_its_cause():
    report = profiler_report(under_used_job(), recommendations=(data_loading(30.5, True),))
    data = report_json(report)
    assert [r["caused_by"] for r in data["rules"] if r["rule"] in UNDER_USE] == ["DataLoading"] * 2
    html = render_html(data)
    assert html.count('Caused by <a href="#DataLoading">DataLoading</a>.') == 2
