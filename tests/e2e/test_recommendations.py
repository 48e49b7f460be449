"""A trace recommendation on the Insights page, and its evidence link opening the timeline on the
event, in headless Chromium (PyTorch 1.8 ResNet-50: its batches are copied from pageable memory)."""

import gzip
import json
import re

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from profiler_app.traces.window import COMPLETE_STEPS
from tests.e2e.conftest import SCREENSHOTS, screenshot, sign_in
from tests.e2e.test_timeline import view_range, wait_for_paint
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_job
from tests.traces.expected import DATA, ns

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = "resnet50_pt18_workers4.pt.trace.json.gz"
PAGEABLE = "Memcpy HtoD (Pageable -> Device)"


@pytest.fixture
def job(user):
    job = parse_job(
        user,
        "resnet50-pt18-insights",
        [("algo-1", 0, TRACE)],
        status="completed",
        window=COMPLETE_STEPS,
    )
    compute_here(job)  # computed here, as the worker would
    LoadedProfile.objects.create(user=user, job=job)
    return job


def longest_pageable_copy_in_complete_steps() -> tuple[int, int]:
    with gzip.open(DATA / TRACE) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    last_step = max(ns(e["ts"]) for e in events if e["name"].startswith("ProfilerStep#"))
    launched = {
        e["args"]["correlation"]
        for e in events
        if e["cat"] == "Runtime" and ns(e["ts"]) < last_step
    }
    copies = [e for e in events if e["name"] == PAGEABLE and e["args"]["correlation"] in launched]
    longest = max(copies, key=lambda e: e["dur"])
    return ns(longest["ts"]), ns(longest["dur"])


def test_a_finding_links_to_its_event_on_the_timeline(live_server, tab, job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    section = tab.get_by_label("Recommendations")
    copies = section.get_by_role("region", name="HostToDeviceCopies", exact=True)
    expect(copies).to_contain_text("Issue found")
    expect(copies).to_contain_text("pin_memory")
    expect(copies.get_by_role("table", name="Per rank")).to_contain_text("Pageable copies")
    expect(section.get_by_role("region", name="TensorCores", exact=True)).to_contain_text(
        "Issue found"
    )
    screenshot(tab, "insights-recommendations")
    section.screenshot(path=str(SCREENSHOTS / "insights-recommendations-section.png"))

    start_ns, dur_ns = longest_pageable_copy_in_complete_steps()
    copies.get_by_role("link").first.click()
    expect(tab).to_have_url(re.compile(r"/timeline\?"))
    wait_for_paint(tab)
    pane = tab.get_by_role("region", name="Selection details")
    expect(pane.get_by_label("Selected")).to_contain_text(PAGEABLE)
    expect(pane.get_by_label("Connected launch")).to_contain_text("cudaMemcpyAsync")
    shown = view_range(tab)
    assert shown[0] <= start_ns and start_ns + dur_ns <= shown[1]
    assert shown[1] - shown[0] <= dur_ns * 1.3  # the copy, with a little around it
    screenshot(tab, "timeline-from-finding")
