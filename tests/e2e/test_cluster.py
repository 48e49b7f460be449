"""The cluster page and the run comparison in headless Chromium, on real ingested traces."""

import re
from decimal import Decimal

import pytest
from playwright.sync_api import Page, expect

from profiler_app.analysis.cluster import collective_waits_by_window
from profiler_app.cluster.logic import save_collective_waits
from profiler_app.core.models import LoadedProfile, TrainingJob
from profiler_app.insights.inputs import rank_traces
from tests.cluster import raw
from tests.e2e.conftest import screenshot, sign_in
from tests.timeline.jobs import parse_job, parse_paths
from tests.traces.expected import DATA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"
SLOW = 3


def ms(value_ns: int) -> str:
    """Milliseconds to four significant digits, as the page writes them."""
    return f"{value_ns / 1e6:.4g} ms"


def duration(value_ns: int) -> str:
    """In the largest unit that keeps it at least 1, to four significant digits."""
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if value_ns >= size:
            return f"{value_ns / size:.4g} {unit}"
    return f"{value_ns} ns"


@pytest.fixture
def four_ranks(user, tmp_path):
    """Ranks 0 and 1 as recorded, rank 2 a copy of rank 0, rank 3 a copy 30% slower."""
    paths = [("algo-1", 0, DATA / RANK0), ("algo-1", 1, DATA / RANK1)]
    for rank, scale in ((2, Decimal(1)), (SLOW, Decimal("1.3"))):
        paths.append(
            ("algo-2", rank, raw.write_scaled(RANK0, tmp_path / f"r{rank}.json.gz", scale, rank))
        )
    job = parse_paths(user, "four-ranks", paths, status="completed")
    save_collective_waits(
        job, collective_waits_by_window(rank_traces(job))
    )  # as the insights task does after the parts
    LoadedProfile.objects.create(user=user, job=job)
    job.paths = [path for _, _, path in paths]
    return job


def test_it_shows_ranks_slow_ranks_and_collectives(tab: Page, live_server, user, four_ranks):
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/cluster")
    expect(tab.get_by_role("heading", name="Cluster", exact=True)).to_be_visible()
    banner = tab.get_by_role("alert")
    expect(banner).to_contain_text(f"Rank {SLOW}: compute")
    expect(banner).not_to_contain_text("Rank 0:")
    table = tab.get_by_role("table", name="Ranks")
    expect(table.locator("tbody tr")).to_have_count(4)
    # Sorting by compute, longest first, puts the slow rank on top.
    table.get_by_role("button", name="Fwd + bwd").click()
    expect(table.locator("tbody tr").first.locator("td").first).to_have_text(str(SLOW))
    link = table.locator("tbody tr").first.get_by_role("link", name="Timeline")
    expect(link).to_have_attribute(
        "href", re.compile(rf"^/jobs/{four_ranks.id}/timeline\?ranks={SLOW}&t=\d+_\d+$")
    )
    expect(tab.get_by_role("table", name="Collectives")).to_contain_text("send_recv")
    waits = raw.collective_waits(four_ranks.paths)
    longest = max(waits, key=lambda rank: waits[rank][1])
    first = tab.get_by_role("table", name="Collective waits per rank").locator("tbody tr").first
    expect(first.locator("td").first).to_have_text(str(longest))
    expect(first.locator("td").nth(5)).to_have_text(duration(waits[longest][1]))
    expect(tab.locator(".chart:has(svg path)").first).to_be_visible()
    screenshot(tab, "cluster")

    tab.get_by_label("Step", exact=True).select_option("552")
    expect(tab).to_have_url(f"{live_server.url}/jobs/{four_ranks.id}/cluster?step=552")
    step_ns, gap_ns, compute_ns, tail_ns = raw.step_breakdown(RANK0)[552]
    rank0 = table.locator("tbody tr").filter(
        has=tab.locator("td:first-child", has_text=re.compile("^0$"))
    )
    expect(rank0.locator("td")).to_contain_text(
        ["0", "algo-1", ms(step_ns), ms(gap_ns), ms(compute_ns), ms(tail_ns)]
    )

    # The Insights page flags the slow rank too, and leads to the cluster view.
    tab.goto(live_server.url + "/insights")
    slow = tab.get_by_role("region", name="Slow ranks and nodes")
    expect(slow).to_contain_text(f"Rank {SLOW}: compute")
    expect(slow).not_to_contain_text("Rank 0:")
    screenshot(tab, "insights-slow-ranks")
    slow.get_by_role("link", name="Open the cluster view").click()
    expect(tab).to_have_url(f"{live_server.url}/jobs/{four_ranks.id}/cluster")


def test_it_compares_two_jobs_from_a_shareable_link(tab: Page, live_server, user, four_ranks):
    other = parse_paths(
        user, "nccl-job", [("algo-1", 0, DATA / "nccl_rank0.json.gz")], status="completed"
    )
    url = f"/compare?a={four_ranks.id}&b={other.id}"
    sign_in(tab, live_server.url, "alice", "alice-password-1", url)
    expect(tab.get_by_role("heading", name="four-ranks → nccl-job")).to_be_visible()
    for picker, job in (("Baseline (A)", four_ranks), ("Compared run (B)", other)):
        expect(
            tab.get_by_role("group", name=picker).get_by_role("link", name="Open its dashboard")
        ).to_have_attribute("href", f"/jobs/{job.id}/dashboard")
    kernels = tab.get_by_role("table", name="Kernels diff")
    allreduce = kernels.locator("tr", has_text="ncclKernel_AllReduce")
    expect(allreduce.locator("td").nth(1)).to_have_text("added")
    expect(tab.get_by_role("table", name="Metrics side by side")).to_contain_text(
        "Mean of the steps (not the step time)"
    )
    screenshot(tab, "compare")

    # From the profiles page: the loaded job against the selected one.
    tab.goto(live_server.url + "/profiles")
    tab.get_by_label("Select nccl-job").check()
    tab.get_by_role("button", name="Compare with loaded").click()
    expect(tab).to_have_url(live_server.url + url)


def test_it_follows_the_window_in_the_collective_waits(tab: Page, live_server, user):
    job = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    save_collective_waits(job, collective_waits_by_window(rank_traces(job)))
    LoadedProfile.objects.create(user=user, job=job)
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/cluster")
    waits = tab.get_by_role("table", name="Collective waits per rank")

    def wait_of(rank: int):
        row = waits.locator("tbody tr").filter(
            has=tab.locator("td:first-child", has_text=re.compile(f"^{rank}$"))
        )
        return row.locator("td").nth(5)

    whole = raw.collective_waits([RANK0, RANK1])
    expect(wait_of(0)).to_have_text(duration(whole[0][1]))
    expect(wait_of(1)).to_have_text(duration(whole[1][1]))
    tab.get_by_label("Window").select_option("complete_steps")
    complete = raw.collective_waits([RANK0, RANK1], complete_steps=True)
    expect(wait_of(0)).to_have_text(duration(complete[0][1]))  # 144.5 ms
    expect(wait_of(1)).to_have_text("0 ns")
    screenshot(tab, "cluster-waits")


def test_it_compares_per_step_and_rank_in_one_window(tab: Page, live_server, user):
    two = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    one = parse_job(user, "one-rank", [("algo-1", 0, RANK0)])
    for n in range(55):  # newer than both: neither is among the 50 newest
        TrainingJob.objects.create(name=f"sweep-{n:02}", owner=user)
    sign_in(tab, live_server.url, "alice", "alice-password-1", "/compare")
    for side, job in (("Baseline (A)", two), ("Compared run (B)", one)):
        tab.get_by_label(f"{side}: search").fill(job.name)
        picker = tab.get_by_label(side, exact=True)
        expect(picker.locator("option", has_text=job.name)).to_have_count(1)
        picker.select_option(str(job.id))
    expect(tab).to_have_url(f"{live_server.url}/compare?a={two.id}&b={one.id}")
    expect(tab.get_by_role("heading", name="two-ranks → one-rank")).to_be_visible()

    metrics = tab.get_by_role("table", name="Metrics side by side")
    kernel = metrics.locator("tr[data-metric=kernel_ns] td")
    k0, k1 = raw.gpu_times(RANK0)["kernel_ns"], raw.gpu_times(RANK1)["kernel_ns"]
    per_a, per_b = (k0 + k1) / 4, k0 / 2
    expect(kernel).to_have_text(
        [
            "Kernel time",
            duration(per_a),
            duration(per_b),
            f"−{duration(per_a - per_b)}",
            duration(k0 + k1),
            duration(k0),
            f"−{duration(k1)}",
        ]
    )
    # Less kernel time per step per rank is better (green); the raw total is not judged.
    expect(kernel.nth(3)).to_have_class("delta-down")
    expect(kernel.nth(6)).not_to_have_class(re.compile("delta"))
    expect(tab.get_by_text("A: two-ranks: whole trace; 2 ranks")).to_be_visible()

    tab.get_by_label("Window of both jobs").select_option("complete_steps")
    expect(tab).to_have_url(re.compile(r"window=complete_steps"))
    note = tab.get_by_text("Both in one window.")
    expect(note).to_contain_text("A: two-ranks: complete steps: from the trace's start")
    expect(note).to_contain_text("B: one-rank: complete steps: from the trace's start")
    c0, c1 = raw.gpu_times(RANK0, True)["kernel_ns"], raw.gpu_times(RANK1, True)["kernel_ns"]
    expect(kernel.nth(1)).to_have_text(duration((c0 + c1) / 2))
    expect(kernel.nth(2)).to_have_text(duration(c0))
    screenshot(tab, "compare-normalised")
