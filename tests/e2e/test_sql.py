"""The SQL console in headless Chromium, on a two-rank job parsed by the real ingest."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job
from tests.traces.expected import expected

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"


@pytest.fixture
def two_ranks(user):
    return loaded_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])


def test_it_runs_an_example_and_exports_its_result(tab: Page, live_server, two_ranks):
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/sql")
    expect(tab.get_by_role("heading", name="SQL", exact=True)).to_be_visible()
    expect(tab.get_by_role("complementary", name="Schema")).to_contain_text("kernels")

    tab.get_by_role("button", name="Kernels while rank 1 waited in all-reduce").click()
    result = tab.get_by_role("table", name="Result")
    expect(result.locator("thead th")).to_have_text(["rank↕", "name↕", "kernels↕", "total_ns↕"])
    expect(result.locator("tbody tr").first).to_be_visible()
    expect(tab.get_by_role("status").filter(has_text="rows in")).to_be_visible()
    screenshot(tab, "sql-all-reduce-example")

    # A query of its own, run with Ctrl+Enter: the events per rank, as the raw JSON counts them.
    editor = tab.get_by_label("SQL query")
    editor.fill("select rank, count(*) as events from events group by rank order by rank")
    editor.press("Control+Enter")
    expect(result.locator("tbody tr")).to_have_count(2)
    expect(result.locator("tbody tr").nth(1)).to_contain_text(str(len(expected(RANK1).events)))
    expect(tab.get_by_role("status")).to_contain_text("from each part's per-name totals")
    screenshot(tab, "sql-group-by-from-totals")
    with tab.expect_download() as download:
        tab.get_by_role("button", name="Export CSV").click()
    csv = download.value.path().read_text()
    assert csv.splitlines() == [
        "rank,events",
        f"0,{len(expected(RANK0).events)}",
        f"1,{len(expected(RANK1).events)}",
    ]


def test_it_says_why_a_query_was_refused(tab: Page, live_server, two_ranks):
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/sql")
    editor = tab.get_by_label("SQL query")
    editor.fill("COPY (select * from events) TO '/tmp/events.csv'")
    tab.get_by_role("button", name="Run", exact=True).click()
    expect(tab.get_by_role("alert")).to_contain_text("Only SELECT queries can run here")
    editor.fill("select * from read_parquet('/etc/passwd')")
    editor.press("Control+Enter")
    expect(tab.get_by_role("alert")).to_contain_text("file system operations are disabled")
    screenshot(tab, "sql-refused")


def test_it_says_the_answer_was_cut_and_why(tab: Page, live_server, two_ranks, settings):
    settings.SQL_MAX_BYTES = 20_000
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/sql")
    editor = tab.get_by_label("SQL query")
    editor.fill("select * from events")
    editor.press("Control+Enter")
    expect(tab.get_by_role("status").filter(has_text="the answer was cut")).to_be_visible()
    cut = tab.get_by_role("note", name="Answer cut")
    expect(cut).to_contain_text("The answer reached 20,000 bytes after")
    expect(cut).to_contain_text("(SQL_MAX_BYTES)")
    expect(tab.get_by_role("table", name="Result").locator("tbody tr").first).to_be_visible()
    screenshot(tab, "sql-capped")
