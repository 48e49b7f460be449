"""The History page among more series than one page of the list holds: a series past the first
page is found by typing, its runs shown, and the Info page's series link lands on it."""

import re

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.logic import delete_job
from profiler_app.core.models import LoadedProfile
from profiler_app.history import logic
from profiler_app.history.models import Series
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import make_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = 60  # model-00 … model-59, before vit-large by name: it is on the list's second page


@pytest.fixture
def many_series(user):
    """60 series of one run each, and vit-large with two runs, 61st by name."""
    singles = {}
    for i in range(MODELS):
        job = make_job(f"model-{i:02d}-run-1", owner=user)
        singles[f"model-{i:02d}"] = logic.assign(job, f"model-{i:02d}").series
    vit = [make_job(f"vit-large-run-{n}", owner=user) for n in (1, 2)]
    for job in vit:
        logic.assign(job, "vit-large")
    return singles, vit


def test_a_series_past_the_first_page_is_found_by_search(tab: Page, live_server, user, many_series):
    singles, (vit_1, vit_2) = many_series
    vit = Series.objects.get(name="vit-large")
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/history")
    picker = tab.get_by_role("combobox", name="Series")
    expect(picker).to_have_value("model-00")  # the first by name when the address names none

    picker.click()
    listbox = tab.get_by_role("listbox", name="Series")
    footer = tab.locator(".series-picker-footer")
    expect(listbox.get_by_role("option")).to_have_count(50)
    expect(footer).to_have_text("50 of 61 seriesShow more")
    expect(listbox.get_by_role("option", name=re.compile("^vit-large"))).to_have_count(0)
    picker.press("ArrowDown")
    picker.press("ArrowDown")
    expect(listbox.get_by_role("option", selected=True)).to_have_text("model-011 run")
    screenshot(tab, "history-many-series-list")
    # The list's end scrolled into view loads the next page.
    listbox.evaluate("list => list.scrollTo(0, list.scrollHeight)")
    expect(listbox.get_by_role("option")).to_have_count(61)
    expect(footer).to_have_text("61 of 61 series")

    picker.fill("VIT")
    expect(listbox.get_by_role("option")).to_have_count(1)
    option = listbox.get_by_role("option", name=re.compile("^vit-large"))
    expect(option).to_have_text("vit-large2 runs")
    expect(option.locator("mark")).to_have_text("vit")
    expect(footer).to_have_text("1 of 1 series")
    screenshot(tab, "history-many-series-search")
    option.click()

    expect(tab).to_have_url(f"{live_server.url}/history?series={vit.pk}")
    expect(picker).to_have_value("vit-large")
    expect(picker).to_have_attribute("aria-expanded", "false")
    runs = tab.get_by_role("table", name="Runs")
    expect(runs.locator("tbody tr")).to_have_count(2)
    for row, job in zip((0, 1), (vit_1, vit_2), strict=True):
        expect(
            runs.locator("tbody tr").nth(row).get_by_role("link", name=job.name)
        ).to_have_attribute("href", f"/jobs/{job.pk}/dashboard")
    expect(tab.get_by_role("region", name="Series settings")).to_contain_text(
        "Settings of vit-large"
    )
    screenshot(tab, "history-many-series")

    # The Info page's series link opens History on the job's series, wherever it is listed.
    LoadedProfile.objects.create(user=user, job=vit_2)
    tab.goto(f"{live_server.url}/info")
    card = tab.locator("section", has=tab.get_by_role("heading", name="Regression verdict"))
    card.get_by_role("link", name="vit-large").click()
    expect(tab).to_have_url(f"{live_server.url}/history?series={vit.pk}")
    expect(picker).to_have_value("vit-large")
    expect(tab.get_by_role("table", name="Runs").locator("tbody tr")).to_have_count(2)

    # A series whose last job was deleted is gone from the list, and its old link says so.
    gone = singles["model-00"]
    delete_job(gone.runs.get().job)
    tab.goto(f"{live_server.url}/history?series={gone.pk}")
    expect(tab.get_by_role("heading", name="This series has no runs left")).to_be_visible()
    picker.click()
    expect(footer).to_have_text("50 of 60 seriesShow more")
    expect(listbox.get_by_role("option").first).to_have_text("model-011 run")
