"""The Insights page of a sampled collector job reads for a person (issue 46, item 6): rules
with a finding first, evidence named in words and shown in readable units with the raw value on
hover, kernel names that fit their column with the full name on hover.

The job is the H200 collector spool (tests/data/README.md), parsed and analysed as a worker does;
the expected kernel comes from the chunks' arrays (``tests.insights.converted``), not the API.
"""

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from profiler_app.insights.models import InsightsStatus
from tests import h200
from tests.e2e.conftest import SCREENSHOTS, screenshot, sign_in
from tests.insights.converted import read_converted
from tests.insights.helpers import compute_here

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Where the screenshots are copied for people to look at.
SHOWN = SCREENSHOTS


def test_insights_of_a_sampled_job_read_for_a_person(live_server, tab, user, tmp_path):
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-collector", chunks, "collector", owner=user)
    row = compute_here(job)
    assert row.status == InsightsStatus.DONE, row.error
    LoadedProfile.objects.create(user=user, job=job)
    raw = read_converted(chunks)
    kernels = raw.kernel_ns
    top_name, _ = min(kernels.items(), key=lambda kv: (-kv[1], kv[0]))

    SHOWN.mkdir(parents=True, exist_ok=True)
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    rules = tab.locator(".insights-rules", has=tab.get_by_role("heading", name="Rules", exact=True))
    badges = rules.locator(".rule-heading .badge")
    expect(badges.first).to_have_text("Issue found")
    statuses = badges.all_text_contents()
    found = statuses.count("Issue found")
    assert found >= 1
    assert statuses[:found] == ["Issue found"] * found, statuses

    # Evidence labels are words, never a field name such as "share_pct" or "SHARE PCT".
    labels = tab.locator(".rule-evidence dt").all_text_contents()
    assert labels
    for label in labels:
        assert "_" not in label and not label.lower().endswith((" ns", " pct", " bytes")), label

    # The busiest kernel by the chunks' own durations heads the kernel table, shortened to fit.
    # The busiest kernel by the chunks' own durations is shortened to fit, its full name on
    # hover; a copy keeps its whole name, which says it is pageable.
    kernel_table = tab.get_by_role("table", name="GPU kernels")
    top_cell = kernel_table.get_by_title(top_name, exact=True)
    expect(top_cell).to_be_visible()
    shown = top_cell.text_content() or ""
    assert not shown.startswith("void ") and len(shown) < len(top_name), shown
    pageable = "Memcpy HtoD (Pageable -> Device)"
    expect(kernel_table.get_by_title(pageable, exact=True)).to_have_text(pageable)
    screenshot(tab, "insights-h200-readable")
    # Parts of the page at full size, for people to read.
    rules.screenshot(path=str(SHOWN / "insights-h200-rules.png"))
    recommendations = tab.locator('.insights-rules[aria-label="Recommendations"]')
    recommendations.screenshot(path=str(SHOWN / "insights-h200-recommendations.png"))
    kernel_table.screenshot(path=str(SHOWN / "insights-h200-kernels.png"))
    bandwidth = tab.locator("section.card", has_text="Memory copy bandwidth over time")
    bandwidth.screenshot(path=str(SHOWN / "insights-h200-bandwidth.png"))

    tab.goto(live_server.url + "/dashboard")
    expect(tab.get_by_role("heading", name="Time spent by all GPU kernels")).to_be_visible()
    screenshot(tab, "dashboard-h200-headline")
    tab.get_by_role("region", name="Headline").screenshot(
        path=str(SHOWN / "dashboard-h200-headline.png")
    )
