"""The Insights page's launch findings on the MI250 trace in headless Chromium: launches as HTA
counts them (none: HTA counts no ROCm call) and, beside them, every call that enqueued GPU work
(16, counted from the raw JSON)."""

import gzip
import json

import pytest
from playwright.sync_api import expect

from tests.conftest import DATA_DIR
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import worker_processed_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MI250 = DATA_DIR / "amd_mi250_small.json.gz"
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def enqueue_calls() -> int:
    with gzip.open(MI250, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    enqueued = {e["args"]["correlation"] for e in events if e.get("cat") in DEVICE_CATEGORIES}
    return sum(
        1
        for e in events
        if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("correlation") in enqueued
    )


def test_the_launch_table_shows_htas_launches_and_the_wider_count(
    live_server, tab, user, celery_worker_process
):
    worker_processed_job(user, "mi250", MI250)

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    table = tab.get_by_role("table", name="Kernel launches")
    expect(table.get_by_role("columnheader", name="Launches (HTA)")).to_be_visible()
    expect(table.get_by_role("columnheader", name="All enqueue calls")).to_be_visible()
    [row] = table.locator("tbody tr").all()
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text("0")
    expect(cells.nth(5)).to_have_text(f"{enqueue_calls():,}")
    table.scroll_into_view_if_needed()
    screenshot(tab, "launch-counts")
