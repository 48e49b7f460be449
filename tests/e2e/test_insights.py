"""The Insights page of a real ingested trace in headless Chromium: rules, analyses, a
parameter change that re-runs the rules (on a real worker) and the report download."""

import csv

import pytest
from playwright.sync_api import Locator, expect

from profiler_app.insights.models import JobInsights
from tests.conftest import DATA_DIR
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import worker_processed_job
from tests.insights.test_insights_api import RULE_NAMES, wait_insights

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

A100 = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"


@pytest.fixture
def a100_job(user, celery_worker_process):
    return worker_processed_job(user, "resnet-insights", A100)


def test_it_shows_rules_and_analyses_and_reruns_with_new_parameters(
    live_server, tab, user, a100_job
):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    for rule in RULE_NAMES:
        expect(tab.get_by_role("region", name=rule, exact=True)).to_be_visible()
    # No NVML samples in an imported trace: the GPU rule judges kernel busy time and says so;
    # a rule whose data the trace lacks says how to record it.
    low_gpu = tab.get_by_role("region", name="LowGPUUtilization", exact=True)
    expect(low_gpu).to_contain_text("No issue")
    expect(low_gpu).to_contain_text("kernel busy time (no NVML samples in this profile)")
    memory = tab.get_by_role("region", name="GPUMemoryIncrease", exact=True)
    expect(memory).to_contain_text("Not evaluated")
    expect(memory).to_contain_text("profile the job with the collector")
    expect(tab.get_by_role("table", name="Kernel launches")).to_be_visible()
    expect(tab.get_by_role("img", name="Rank 0 temporal breakdown")).to_be_visible()
    screenshot(tab, "insights-rules")

    before = JobInsights.objects.get(job=a100_job).generation
    tab.get_by_text("StepOutlier", exact=True).last.click()  # the rule's parameter form
    form = tab.get_by_role("form", name="StepOutlier parameters")
    form.locator('input[name="StepOutlier_stddev"]').fill("1")
    form.get_by_role("button", name="Save and re-run").click()
    expect(form).to_contain_text("Saved")
    wait_insights(a100_job, after_generation=before)
    assert JobInsights.objects.get(job=a100_job).report["overrides"] == {"StepOutlier_stddev": "1"}
    screenshot(tab, "insights-parameters")

    with tab.expect_download() as download_info:
        tab.get_by_role("link", name="Download report").click()
    download = download_info.value
    assert download.suggested_filename == f"profiler-report-{a100_job.id}.html"
    html = download.path().read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "resnet-insights" in html
    tab.goto(live_server.url + "/insights")
    expect(tab.get_by_role("table", name="Kernel types")).to_be_visible()
    expect(tab.get_by_role("img", name="Memory copy bandwidth per rank and kind")).to_be_visible()
    bandwidth = tab.get_by_role("table", name="Memory copy bandwidth while copies run (GB/s)")
    expect(bandwidth).to_contain_text("Memcpy DtoD")
    expect(tab.get_by_role("table", name="Queue length per stream")).to_be_visible()
    tab.get_by_role(
        "img", name="Memory copy bandwidth per rank and kind"
    ).scroll_into_view_if_needed()
    screenshot(tab, "insights-bandwidth")
    tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(tab.get_by_text("Input shapes were not recorded")).to_be_visible()
    screenshot(tab, "insights-analyses")


H100 = DATA_DIR / "h100_cnn_kineto.json.gz"  # recorded with record_shapes=True


def test_it_groups_operators_by_input_shape(live_server, tab, user, celery_worker_process):
    worker_processed_job(user, "cnn-shapes", H100)

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    card = tab.get_by_role("region", name="Operators", exact=True)
    table = card.get_by_role("table", name="Operators")
    expect(card.get_by_test_id("row-count")).to_have_text("100 rows")
    expect(table.get_by_role("columnheader", name="Input shapes")).to_have_count(0)
    tab.get_by_label("Group by input shape").check()
    expect(card.get_by_test_id("row-count")).to_have_text("188 rows")
    expect(table.get_by_role("columnheader", name="Input shapes")).to_be_visible()
    # The backward convolution of each layer, with its own input shapes; all rows are there.
    card.get_by_label("Filter Operators by name").fill("aten::convolution_backward")
    expect(card.get_by_test_id("row-count")).to_have_text("3 of 188 rows")
    expect(table).to_contain_text("[[64, 64, 8, 8], [64, 64, 8, 8], [64, 64, 3, 3]")
    with tab.expect_download() as download_info:
        card.get_by_role("button", name="Export CSV").click()
    assert download_info.value.suggested_filename == "operators-by-input-shape.csv"
    lines = list(csv.reader(download_info.value.path().open(encoding="utf-8", newline="")))
    assert lines[0][:3] == ["name", "input_dims", "count"]
    assert [line[0] for line in lines[1:]] == ["aten::convolution_backward"] * 3
    assert all(line[1].startswith("[[64, ") for line in lines[1:])
    card.scroll_into_view_if_needed()
    screenshot(tab, "insights-operators-by-shape")


def column(table: Locator, index: int) -> list[str]:
    """The text of one column in the rows the table has drawn (a window of a long table)."""
    expect(table.locator("tbody tr[data-index]").first).to_be_visible()
    return [
        row.get_by_role("cell").nth(index).inner_text()
        for row in table.locator("tbody tr[data-index]").all()
    ]


def sort_by(card: Locator, header: str, direction: str) -> None:
    """Click a column header until the table sorts by it in ``direction``."""
    cell = card.get_by_role("columnheader", name=header, exact=True)
    for _ in range(2):
        if cell.get_attribute("aria-sort") == direction:
            return
        cell.get_by_role("button").click()
    expect(cell).to_have_attribute("aria-sort", direction)


def test_tables_sort_filter_and_export_every_row(live_server, tab, user, a100_job):
    analyses = JobInsights.objects.get(job=a100_job).analyses
    operators = analyses["operators"]
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")

    # Every operator of the trace (109 rows, its steps one of them: the API's test counts them
    # in the raw JSON), drawn a window at a time, the busiest first.
    card = tab.get_by_role("region", name="Operators", exact=True)
    table = card.get_by_role("table", name="Operators")
    expect(card.get_by_test_id("row-count")).to_have_text(f"{len(operators)} rows")
    assert len(operators) == analyses["operators_total"] == 109
    expect(table.get_by_role("columnheader", name="Self CPU", exact=True)).to_have_attribute(
        "aria-sort", "descending"
    )
    drawn = table.locator("tbody tr[data-index]")
    expect(drawn.first).to_be_visible()
    assert drawn.count() < len(operators)
    by_self = sorted(operators, key=lambda o: -o["self_ns"])
    assert column(table, 0)[:5] == [o["name"] for o in by_self[:5]]
    table.locator("xpath=..").evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    expect(table.get_by_role("cell", name=by_self[-1]["name"], exact=True)).to_be_visible()
    card.scroll_into_view_if_needed()
    screenshot(tab, "insights-operators-scrolled")
    table.locator("xpath=..").evaluate("(el) => { el.scrollTop = 0; }")

    # Sort by calls, most first, then the other way; then by name, A to Z ignoring case.
    calls = sorted(o["count"] for o in operators)
    sort_by(card, "Calls", "descending")
    shown = [int(c.replace(",", "")) for c in column(table, 1)]
    assert shown == calls[::-1][: len(shown)] and len(shown) >= 10
    sort_by(card, "Calls", "ascending")
    shown = [int(c.replace(",", "")) for c in column(table, 1)]
    assert shown == calls[: len(shown)]
    sort_by(card, "Operator", "ascending")
    names = sorted((o["name"] for o in operators), key=str.lower)
    assert column(table, 0) == names[: len(column(table, 0))]
    screenshot(tab, "insights-operators-sorted")

    # Filter by a name: exactly the operators whose name holds it, in the chosen order.
    card.get_by_label("Filter Operators by name").fill("Batch_Norm")
    matching = [n for n in names if "batch_norm" in n.lower()]
    assert len(matching) == 4
    expect(card.get_by_test_id("row-count")).to_have_text(f"4 of {len(operators)} rows")
    assert column(table, 0) == matching
    sort_by(card, "Self CPU", "descending")
    expected = [o for o in by_self if "batch_norm" in o["name"].lower()]
    assert column(table, 0) == [o["name"] for o in expected]
    card.scroll_into_view_if_needed()
    screenshot(tab, "insights-operators-filtered")

    # The CSV holds the rows shown, in their order, with raw values under unit-named headers.
    with tab.expect_download() as download_info:
        card.get_by_role("button", name="Export CSV").click()
    assert download_info.value.suggested_filename == "operators.csv"
    with download_info.value.path().open(encoding="utf-8", newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0] == ["name", "count", "self_ns", "total_ns", "avg_self_ns", "self_pct"]
    assert [(line[0], int(line[2])) for line in lines[1:]] == [
        (o["name"], o["self_ns"]) for o in expected
    ]

    # The kernel table: every kernel, exported whole.
    kernels = tab.get_by_role("region", name="GPU kernels", exact=True)
    expect(kernels.get_by_test_id("row-count")).to_have_text(f"{analyses['kernels_total']} rows")
    with tab.expect_download() as download_info:
        kernels.get_by_role("button", name="Export CSV").click()
    with download_info.value.path().open(encoding="utf-8", newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0][:4] == ["name", "type", "count", "sum_ns"]
    assert len(lines) == 1 + analyses["kernels_total"]
    assert {line[0] for line in lines[1:]} == {k["name"] for k in analyses["kernels"]}
    kernels.get_by_label("Filter GPU kernels by name").fill("sgemm")
    sgemm = sorted(
        (k for k in analyses["kernels"] if "sgemm" in k["name"]), key=lambda k: -k["sum_ns"]
    )
    expect(kernels.get_by_test_id("row-count")).to_have_text(
        f"{len(sgemm)} of {analyses['kernels_total']} rows"
    )
    assert column(kernels.get_by_role("table"), 0) == [k["name"] for k in sgemm]
    kernels.scroll_into_view_if_needed()
    screenshot(tab, "insights-kernels")

    # A per-rank table sorts and exports the same way.
    idle = tab.get_by_role("region", name="Idle time by cause", exact=True)
    sort_by(idle, "Idle", "descending")
    causes = sorted(analyses["idle"], key=lambda r: -r["idle_ns"])
    assert column(idle.get_by_role("table"), 2) == [r["category"] for r in causes]
    with tab.expect_download() as download_info:
        idle.get_by_role("button", name="Export CSV").click()
    with download_info.value.path().open(encoding="utf-8", newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0] == ["rank", "stream", "category", "idle_ns", "idle_ratio"]
    assert [int(line[3]) for line in lines[1:]] == [r["idle_ns"] for r in causes]
    idle.scroll_into_view_if_needed()
    screenshot(tab, "insights-idle-sorted")
