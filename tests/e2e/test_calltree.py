"""The Call tree page in headless Chromium: search, click a frame, follow an occurrence into
the timeline."""

import re

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile
from tests import h200
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TRACE = "gpu_training_rank0.pt.trace.json.gz"


def test_it_opens_the_flame_graph_and_jumps_to_the_timeline(tab: Page, live_server, user):
    loaded_job(user, "calltree", [("algo-1", 0, TRACE)], status="completed")
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/calltree")
    expect(tab.get_by_role("heading", name="Call tree", exact=True, level=1)).to_be_visible()
    main = tab.get_by_label("Thread").locator("option", has_text="pt_main_thread")
    tab.get_by_label("Thread").select_option(main.get_attribute("value"))
    table = tab.get_by_role("table", name="Call tree")
    expect(table.locator("tbody tr").first).to_have_text(re.compile(r"^▾ProfilerStep\*"))
    tab.get_by_label("Search frames").fill("forward")
    flame = tab.locator('canvas[aria-label="Flame graph"]')
    expect(flame).to_be_visible()
    screenshot(tab, "calltree-search")
    box = flame.bounding_box()
    assert box
    flame.click(position={"x": box["width"] * 0.3, "y": 9})  # a ProfilerStep at the top
    occurrences = tab.get_by_role("table", name="Occurrences")
    expect(occurrences.locator("tbody tr").first).to_be_visible()
    screenshot(tab, "calltree-occurrences")
    occurrences.get_by_role("link", name="Show in timeline").first.click()
    expect(tab).to_have_url(re.compile(r"/jobs/\d+/timeline\?t=\d+_\d+&ranks=0&sel="))
    expect(tab.get_by_role("heading", name="Timeline", exact=True)).to_be_visible()
    tab.wait_for_timeout(1500)
    screenshot(tab, "calltree-to-timeline")


def test_a_collector_job_opens_on_its_process_whole(tab: Page, live_server, user, tmp_path):
    """The real H200 job: the page opens on its eight chunks summed, the 16 captured steps as
    one frame, captioned as the Dashboard captions its sample; one chunk can still be chosen."""
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-calltree", chunks, "collector", owner=user)
    LoadedProfile.objects.create(user=user, job=job)
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/calltree")
    part = tab.get_by_label("Part")
    expect(part.locator("option:checked")).to_have_text("vm rank 0 · all 8 parts")
    thread = tab.get_by_label("Thread").locator("option:checked")
    expect(thread).to_have_text("Each part's thread that ran the steps")
    caption = tab.get_by_text(
        re.compile(r"frames, 845\.\d ms in 4 of 8 parts \(captured steps 57–60, 177–180")
    )
    expect(caption).to_be_visible()
    expect(caption).to_have_attribute("title", re.compile(r"its latest 64 at most\.$"))
    first = tab.get_by_role("table", name="Call tree").locator("tbody tr").first
    expect(first).to_contain_text("step_*")
    expect(first.locator("td").last).to_have_text("16")
    screenshot(tab, "calltree-collector-process")
    part.select_option(label="vm rank 0 · 8.61–8.92 s")
    expect(first.locator("td").last).to_have_text("4")
