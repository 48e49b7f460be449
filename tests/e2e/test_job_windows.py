"""Each viewer's own window in headless Chromium: a teammate switches Alice's job from her
complete steps to the whole trace and the figures change for him only; his comparison takes
both jobs in his window, and his insights are computed in it. Expected figures come from the traces' raw JSON."""

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile, TrainingJob
from profiler_app.insights import logic as insights
from profiler_app.insights.models import JobInsights
from tests.cluster import raw
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.test_cluster import duration
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"


def steps_stat(page: Page):
    panel = page.locator(
        "section.panel", has=page.get_by_role("heading", name="Step time distribution", exact=True)
    )
    return panel.locator(".panel-stats")


def count(steps: list[int]) -> str:
    return f"Count{len(steps)} step{'' if len(steps) == 1 else 's'}"


def test_a_teammate_switches_his_own_window(
    live_server, new_tab, user, teammate, celery_worker_process
):
    job = parse_job(
        user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)], window="complete_steps"
    )
    other = parse_job(user, "one-rank", [("algo-1", 0, RANK0)])
    insights.request_run(job.id, delay_s=0)  # as the parse task does, for Alice's window
    for who in (user, teammate):
        LoadedProfile.objects.create(user=who, job=job)
    whole = raw.step_times(RANK0) + raw.step_times(RANK1)
    complete = raw.step_times(RANK0, True) + raw.step_times(RANK1, True)

    bob = new_tab()
    sign_in(bob, live_server.url, "bob", "bob-password-1", path="/dashboard")
    switch = bob.get_by_label("Window")
    expect(switch).to_have_value("complete_steps")  # Alice's, until he chooses
    expect(switch).to_be_enabled()
    expect(steps_stat(bob)).to_contain_text(count(complete))
    expect(bob.get_by_test_id("window-own")).to_have_count(0)

    switch.select_option("whole_trace")
    expect(steps_stat(bob)).to_contain_text(count(whole))
    expect(bob.locator(".window-switch")).to_contain_text("Showing whole trace")
    expect(bob.get_by_test_id("window-own")).to_have_text(
        "Your own window: the owner (alice) shows this job in complete steps."
    )
    screenshot(bob, "dashboard-teammate-window")
    assert TrainingJob.objects.get(pk=job.pk).window == "complete_steps"

    # Alice still reads her complete steps.
    alice = new_tab()
    sign_in(alice, live_server.url, "alice", "alice-password-1", path="/dashboard")
    expect(alice.get_by_label("Window")).to_have_value("complete_steps")
    expect(steps_stat(alice)).to_contain_text(count(complete))
    expect(alice.get_by_test_id("window-own")).to_have_count(0)

    # Bob's comparison takes both jobs in his window of A, though Alice's is complete steps.
    bob.goto(f"{live_server.url}/compare?a={job.id}&b={other.id}")
    expect(bob.get_by_text("A: two-ranks: whole trace; 2 ranks")).to_be_visible()
    expect(bob.get_by_label("Window of both jobs")).to_have_value("whole_trace")
    kernel = bob.get_by_role("table", name="Metrics side by side").locator(
        "tr[data-metric=kernel_ns] td"
    )
    k0, k1 = raw.gpu_times(RANK0)["kernel_ns"], raw.gpu_times(RANK1)["kernel_ns"]
    expect(kernel.nth(1)).to_have_text(duration((k0 + k1) / len(whole)))
    expect(kernel.nth(2)).to_have_text(duration(k0 / len(raw.step_times(RANK0))))
    screenshot(bob, "compare-teammate-window")

    # Bob's insights are computed in his window on his first visit; Alice's stay hers.
    bob.goto(f"{live_server.url}/insights")
    expect(bob.locator(".window-switch select")).to_have_value("whole_trace")
    expect(bob.locator(".window-switch")).to_contain_text("Showing whole trace", timeout=60_000)
    expect(bob.get_by_role("heading", name="Rules", exact=True)).to_be_visible(timeout=60_000)
    expect(bob.get_by_role("table", name="Kernel types")).to_be_visible(timeout=60_000)
    expect(bob.locator(".panel-window").first).to_have_text("whole trace")
    screenshot(bob, "insights-teammate-window")

    alice.goto(f"{live_server.url}/insights")
    expect(alice.get_by_role("table", name="Kernel types")).to_be_visible(timeout=60_000)
    expect(alice.locator(".panel-window").first).to_contain_text("complete steps")
    rows = JobInsights.objects.filter(job=job, status="done")
    assert sorted(rows.values_list("window", flat=True)) == ["complete_steps", "whole_trace"]
