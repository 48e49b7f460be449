"""The timeline of a job of many threads in headless Chromium: its threads show as one row with
their count, open a page at a time, and an address that names the open group opens it again."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in
from tests.timeline.jobs import parse_paths
from tests.traces.synthetic import many_tracks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROUP = "algo-1/1/cpu"
DRAWN = re.compile(r"1,200 events in 1 parts")  # the status line once a view's data is drawn


@pytest.fixture
def job(user, tmp_path):
    trace = many_tracks(tmp_path / "threads.json.gz", 1200, "tid")
    job = parse_paths(user, "1200-threads", [("algo-1", 0, trace)], status="completed")
    LoadedProfile.objects.create(user=user, job=job)
    return job


def test_it_opens_a_group_of_1200_threads_a_page_at_a_time(live_server, tab, job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/timeline")
    tree = tab.get_by_role("list", name="Timeline tracks")
    group = tab.locator(f"[data-track='{GROUP}']")
    expect(group).to_contain_text("CPU threads")
    expect(group).to_contain_text("1,200 threads")
    expect(tree.get_by_text("thread 1", exact=True)).to_have_count(0)
    expect(tab.get_by_text(DRAWN)).to_be_visible()
    screenshot(tab, "timeline-many-threads-collapsed")

    tab.get_by_role("button", name="Expand CPU threads").click()
    expect(tree).to_contain_text("500 of 1,200 shown")
    expect(tree.get_by_text("thread 1", exact=True)).to_be_visible()
    expect(tab.locator(f"[data-track^='{GROUP}/']")).to_have_count(500)
    expect(tab.get_by_text(DRAWN)).to_be_visible()
    screenshot(tab, "timeline-many-threads-first-page")

    tab.get_by_role("button", name="Show more").scroll_into_view_if_needed()
    expect(tab.get_by_text(DRAWN)).to_be_visible()
    screenshot(tab, "timeline-many-threads-show-more")
    tab.get_by_role("button", name="Show more").click()
    expect(tree).to_contain_text("1,000 of 1,200 shown")
    tab.get_by_role("button", name="Show more").click()
    expect(tab.locator(f"[data-track^='{GROUP}/']")).to_have_count(1200)
    expect(tab.get_by_role("button", name="Show more")).to_have_count(0)

    # The address names the open group: opened from it, the group reads its first page again.
    expect(tab).to_have_url(re.compile(r"[?&]open="))
    assert GROUP in parse_qs(urlparse(tab.url).query)["open"][0].split(",")
    tab.goto(tab.url)
    expect(tree).to_contain_text("500 of 1,200 shown")
    expect(tab.get_by_role("button", name="Collapse CPU threads")).to_be_visible()
