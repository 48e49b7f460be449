"""The Dashboard of a sampled collector job in headless Chromium: its shares of time are of the
captured steps, and the step panel names every annotated step beside the one step time.

The job is the H200 collector spool (tests/data/README.md), parsed as a worker does; expected
numbers come from the chunks' arrays (``tests.insights.converted``), never from the API.
"""

from statistics import median

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile
from tests import h200
from tests.e2e.conftest import screenshot, sign_in
from tests.insights.converted import read_converted

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def panel(page: Page, title: str):
    return page.locator("section.panel", has=page.get_by_role("heading", name=title, exact=True))


def test_a_sampled_jobs_kernel_shares_are_of_its_captured_steps(live_server, tab, user, tmp_path):
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-collector", chunks, "collector", owner=user)
    LoadedProfile.objects.create(user=user, job=job)
    raw = read_converted(chunks)
    kernels = raw.kernel_ns
    top_name, top_ns = min(kernels.items(), key=lambda kv: (-kv[1], kv[0]))
    captured = [raw.steps[s][1] - raw.steps[s][0] for s in raw.captured]

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    time_panel = panel(tab, "Time spent by all GPU kernels")
    expect(time_panel).to_contain_text(f"% of the 16 captured steps' {raw.step_ns / 1e9:.6f} s.")
    first = time_panel.locator(".pie-legend tr").first
    expect(first.locator(".pie-name")).to_have_attribute("title", top_name)
    expect(first).to_contain_text(f"{100 * top_ns / raw.step_ns:.1f}%")
    steps = panel(tab, "Step time distribution")
    expect(steps).to_contain_text("All 160 annotated steps in the window")
    expect(steps).to_contain_text(
        f"Step time: {int(median(captured)) / 1e6:.4g} ms (median of 16 captured steps)."
    )
    # Each panel's caption says what it is over: the step distribution every annotated step,
    # the NVML panels the whole run, the kernel panels the captured steps.
    expect(steps.locator(".panel-window")).to_have_text("all 160 annotated steps")
    # So are the annotation histograms: the collector annotates every step.
    create = panel(tab, "Create new histogram").locator(".panel-window")
    expect(create).to_have_text("all 160 annotated steps")
    whole_run = panel(tab, "GPU utilisation over time").locator(".panel-window")
    expect(whole_run).to_have_text("the whole run (samples)")
    expect(time_panel.locator(".panel-window")).to_contain_text("captured steps 57–60")
    expect(tab.locator(".window-switch")).to_contain_text("The switch changes nothing here")
    screenshot(tab, "dashboard-h200-captured-steps")

    # The Cluster page gives the same step time, and calls its per-rank figure what it is.
    step_time = f"{int(median(captured)) / 1e6:.4g} ms"
    tab.goto(live_server.url + "/cluster")
    ranks = panel(tab, "Captured steps per rank")
    expect(ranks).to_contain_text(f"Step time: {step_time} (median of 16 captured steps")
    expect(ranks.get_by_role("columnheader", name="Mean captured step")).to_be_visible()
    expect(ranks.locator("tbody tr").first).to_contain_text(
        f"{round(sum(captured) / 16) / 1e6:.4g} ms"
    )
    screenshot(tab, "cluster-h200-captured-steps")
