"""Every figure that two pages name has one value there, on a sampled job and on an imported
trace, in either window, through the API as the pages read it.

The jobs are the H200 ResNet-50 loop of tests/data (README there): the collector's spool (Kineto
recorded 16 of 160 steps) and the torch.profiler trace of the same loop (4 ProfilerSteps, the
last cut short). Each figure is also computed here from the raw events (the chunks' arrays, the
trace's JSON) without the product's code:

- step time: Dashboard, Cluster, History, Compare and the headline (the median of the window's
  captured steps), and the run verdict and the report name it the same way;
- kernel time and the busiest kernel (its time, its share): Dashboard, Insights, the report,
  Compare, History;
- the steps' time the shares are of, and the copy share: headline and Insights;
- GPU utilisation (NVML mean over the run): headline, Dashboard, History.
"""

from __future__ import annotations

import gzip
import html
import json
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from profiler_app.core.logic import delete_job
from profiler_app.history import logic as history
from profiler_app.history.models import Series
from profiler_app.insights import logic as insights
from profiler_app.insights.models import JobInsights
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests import h200
from tests.dashboard.test_headline import chunk_parts, nvml_utilisation, part_of, sweep
from tests.insights.converted import read_converted
from tests.traces.expected import ns
from tracefmt.chunk import read_chunk
from tracefmt.kinds import MemcpyKind

pytestmark = pytest.mark.django_db
WINDOWS = (WHOLE_TRACE, COMPLETE_STEPS)


@dataclass(frozen=True)
class Raw:
    """What the raw events say of a job in a window."""

    steps_ns: list[int]  # the captured steps' durations
    kernels: dict[str, int]  # name -> summed duration
    pageable_in_steps_ns: int  # pageable host-to-device copies launched in the steps
    breakdown: dict[str, int]  # the headline's parts, by a sweep over event boundaries
    nvml_pct: list[float]  # every NVML utilisation sample of the run


def collector_raw(folder: Path) -> Raw:
    """The collector job: the same figures in either window (its captures are whole steps)."""
    paths = h200.spool_chunks(folder)
    converted = read_converted(paths)
    captured = set(converted.captured)
    pageable = sum(
        op.dur_ns
        for op in converted.gpu_ops
        if op.memcpy_kind == MemcpyKind.HTOD and "Pageable" in op.name and op.step in captured
    )
    steps = sorted(converted.steps[s] for s in captured)
    chunks = [read_chunk(path) for path in paths]
    return Raw(
        steps_ns=[b - a for a, b in steps],
        kernels=converted.kernel_ns,
        pageable_in_steps_ns=pageable,
        breakdown=sweep(steps, chunk_parts(chunks)),
        nvml_pct=nvml_utilisation(chunks),
    )


def trace_raw(folder: Path, window: str) -> Raw:
    """The torch.profiler trace: complete steps end where its last ProfilerStep starts, and keep
    the GPU work launched before."""
    [path] = (folder / "tb").glob("*.json.gz")
    with gzip.open(path) as f:
        events = [e for e in json.load(f, parse_float=Decimal)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    cut = steps[-1][0]
    launch_start = {
        e["args"]["correlation"]: ns(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    if window == COMPLETE_STEPS:
        steps = steps[:-1]

    def kept(event: dict) -> bool:
        launched = launch_start.get(event["args"].get("correlation"))
        return window == WHOLE_TRACE or (launched is not None and launched < cut)

    kernels: dict[str, int] = defaultdict(int)
    for e in events:
        if e.get("cat") == "kernel" and kept(e):
            kernels[e["name"]] += ns(e["dur"])

    def in_a_step(e: dict) -> bool:
        launched = launch_start.get(e["args"].get("correlation"))
        return launched is not None and any(a <= launched < b for a, b in steps)

    pageable = sum(
        ns(e["dur"])
        for e in events
        if e.get("cat") == "gpu_memcpy" and "Pageable" in e["name"] and in_a_step(e)
    )
    parts = []
    for e in events:
        part = part_of(e.get("cat", ""), e.get("name", ""))
        if part:
            parts.append((part, ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0))))
    return Raw(
        steps_ns=[b - a for a, b in steps],
        kernels=dict(kernels),
        pageable_in_steps_ns=pageable,
        breakdown=sweep(steps, parts),
        nvml_pct=[],
    )


@pytest.fixture(scope="module")
def jobs(h200_unpacked, django_db_setup, django_db_blocker):
    """The two jobs, owned by one person (who sets their window), each in its own series."""
    with django_db_blocker.unblock():
        owner = get_user_model().objects.create_user("pages-owner", password="pages-owner-1")
        found = {
            "collector": h200.stored_job(
                "h200-collector", h200.spool_chunks(h200_unpacked), "collector", owner=owner
            ),
            "trace": h200.stored_job(
                "h200-trace", h200.tb_traces(h200_unpacked), "kineto", owner=owner
            ),
        }
        # One series, the collector job its baseline: the trace's verdict names both step times.
        for job in found.values():
            history.assign(job, "h200-resnet50")
        Series.objects.filter(name="h200-resnet50").update(baseline=found["collector"])
        yield owner, found
        for job in found.values():
            delete_job(job)
        owner.delete()


def computed(api: APIClient, job, window: str) -> None:
    """The owner shows the job in ``window``: its insights and verdict computed there, as the
    workers do."""
    assert api.patch(f"/api/jobs/{job.id}/", {"window": window}, format="json").status_code == 200
    insights.request_run(job.id, delay_s=3600, window=window)
    generation = JobInsights.objects.get(job=job, window=window).generation
    insights.compute(job.id, generation, window)
    history.judge_job(job.id)


def get(api: APIClient, path: str) -> dict:
    response = api.get(path)
    assert response.status_code == 200, (path, response.content[:300])
    return response.json()


def report_rows(page: str) -> dict[str, str]:
    """The report's job table: header → value."""
    return {
        html.unescape(k): html.unescape(v)
        for k, v in re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", page)
    }


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("kind", ["collector", "trace"])
def test_every_page_gives_one_value_per_figure(h200_unpacked, jobs, kind, window):
    owner, found = jobs
    job, other = found[kind], found["trace" if kind == "collector" else "collector"]
    raw = collector_raw(h200_unpacked) if kind == "collector" else trace_raw(h200_unpacked, window)
    api = APIClient()
    api.force_authenticate(owner)
    computed(api, job, window)

    dashboard = get(api, f"/api/jobs/{job.id}/dashboard/")
    headline = get(api, f"/api/jobs/{job.id}/headline/")
    cluster = get(api, f"/api/jobs/{job.id}/cluster/")
    analyses = get(api, f"/api/jobs/{job.id}/analyses/")
    report = get(api, f"/api/jobs/{job.id}/insights/")["report"]
    compare = get(api, f"/api/compare/?a={job.id}&b={other.id}")
    series = get(api, f"/api/jobs/{job.id}/series/")["series_id"]
    [run] = [r for r in get(api, f"/api/series/{series}/runs/") if r["job"] == job.id]
    verdict = get(api, f"/api/jobs/{job.id}/verdict/")
    page = api.get(f"/api/jobs/{job.id}/insights/report.html").content.decode()
    rules = {r["rule"]: r for r in report["recommendations"]}
    assert dashboard["window"]["window"] == analyses["window"]["window"] == window
    assert run["figures"]["window"] == window

    # Step time: one figure, one wording.
    steps = len(raw.steps_ns)
    median_ns = int(statistics.median(raw.steps_ns))
    captured = "captured " if kind == "collector" else ""
    one = {"median_ns": median_ns, "steps": steps, "label": f"median of {steps} {captured}steps"}
    assert dashboard["step_time"] == headline["step_time"] == cluster["step_time"] == one
    assert compare["steps"]["a"]["p50_ns"] == run["figures"]["step_p50_ns"] == median_ns
    assert compare["steps"]["a"]["count"] == run["figures"]["steps"] == steps
    assert report_rows(page)["Step time"] == f"{median_ns / 1e6:.2f} ms, {one['label']}"
    if kind == "trace":  # judged against the collector job, each step time as its pages say
        baseline_ns = int(statistics.median(collector_raw(h200_unpacked).steps_ns))
        assert verdict["reason"].startswith(
            f"Step time {median_ns / 1e6:.2f} ms ({one['label']}) against "
            f"{baseline_ns / 1e6:.2f} ms (median of 16 captured steps): "
        )

    # Kernel time and the busiest kernel.
    kernel_ns = sum(raw.kernels.values())
    metrics = {m["metric"]: m["a"] for m in compare["metrics"]}
    assert dashboard["totals"]["kernel_ns"] == analyses["totals"]["kernel_ns"] == kernel_ns
    assert metrics["kernel_ns"] == kernel_ns
    busiest = max(raw.kernels, key=raw.kernels.__getitem__)
    top = dashboard["kernel_time"]["top"][0]
    assert (top["name"], top["total_ns"]) == (busiest, raw.kernels[busiest])
    [insights_row] = [r for r in analyses["kernels"] if r["name"] == busiest]
    [compare_row] = [r for r in compare["kernels"]["rows"] if r["name"] == busiest]
    assert insights_row["sum_ns"] == compare_row["total_ns_a"] == raw.kernels[busiest]
    assert run["figures"]["top_kernels"][0]["name"] == busiest
    # The Dashboard's share is of its "over" (the captured steps' time on a sampled job);
    # Insights' and the report's is of the kernel time of its type (every kernel here is COMP).
    assert analyses["totals"]["compute_ns"] == kernel_ns
    of_type = 100 * raw.kernels[busiest] / kernel_ns
    assert insights_row["share_of_type_pct"] == pytest.approx(of_type, abs=1e-9)
    row = re.search(rf"<td>{re.escape(html.escape(busiest))}</td>(.*?)</tr>", page).group(1)
    assert f"<td>{raw.kernels[busiest]:,}</td>" in row and f"<td>{of_type:,.4g}</td>" in row
    if kind == "collector":
        assert dashboard["over"]["ns"] == sum(raw.steps_ns)
        assert report_rows(page)["Taken over"].startswith(
            f"the {steps} captured steps ({sum(raw.steps_ns) / 1e9:.3f} s)"
        )

    # The steps' time shares are of, and the copy shares over it; Insights' operator table
    # lists the steps as one row, as key_averages() does (and the Call tree sums them).
    step_total = sum(raw.steps_ns)
    step_name = "step_*" if kind == "collector" else "ProfilerStep*"
    [step_row] = [r for r in analyses["operators"] if re.match(r"ProfilerStep|step_", r["name"])]
    assert (step_row["name"], step_row["count"], step_row["total_ns"]) == (
        step_name,
        steps,
        step_total,
    )
    copies = rules["HostToDeviceCopies"]["evidence"]["ranks"]["0"]
    assert headline["step_total_ns"] == copies["step_ns"] == step_total
    assert copies["steps"] == headline["steps"] == steps
    shares = {r["part"]: r["share_pct"] for r in headline["breakdown"]}
    assert shares["copies"] == round(100 * raw.breakdown["copies"] / step_total, 2)
    assert copies["pageable_ns"] == raw.pageable_in_steps_ns
    assert copies["pageable_pct_of_steps"] == pytest.approx(
        100 * raw.pageable_in_steps_ns / step_total, abs=1e-9
    )

    # GPU utilisation: the NVML samples of the whole run, in any window: their mean on the
    # headline and History, their share above 0 % in the Dashboard's GPU active time. A trace
    # has none: the headline says so, where History's "GPU util." falls back to the utilisation
    # derived from kernel time (the source of the Dashboard's chart).
    samples = raw.nvml_pct
    mean = round(statistics.fmean(samples), 2) if samples else None
    assert headline["nvml_mean_pct"] == mean
    if samples:
        assert run["figures"]["gpu_util_pct"] == mean
        active = dashboard["gpu_active"]
        assert active["source"] == "nvml"
        assert active["active_points"] == sum(1 for v in samples if v > 0)
        assert active["idle_points"] == sum(1 for v in samples if v == 0)
    else:
        assert dashboard["gpu_utilization"]["source"] == "kernel_busy"
