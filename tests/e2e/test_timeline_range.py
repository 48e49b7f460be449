"""Range selection in headless Chromium: shift+drag across tracks, read the totals (the count of
one name checked against a brute force over the raw trace), sort, pick a row, reload."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job
from tests.e2e.test_timeline import wait_for_paint
from tests.timeline.test_range_totals import brute_force

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRACE = "gpu_training_rank0.pt.trace.json.gz"
STREAM = "algo-1/1102/gpu0/s7"


@pytest.fixture
def job(user):
    return loaded_job(user, "resnet-range", [("algo-1", 0, TRACE)], status="completed")


def test_it_selects_a_range_and_totals_it(live_server, tab, job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/timeline")
    wait_for_paint(tab)
    canvas = tab.locator("[data-testid=timeline-canvas]")
    box = canvas.bounding_box()
    assert box
    x0, x1 = box["x"] + box["width"] * 0.3, box["x"] + box["width"] * 0.6
    tab.keyboard.down("Shift")
    tab.mouse.move(x0, box["y"] + 50)
    tab.mouse.down()
    tab.mouse.move((x0 + x1) / 2, box["y"] + box["height"] * 0.5, steps=5)
    tab.mouse.move(x1, box["y"] + box["height"] - 5, steps=5)
    tab.mouse.up()
    tab.keyboard.up("Shift")
    pane = tab.get_by_test_id("range-pane")
    expect(pane).to_be_visible()
    expect(tab).to_have_url(re.compile(r"[?&]range=\d+_\d+"))
    query = parse_qs(urlparse(tab.url).query)
    start, end = (int(v) for v in query["range"][0].split("_"))
    tracks = query["rtracks"][0].split(",")
    assert STREAM in tracks
    want = brute_force(TRACE, ("stream", 0, 7), start, end)
    name, row = max(want.items(), key=lambda kv: kv[1]["total"])
    table = pane.get_by_role("table", name="Events in the range")
    pane.get_by_placeholder("Filter by name…").fill(name)
    line = table.get_by_role("row").filter(has_text="stream 7").filter(has_text=name).first
    expect(line.get_by_role("cell").nth(2)).to_have_text(f"{row['count']:,}")
    line.click()
    expect(pane.get_by_text(re.compile(r"Outlined: [\d,]+ of [\d,]+ events"))).to_be_visible()
    pane.get_by_placeholder("Filter by name…").fill("")
    table.get_by_title("Sort by Count").click()
    expect(table.locator("th[aria-sort]")).to_have_text(re.compile("Count"))
    screenshot(tab, "timeline-range")

    tab.reload()
    wait_for_paint(tab)
    expect(tab.get_by_test_id("range-pane")).to_be_visible()
    assert parse_qs(urlparse(tab.url).query)["range"][0] == f"{start}_{end}"
    screenshot(tab, "timeline-range-reloaded")
    tab.keyboard.press("Escape")
    expect(tab.get_by_test_id("range-pane")).to_have_count(0)
