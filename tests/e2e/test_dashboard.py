"""The dashboard of real ingested traces in headless Chromium: every panel, hovers, k, histograms.

Expected numbers come straight from the trace's raw JSON (Decimal microseconds → exact ns),
never from the parser or the API the page reads.
"""

import gzip
import json
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import LoadedProfile, TrainingJob
from tests.conftest import DATA_DIR
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job
from tests.timeline.jobs import parse_stored

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

A100 = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"
CPU_ONLY = DATA_DIR / "cpu_only_rank34.pt.trace.json.gz"
PANELS = [
    "GPU active time",
    "GPU utilisation over time",
    "CPU active time",
    "CPU utilisation over time",
    "Time spent by all GPU kernels",
    "Time spent by the top 15 GPU kernels",
    "Launch counts of all GPU kernels",
    "Launch counts of the top 15 GPU kernels",
    "Step time distribution",
    "Kernel precision distribution",
    "GPU activity distribution",
    "GPU memory operations distribution",
    "Create new histogram",
]


def ns(microseconds: Decimal) -> int:
    return int(microseconds * 1000)


def raw_events(path: Path) -> list[dict]:
    with gzip.open(path) as f:
        return json.load(f, parse_float=Decimal)["traceEvents"]


class Raw:
    """What the A100 trace holds, counted from its JSON."""

    def __init__(self, path: Path) -> None:
        events = raw_events(path)
        timed = [e for e in events if e.get("ph") == "X"]
        # The profile spans every complete and instant event ("Record Window End" is the last).
        spans = [
            (ns(e["ts"]), ns(e["ts"] + e.get("dur", 0)))
            for e in events
            if e.get("ph") in ("X", "i", "I")
        ]
        self.profile_ns = max(end for _, end in spans) - min(start for start, _ in spans)
        kernels = [e for e in timed if e.get("cat") == "kernel"]
        self.kernel_total_ns: Counter = Counter()
        self.kernel_count: Counter = Counter()
        for e in kernels:
            self.kernel_total_ns[e["name"]] += ns(e["dur"])
            self.kernel_count[e["name"]] += 1
        self.all_kernels_ns = sum(self.kernel_total_ns.values())
        self.all_launches = len(kernels)
        annotations = [e for e in timed if e.get("cat") == "user_annotation"]
        self.steps_ns = [ns(e["dur"]) for e in annotations if e["name"].startswith("ProfilerStep#")]
        self.forward_ns = [ns(e["dur"]) for e in annotations if e["name"] == "## forward ##"]

    def by_time(self) -> list[tuple[str, int]]:
        return sorted(self.kernel_total_ns.items(), key=lambda kv: (-kv[1], kv[0]))

    def by_count(self) -> list[tuple[str, int]]:
        return sorted(self.kernel_count.items(), key=lambda kv: (-kv[1], kv[0]))


def seconds(value_ns: int) -> str:
    return f"{value_ns / 1e9:.6f} s"


def ms(value_ns: int) -> str:
    """Milliseconds to four significant digits, as the page writes them."""
    return f"{value_ns / 1e6:.4g} ms"


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%"


def ingest(job: TrainingJob, path: Path) -> None:
    """Stores the part and parses it in this process (as the worker would), so the test waits
    for nothing."""
    with path.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", path.name), f)
    parse_stored(part.id)


@pytest.fixture
def a100_job(user):
    job = TrainingJob.objects.create(name="resnet-a100", owner=user, status="completed")
    ingest(job, A100)
    LoadedProfile.objects.create(user=user, job=job)
    return job


def panel(page: Page, title: str) -> Locator:
    return page.locator("section.panel", has=page.get_by_role("heading", name=title, exact=True))


def legend_rows(page: Page, title: str) -> Locator:
    return panel(page, title).locator(".pie-legend tr")


def tooltip(page: Page, text: str) -> Locator:
    return page.locator(".chart-tip", has_text=text)


def drawn_chart(page: Page, title: str) -> Locator:
    """A panel's chart once drawn: the chart library loads lazily, behind a placeholder."""
    chart = panel(page, title).locator(".chart:has(svg path)")
    chart.scroll_into_view_if_needed()
    return chart


def hover_until(page: Page, chart: Locator, x: float, y: float, tip: Locator) -> None:
    """Points at (x, y) of a chart until its tooltip shows: pies grow in with an animation, so
    the first move can come before there is a slice under the pointer."""
    box = chart.bounding_box()
    assert box
    for attempt in range(20):
        # A one-pixel jiggle makes every attempt a new mouse move.
        page.mouse.move(box["x"] + x + attempt % 2, box["y"] + y)
        if tip.is_visible():
            return
        page.wait_for_timeout(250)
    expect(tip).to_be_visible()


def hover_pie(page: Page, title: str, clockwise_deg: float, tip: Locator) -> None:
    """Points into a pie at an angle clockwise from 12 o'clock (where ECharts starts the first
    slice), halfway out along the radius."""
    chart = drawn_chart(page, title)
    box = chart.bounding_box()
    assert box
    radius = 0.82 * min(box["width"], box["height"]) / 2
    angle = math.radians(clockwise_deg)
    x = box["width"] / 2 + 0.5 * radius * math.sin(angle)
    y = box["height"] / 2 - 0.5 * radius * math.cos(angle)
    hover_until(page, chart, x, y, tip)


def test_it_shows_every_panel_of_a_real_trace_with_exact_values(live_server, tab, user, a100_job):
    raw = Raw(A100)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")

    for title in PANELS:
        expect(panel(tab, title)).to_be_visible()
    expect(tab.locator(".dashboard-heading")).to_contain_text(
        f"Profile span {seconds(raw.profile_ns)}"
    )

    # Kernel time: the top 15 by total time, then Other; seconds and % of the profile.
    rows = legend_rows(tab, "Time spent by all GPU kernels")
    expect(rows).to_have_count(16)
    (top_name, top_ns), *_ = raw.by_time()
    expect(rows.first.locator(".pie-name")).to_have_attribute("title", top_name)
    expect(rows.first).to_contain_text(seconds(top_ns) + percent(top_ns, raw.profile_ns))
    other_ns = raw.all_kernels_ns - sum(v for _, v in raw.by_time()[:15])
    expect(rows.last).to_have_text("Other" + seconds(other_ns) + percent(other_ns, raw.profile_ns))
    expect(legend_rows(tab, "Time spent by the top 15 GPU kernels")).to_have_count(15)

    # Launch counts: the most launched kernel and its share of all launches.
    counts = legend_rows(tab, "Launch counts of all GPU kernels")
    (count_name, count), *_ = raw.by_count()
    expect(counts.first.locator(".pie-name")).to_have_attribute("title", count_name)
    expect(counts.first).to_contain_text(f"{count:,}" + percent(count, raw.all_launches))
    expect(legend_rows(tab, "Launch counts of the top 15 GPU kernels")).to_have_count(15)

    # Steps: five ProfilerStep annotations.
    steps = panel(tab, "Step time distribution")
    expect(steps.locator(".panel-stats")).to_contain_text(f"Count{len(raw.steps_ns)} steps")
    expect(steps.locator(".panel-stats")).to_contain_text(f"Max{ms(max(raw.steps_ns))}")

    # An imported Kineto trace has no CPU utilisation samples: the panels say so.
    for title in ("CPU active time", "CPU utilisation over time"):
        expect(panel(tab, title).locator(".panel-empty")).to_have_text(
            "No CPU utilisation samples in an imported trace."
        )
    for title in (
        "GPU active time",
        "Kernel precision distribution",
        "GPU activity distribution",
        "GPU memory operations distribution",
    ):
        expect(legend_rows(tab, title).first).to_be_visible()
    expect(panel(tab, "GPU utilisation over time").locator(".chart svg")).to_be_visible()
    expect(panel(tab, "GPU memory operations distribution")).to_contain_text("Memset")
    screenshot(tab, "dashboard")


def test_it_shows_exact_values_on_hover(live_server, tab, user, a100_job):
    raw = Raw(A100)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    expect(legend_rows(tab, "Time spent by all GPU kernels")).to_have_count(16)

    # Other is the last slice, so it ends at 12 o'clock: just left of it is Other.
    other_ns = raw.all_kernels_ns - sum(v for _, v in raw.by_time()[:15])
    tip = tooltip(tab, "Other: all kernels beyond the top 15")
    hover_pie(tab, "Time spent by all GPU kernels", -8, tip)
    expect(tip).to_contain_text(f"Total time: {seconds(other_ns)}")
    expect(tip).to_contain_text(f"{percent(other_ns, raw.profile_ns)} of the profile")
    screenshot(tab, "dashboard-kernel-tooltip")

    # The first slice starts at 12 o'clock: just right of it is the top kernel by time.
    (top_name, top_ns), *_ = raw.by_time()
    tip = tooltip(tab, f"Launches: {raw.kernel_count[top_name]:,}")
    hover_pie(tab, "Time spent by the top 15 GPU kernels", 4, tip)
    expect(tip.locator(".chart-tip-title")).to_have_text(top_name)
    expect(tip).to_contain_text(f"Total time: {seconds(top_ns)}")

    # Hovering a legend row shows its slice's tooltip too.
    (count_name, count), *_ = raw.by_count()
    legend_rows(tab, "Launch counts of all GPU kernels").first.hover()
    tip = tooltip(tab, f"{percent(count, raw.all_launches)} of all {raw.all_launches:,} launches")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text(f"Launches: {count:,}")

    # The step histogram's last bar holds the three ~95.7 ms steps (bins of 20 ms from 20 ms).
    steps_chart = drawn_chart(tab, "Step time distribution")
    box = steps_chart.bounding_box()
    assert box
    tip = tooltip(tab, "80 ms – 100 ms")
    hover_until(tab, steps_chart, box["width"] - 40, box["height"] - 60, tip)
    slow = sum(1 for dur_ns in raw.steps_ns if dur_ns >= 80_000_000)
    expect(tip).to_contain_text(f"{slow} steps ({percent(slow, len(raw.steps_ns))})")
    expect(tip).to_contain_text("ProfilerStep#103, ProfilerStep#104, ProfilerStep#105")
    screenshot(tab, "dashboard-step-tooltip")

    # The utilisation chart gives every node's value at the hovered time.
    utilization = drawn_chart(tab, "GPU utilisation over time")
    box = utilization.bounding_box()
    assert box
    tip = tooltip(tab, "Time since first sample:")
    hover_until(tab, utilization, box["width"] / 2, 80, tip)
    expect(tip).to_contain_text("algo-1:")


def test_it_changes_k(live_server, tab, user, a100_job):
    raw = Raw(A100)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")

    tab.get_by_label("Time spent by all GPU kernels: kernels shown (k)").fill("5")
    rows = legend_rows(tab, "Time spent by all GPU kernels")
    expect(rows).to_have_count(6)
    other_ns = raw.all_kernels_ns - sum(v for _, v in raw.by_time()[:5])
    expect(rows.last).to_have_text("Other" + seconds(other_ns) + percent(other_ns, raw.profile_ns))

    tab.get_by_label("Launch counts of all GPU kernels: kernels shown (k)").fill("40")
    counts = legend_rows(tab, "Launch counts of all GPU kernels")
    expect(counts).to_have_count(41)
    other = raw.all_launches - sum(v for _, v in raw.by_count()[:40])
    expect(counts.last).to_have_text(f"Other{other:,}{percent(other, raw.all_launches)}")

    # More than the trace has: every kernel, no Other.
    tab.get_by_label("Launch counts of all GPU kernels: kernels shown (k)").fill("200")
    expect(counts).to_have_count(len(raw.kernel_count))

    tab.get_by_label("Time spent by all GPU kernels: kernels shown (k)").fill("0")
    expect(panel(tab, "Time spent by all GPU kernels").get_by_role("alert")).to_have_text(
        "k must be a whole number from 1 to 200."
    )
    expect(rows).to_have_count(6)
    screenshot(tab, "dashboard-k")


def test_it_keeps_custom_histograms_per_user(live_server, new_tab, user, teammate, a100_job):
    raw = Raw(A100)
    LoadedProfile.objects.create(user=teammate, job=a100_job)
    alice = new_tab()
    sign_in(alice, live_server.url, "alice", "alice-password-1", path="/dashboard")

    create = panel(alice, "Create new histogram")
    create.get_by_label("Annotation").select_option("## forward ##")
    create.get_by_role("button", name="Add histogram").click()
    forward = panel(alice, "## forward ## durations")
    stats = forward.locator(".panel-stats")
    expect(stats).to_contain_text(f"Count{len(raw.forward_ns)} occurrences")
    expect(stats).to_contain_text(f"Min{ms(min(raw.forward_ns))}")
    expect(stats).to_contain_text(f"Max{ms(max(raw.forward_ns))}")
    forward.scroll_into_view_if_needed()
    screenshot(alice, "dashboard-custom-histogram")

    alice.reload()
    expect(panel(alice, "## forward ## durations")).to_be_visible()

    bob = new_tab()
    sign_in(bob, live_server.url, "bob", "bob-password-1", path="/dashboard")
    expect(panel(bob, "Create new histogram")).to_be_visible()
    expect(panel(bob, "## forward ## durations")).to_have_count(0)

    panel(alice, "## forward ## durations").get_by_role("button", name="Remove").click()
    expect(panel(alice, "## forward ## durations")).to_have_count(0)
    alice.reload()
    expect(panel(alice, "Create new histogram")).to_be_visible()
    expect(panel(alice, "## forward ## durations")).to_have_count(0)


def test_it_says_why_gpu_panels_are_empty_for_a_cpu_only_trace(live_server, tab, user):
    job = TrainingJob.objects.create(name="cpu-only", owner=user, status="completed")
    ingest(job, CPU_ONLY)
    LoadedProfile.objects.create(user=user, job=job)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")

    for title in ("GPU active time", "GPU utilisation over time", "GPU activity distribution"):
        expect(panel(tab, title).locator(".panel-empty")).to_contain_text("No GPU")
    for title in ("Time spent by all GPU kernels", "Launch counts of the top 15 GPU kernels"):
        expect(panel(tab, title).locator(".panel-empty")).to_contain_text("No GPU kernels")
    expect(panel(tab, "Step time distribution").locator(".panel-stats")).to_contain_text(
        "Count1 step"
    )
    screenshot(tab, "dashboard-cpu-only")


def test_it_switches_every_panel_to_the_complete_steps(live_server, tab, user, a100_job):
    raw = Raw(A100)
    steps = sorted(
        int(e["name"].split("#")[1])
        for e in raw_events(A100)
        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")
    )
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    expect(panel(tab, "Step time distribution").locator(".panel-window")).to_have_text(
        "whole trace"
    )
    tab.get_by_label("Window").select_option("complete_steps")

    caption = (
        f"complete steps: from the trace's start to step #{steps[-1]}'s start "
        f"(#{steps[0]}–#{steps[-2]}, {len(steps) - 1} of {len(steps)} steps)"
    )
    expect(tab.locator(".window-switch")).to_contain_text(f"Showing {caption}.")
    for title in PANELS[:-1]:
        expect(panel(tab, title).locator(".panel-window")).to_have_text(caption)
    stats = panel(tab, "Step time distribution").locator(".panel-stats")
    expect(stats).to_contain_text(f"Count{len(raw.steps_ns) - 1} steps")
    screenshot(tab, "dashboard-complete-steps")

    # The other pages follow the job's window.
    tab.goto(live_server.url + "/cluster")
    expect(tab.get_by_label("Window")).to_have_value("complete_steps")
    expect(tab.locator(".panel-window").first).to_have_text(caption)
    screenshot(tab, "cluster-complete-steps")


def test_kernel_time_on_two_gpus_is_a_share_of_both_gpus_time(live_server, tab, user):
    """Two ranks, one GPU each: a kernel's share is of twice the span, as the panel says; the
    span and the kernel times from the raw JSON of both, on one clock."""
    from tests.traces.expected import DATA, expected

    traces = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]
    loaded_job(user, "two-gpus", [("algo-1", 0, traces[0]), ("algo-2", 1, traces[1])])
    starts, ends, kernel_ns = [], [], Counter()
    for trace in traces:
        offset = expected(trace).offset_ns
        for e in raw_events(DATA / trace):
            if e.get("ph") in ("X", "i", "I"):
                starts.append(ns(e["ts"]) + offset)
                ends.append(ns(e["ts"] + e.get("dur", 0)) + offset)
            if e.get("ph") == "X" and e.get("cat") == "kernel":
                kernel_ns[e["name"]] += ns(e["dur"])
    span_ns = max(ends) - min(starts)
    top_name, top_ns = min(kernel_ns.items(), key=lambda kv: (-kv[1], kv[0]))

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    kernels = panel(tab, "Time spent by all GPU kernels")
    span = f"{span_ns / 1e9:.3f} s"  # past a second, the page gives milliseconds' digits
    assert span_ns > 1e9
    expect(kernels).to_contain_text(f"% of the 2 GPUs' time (the {span} span × 2)")
    first = legend_rows(tab, "Time spent by all GPU kernels").first
    expect(first.locator(".pie-name")).to_have_attribute("title", top_name)
    expect(first).to_contain_text(seconds(top_ns) + percent(top_ns, 2 * span_ns))
    screenshot(tab, "dashboard-two-gpus")
