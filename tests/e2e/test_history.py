"""The History page in headless Chromium: two runs of one series, parsed by the real ingest,
and the verdict with its causes."""

import re

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile
from profiler_app.history import logic
from profiler_app.history.models import Series
from tests.e2e.conftest import screenshot, sign_in
from tests.history.traces import ALLREDUCE, NCCL, NEW_KERNEL, raw_figures, write_slower
from tests.timeline.jobs import parse_paths
from tests.traces.expected import DATA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def slower_trace(tmp_path_factory):
    return write_slower(tmp_path_factory.mktemp("history") / "nccl_slower.json.gz")


@pytest.fixture
def two_runs(user, slower_trace):
    jobs = []
    for name, path in (("nccl-1", DATA / NCCL), ("nccl-2", slower_trace)):
        job = parse_paths(user, name, [("algo-1", 0, path)], status="completed")
        logic.assign(job, "nccl-model")
        logic.judge_job(job.pk)
        jobs.append(job)
    return jobs


def test_it_shows_the_runs_and_the_verdict_with_its_causes(
    tab: Page, live_server, user, two_runs, slower_trace
):
    base, run = two_runs
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/history")
    expect(tab.get_by_role("heading", name="History", exact=True)).to_be_visible()
    expect(tab.get_by_role("combobox", name="Series")).to_have_value("nccl-model")
    runs = tab.get_by_role("table", name="Runs")
    expect(runs.locator("tbody tr")).to_have_count(2)
    expect(runs.locator("tbody tr").nth(0)).to_contain_text("Could not judge")
    slower = runs.locator("tbody tr").nth(1)
    expect(slower).to_contain_text("Regression")
    expect(slower).to_contain_text("+12.4 %")
    expect(slower.get_by_role("link", name="nccl-2")).to_have_attribute(
        "href", f"/jobs/{run.pk}/dashboard"
    )
    expect(slower.get_by_role("link", name="Compare")).to_have_attribute(
        "href", f"/compare?a={base.pk}&b={run.pk}"
    )
    verdict = tab.get_by_role("region", name="Verdict")
    expect(verdict).to_contain_text("Verdict of nccl-2: Regression")
    expect(verdict).to_contain_text("Against nccl-1.")
    expect(verdict.get_by_role("link", name="nccl-1")).to_have_attribute(
        "href", f"/jobs/{base.pk}/dashboard"
    )
    expect(verdict).to_contain_text("p = 0.0500 (exact, 3 steps against 3)")
    causes = tab.get_by_role("table", name="Causes, largest first")
    first = causes.locator("tbody tr").first
    expect(first).to_contain_text(ALLREDUCE)
    allreduce_ms = raw_figures(slower_trace)["allreduce_ns"] / 3 / 1e6
    expect(first).to_contain_text(f"{allreduce_ms:.4g} ms")
    expect(causes).to_contain_text(NEW_KERNEL)
    top = tab.get_by_role("table", name="Top kernels and operators of nccl-2")
    expect(top.locator("tbody tr")).to_have_count(10)  # five of each
    expect(top.locator("tbody tr").first).to_contain_text("## backward ##")
    per_rank = tab.get_by_role("table", name="Step time per rank of nccl-2")
    expect(per_rank.locator("tbody tr")).to_have_count(1)
    rank_0 = per_rank.locator("tbody tr").first
    median_ms = raw_figures(slower_trace)["median_ns"] / 1e6
    expect(rank_0.locator("td")).to_have_text(["0", "3", f"{median_ms:.4g} ms", re.compile(" ms$")])
    expect(tab.locator(".chart:has(svg path)").first).to_be_visible()
    screenshot(tab, "history")

    # The first run's own verdict: the series' first, with no baseline.
    runs.locator("tbody tr").nth(0).click()
    expect(verdict).to_contain_text("Verdict of nccl-1: Could not judge")
    expect(verdict).to_contain_text("No baseline")

    # The slower run's own Info page: its series, verdict, baseline and top causes.
    LoadedProfile.objects.create(user=user, job=run)
    tab.goto(f"{live_server.url}/info")
    card = tab.locator("section", has=tab.get_by_role("heading", name="Regression verdict"))
    expect(card.locator(".verdict")).to_have_text("Regression")
    expect(card.get_by_role("link", name="nccl-model")).to_have_attribute(
        "href", f"/history?series={Series.objects.get(name='nccl-model').pk}"
    )
    expect(card.get_by_role("link", name="nccl-1")).to_have_attribute(
        "href", f"/jobs/{base.pk}/dashboard"
    )
    expect(card).to_contain_text("+12.4 %")
    top = card.get_by_role("list", name="Top causes").get_by_role("listitem")
    expect(top).to_have_count(3)
    expect(top.first).to_contain_text(ALLREDUCE)
    base_ns = raw_figures(DATA / NCCL)["allreduce_ns"] / 3
    delta_ms = (round(allreduce_ms * 1e6) - round(base_ns)) / 1e6
    expect(top.first).to_contain_text(f": +{delta_ms:.4g} ms.")
    expect(top.first).to_contain_text(f"{base_ns / 1e6:.2f} ms → {allreduce_ms:.2f} ms")
    screenshot(tab, "info-verdict")

    # A point of a History chart opens its run.
    tab.goto(f"{live_server.url}/history?series={Series.objects.get(name='nccl-model').pk}")
    step_chart = tab.get_by_role("img", name="Step time per run")
    # The runs' markers: unit circles scaled into place (the legend's are drawn at full size).
    points = step_chart.locator("svg path[d='M1 0A1 1 0 1 1 1 -0.0001'][fill='#fff']")
    expect(points).to_have_count(4)  # two runs, median and p95
    points.last.click()
    expect(tab).to_have_url(f"{live_server.url}/jobs/{run.pk}/dashboard")


def test_the_owner_sets_the_series_and_a_teammate_reads_them(
    new_tab, live_server, user, teammate, two_runs
):
    base, _ = two_runs
    owner = new_tab()
    sign_in(owner, live_server.url, "alice", "alice-password-1", "/history")
    settings = owner.get_by_role("region", name="Series settings")
    settings.get_by_label("Baseline").select_option(str(base.pk))
    settings.get_by_label("Threshold (%)").fill("20")
    # The save's answer, not the button's state, says the change is stored (on a busy machine
    # the button is enabled again before the request has even left).
    patch_url = f"{live_server.url}/api/series/{Series.objects.get(name='nccl-model').pk}/"
    with owner.expect_response(
        lambda r: r.url == patch_url and r.request.method == "PATCH"
    ) as answer:
        settings.get_by_role("button", name="Save").click()
    assert answer.value.status == 200
    expect(settings.get_by_role("button", name="Save")).to_be_enabled()
    series = Series.objects.get(name="nccl-model")
    expect(settings.get_by_label("Threshold (%)")).to_have_value("20")
    series.refresh_from_db()
    assert (series.step_threshold_pct, series.baseline) == (20.0, base)

    other = new_tab()
    sign_in(other, live_server.url, "bob", "bob-password-1", "/history")
    theirs = other.get_by_role("region", name="Series settings")
    expect(theirs).to_contain_text("Only alice or staff change these.")
    expect(theirs.get_by_label("Threshold (%)")).to_be_disabled()
    expect(theirs.get_by_role("button", name="Save")).to_have_count(0)
