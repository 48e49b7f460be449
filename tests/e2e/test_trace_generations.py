"""An old (PyTorch 1.8) trace on every page, and a trace the server cannot fully read, in
headless Chromium. Figures are the raw JSON's (see tests/ingest/test_pytorch18_trace.py)."""

import json

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in, wait_until
from tests.e2e.jobs import loaded_job
from tests.e2e.test_dashboard import drawn_chart
from tests.e2e.test_timeline import arrow_pixels, select_by_search, wait_for_paint
from tests.timeline.jobs import parse_paths

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = "resnet50_pt18_workers4.pt.trace.json.gz"
# A cuBLAS GEMM of the 1.8 trace (78 runs) whose first run's cudaLaunchKernel is in the trace
# (744 of the 9,456 kernels were launched before profiling began and have none).
KERNEL = "volta_sgemm_128x64_nn"


@pytest.fixture
def old_job(user):
    return loaded_job(user, "resnet50-pytorch-1.8", [("algo-1", 0, TRACE)], status="completed")


def test_a_pytorch_18_trace_shows_its_gpu_work_on_every_page(live_server, tab, old_job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    expect(tab.get_by_text("Profile span 0.808451 s · 1 node · 9,456 kernel runs")).to_be_visible()
    steps = tab.locator("section", has=tab.get_by_role("heading", name="Step time distribution"))
    expect(steps).to_contain_text("6 steps")
    expect(tab.get_by_text("No GPU", exact=False)).to_have_count(0)
    expect(tab.get_by_role("alert")).to_have_count(0)
    for title in (
        "Time spent by all GPU kernels",
        "Step time distribution",
        "GPU activity distribution",
    ):
        expect(drawn_chart(tab, title)).to_be_visible()
    tab.wait_for_timeout(1000)  # the pies grow in
    screenshot(tab, "pt18-dashboard")

    tab.goto(live_server.url + "/info")
    compute = tab.locator("section", has=tab.get_by_role("heading", name="Compute"))
    expect(compute.locator("dd").nth(3)).to_have_text("1")  # GPUs per node: the one that ran
    expect(compute.locator("dd").nth(4)).to_have_text("not recorded")  # a trace lists no CPUs
    screenshot(tab, "pt18-info")

    tab.goto(live_server.url + "/timeline")
    wait_for_paint(tab)
    pane = select_by_search(tab, KERNEL)
    expect(pane.get_by_label("Connected launch")).to_contain_text("cudaLaunchKernel")
    wait_until(lambda: arrow_pixels(tab) > 40, "the arrow to be drawn")
    screenshot(tab, "pt18-timeline-kernel-selected")


def test_a_trace_it_cannot_fully_read_says_so(live_server, tab, user, tmp_path):
    other_tool = tmp_path / "browser-trace.json"
    events = [
        {"ph": "X", "cat": "v8", "name": f"Compile {i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(50)
    ]
    other_tool.write_text(json.dumps({"traceEvents": events}))
    job = parse_paths(user, "not-a-pytorch-trace", [("algo-1", 0, other_tool)], status="completed")
    LoadedProfile.objects.create(user=user, job=job)

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/")
    row = tab.get_by_role("row", name="not-a-pytorch-trace")
    expect(row.get_by_text("not fully read")).to_be_visible()
    screenshot(tab, "unrecognised-job-list")

    tab.goto(live_server.url + "/dashboard")
    alert = tab.get_by_role("alert")
    expect(alert).to_contain_text("This profile may be incomplete.")
    expect(alert).to_contain_text("50 of 50 events (100.0 %) were not recognised")
    expect(alert).to_contain_text("category 'v8' (50)")
    expect(tab.get_by_text("Loading the dashboard")).to_have_count(0)
    screenshot(tab, "unrecognised-dashboard")
