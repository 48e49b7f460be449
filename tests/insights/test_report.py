"""ProfilerReport: JSON form and the self-contained HTML page."""

import json
import re
from html import escape

import pytest

from profiler_app.analysis.frames import CPU_UTIL, GPU_MEM_USED_PCT, GPU_UTIL
from profiler_app.insights.pure.report import profiler_report, report_json
from profiler_app.insights.pure.report_analyses import render_analyses
from profiler_app.insights.pure.report_html import render_html
from profiler_app.insights.pure.rules.base import NONE_RECORDED
from profiler_app.profiles.pure.links import TimeRange, timeline_url
from tests.insights.series import T0, job, series, steps
from tests.purity import run_without_django

NEEDS = f": {NONE_RECORDED}"  # synthetic collector jobs: samples, but not these


@pytest.fixture
def bottlenecked_job():
    return job(
        series(GPU_UTIL, [5.0] * 300),
        series(GPU_MEM_USED_PCT, [20.0] * 300),
        series(CPU_UTIL, [95.0] * 300),
        steps=steps([10**8] * 20, start_ns=T0),
        job_start_ns=T0,
    )


def test_it_reports_every_rule_with_its_status(bottlenecked_job):
    report = profiler_report(bottlenecked_job, {"CPUBottleneck_threshold": 40}, job_name="resnet")
    data = report_json(report, base_url="https://profiler.example")
    assert data["job"] == "resnet"
    assert data["origin_ns"] == T0
    assert [r["rule"] for r in data["rules"]][:3] == [
        "BatchSize",
        "CPUBottleneck",
        "GPUMemoryIncrease",
    ]
    assert "CPUBottleneck" in data["summary"]["issue_found"]
    assert "IOBottleneck" in data["summary"]["not_evaluated"]
    cpu = next(r for r in data["rules"] if r["rule"] == "CPUBottleneck")
    assert cpu["params"]["threshold"] == 40
    # The range with a tenth of its length around it (3 s of 30 s), in the timeline's terms.
    assert cpu["time_ranges"][0]["timeline_url"] == (
        f"https://profiler.example/timeline?t={T0 - 3 * 10**9}_{T0 + 33 * 10**9}"
    )
    io = next(r for r in data["rules"] if r["rule"] == "IOBottleneck")
    assert io["not_evaluated_reason"] == "not evaluated: no I/O wait samples" + NEEDS
    assert json.loads(json.dumps(data)) == data  # plain JSON, no numpy values


def test_it_links_a_finding_to_its_job_rank_and_event():
    found = TimeRange(5_000_000, 9_000_000, "", -1, rank=3, event="12:@40")
    assert timeline_url(found, job_id=7) == "/jobs/7/timeline?t=4600000_9400000&ranks=3&sel=12:@40"
    # At least a microsecond around an instant.
    assert timeline_url(TimeRange(5, 9, "algo-2", 3)) == "/timeline?t=-995_1009"


def test_it_renders_a_self_contained_html_report(bottlenecked_job):
    html = render_html(
        report_json(profiler_report(bottlenecked_job, job_name="resnet <50>")),
        base_url="https://profiler.example",
        job_info={"Instance type": "ml.p3.2xlarge"},
    )
    assert html.startswith("<!DOCTYPE html>")
    assert "resnet &lt;50&gt;" in html
    assert html.count("<svg") >= 3
    assert "Not evaluated" in html and "no I/O wait samples" in html
    assert "ml.p3.2xlarge" in html
    # No scripts and no external assets: only the timeline links point elsewhere.
    assert "<script" not in html
    assert not re.search(r'\bsrc="', html)
    external = re.findall(r'href="(https?://[^"]+)"', html)
    assert external and all(u.startswith("https://profiler.example/timeline?") for u in external)


def test_it_refuses_an_unknown_override(bottlenecked_job):
    with pytest.raises(ValueError, match="unknown rule"):
        profiler_report(bottlenecked_job, {"Foo_bar": 1})


def test_it_imports_without_django():
    """The insights package is pure: with Django and Celery unimportable it loads and runs."""
    code = """
    import profiler_app.analysis
    import profiler_app.analysis.framework
    import profiler_app.insights.pure.report_html
    from profiler_app.analysis.frames import JobData
    from profiler_app.insights.pure.report import profiler_report
    print(len(profiler_report(JobData.empty()).results))
    """
    assert run_without_django(code) == "10"


@pytest.mark.parametrize(
    ("window", "label"),
    [
        ("whole_trace", "whole trace"),
        (
            "complete_steps",
            "complete steps: from the trace's start to step #6's start (#1–#5, 5 of 6 steps)",
        ),
        ("complete_steps", "captured steps 3–6, 53–56 (8 of 160)"),
    ],
)
def test_its_analyses_caption_names_the_window_they_were_computed_in(window, label):
    html = render_analyses({"window": {"window": window, "label": label}, "temporal": []})
    caption = f"Every table and chart below covers the job's window: {label}."
    assert f"<p>{escape(caption)}</p>" in html
    assert "complete steps of each rank" not in html
    assert "the operator table covers the whole trace" not in html
