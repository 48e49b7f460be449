from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import catalog, make_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOW = datetime(2025, 6, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def jobs(user):
    return catalog(user, NOW)


def expect_jobs(page: Page, names: list[str]) -> None:
    """Waits until the table lists exactly these jobs, in this order."""
    expect(page.locator(".jobs-table tbody .job-name")).to_have_text(names)


def test_it_lists_searches_filters_and_sorts_jobs(live_server, tab, user, jobs):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    # Newest first by default.
    expect_jobs(
        tab,
        [
            "bert-large-pretrain",
            "gpt2-small-debug",
            "vit-b16-sweep-3",
            "resnet50-baseline",
        ],
    )
    running = tab.get_by_role("row", name="bert-large-pretrain")
    expect(running.get_by_text("partial")).to_be_visible()
    expect(running.get_by_text("In Progress")).to_be_visible()
    expect(running.get_by_text("1/3")).to_be_visible()
    finished = tab.get_by_role("row", name="resnet50-baseline")
    expect(finished.get_by_text("partial")).to_have_count(0)
    expect(finished.get_by_text("192 MB")).to_be_visible()
    expect(finished.get_by_text("4/4")).to_be_visible()
    screenshot(tab, "profiles")

    tab.get_by_placeholder("Job name contains…").fill("-B")
    expect_jobs(tab, ["vit-b16-sweep-3", "resnet50-baseline"])

    # The box follows the URL a moment after the click (check() would require it at once).
    tab.get_by_label("Stopped", exact=True).click()
    expect(tab.get_by_label("Stopped", exact=True)).to_be_checked()
    expect_jobs(tab, ["vit-b16-sweep-3"])
    screenshot(tab, "profiles-filtered")

    tab.get_by_role("button", name="Clear filters").click()
    # Filters follow the URL a moment later: let the clearing land before the next change.
    expect(tab.get_by_label("Stopped", exact=True)).not_to_be_checked()
    expect_jobs(
        tab, ["bert-large-pretrain", "gpt2-small-debug", "vit-b16-sweep-3", "resnet50-baseline"]
    )
    tab.get_by_label("Created from").fill("2025-06-10")
    tab.get_by_label("to", exact=True).fill("2025-06-17")
    expect_jobs(tab, ["gpt2-small-debug", "vit-b16-sweep-3"])

    tab.get_by_role("button", name="Clear filters").click()
    tab.get_by_role("button", name="Name").click()
    expect_jobs(
        tab,
        [
            "bert-large-pretrain",
            "gpt2-small-debug",
            "resnet50-baseline",
            "vit-b16-sweep-3",
        ],
    )
    tab.get_by_role("button", name="Name").click()
    expect_jobs(
        tab, ["vit-b16-sweep-3", "resnet50-baseline", "gpt2-small-debug", "bert-large-pretrain"]
    )

    # Filters live in the URL, so a reload shows the same list.
    # The box follows the URL a moment after the click (check() would require it at once).
    tab.get_by_label("Failed", exact=True).click()
    expect(tab.get_by_label("Failed", exact=True)).to_be_checked()
    expect(tab.locator(".jobs-table tbody tr")).to_have_count(1)
    tab.reload()
    expect(tab.get_by_label("Failed", exact=True)).to_be_checked()
    expect_jobs(tab, ["gpt2-small-debug"])


def test_it_pages_through_many_jobs(live_server, tab, user):
    for i in range(120):
        make_job(f"sweep-{i:03d}", created_at=NOW - timedelta(minutes=i))
    sign_in(tab, live_server.url, "alice", "alice-password-1")

    expect(tab.get_by_text("1–50 of 120")).to_be_visible()
    expect(tab.get_by_text("Page 1 of 3")).to_be_visible()
    tab.get_by_role("button", name="Last").click()
    expect(tab.get_by_text("101–120 of 120")).to_be_visible()
    expect(tab.locator(".jobs-table tbody tr")).to_have_count(20)
    expect(tab.locator(".jobs-table tbody .job-name").last).to_have_text("sweep-119")


def test_it_loads_refuses_a_second_load_and_unloads(live_server, tab, user, jobs):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    load = tab.get_by_role("button", name="Load", exact=True)
    expect(load).to_be_disabled()

    tab.get_by_label("Select bert-large-pretrain").check()
    load.click()
    loaded = tab.get_by_test_id("loaded-profile")
    expect(loaded).to_contain_text("bert-large-pretrain")
    expect(loaded.get_by_text("partial")).to_be_visible()
    expect(loaded).to_contain_text("35.0 MB")
    expect(loaded).to_contain_text("1/3")
    expect(tab.locator(".topbar-loaded")).to_contain_text("bert-large-pretrain")
    assert LoadedProfile.objects.get(user=user).job == jobs["bert-large-pretrain"]
    screenshot(tab, "profiles-loaded")

    tab.get_by_label("Select resnet50-baseline").check()
    load.click()
    expect(tab.get_by_role("alert")).to_contain_text(
        "“bert-large-pretrain” is already loaded. Unload it first"
    )
    assert LoadedProfile.objects.get(user=user).job == jobs["bert-large-pretrain"]
    expect(
        tab.get_by_role("button", name="Unload bert-large-pretrain and load resnet50-baseline")
    ).to_be_visible()
    screenshot(tab, "profiles-second-load-refused")

    # The loaded profile is kept on the server, so it survives a reload.
    tab.reload()
    expect(tab.get_by_test_id("loaded-profile")).to_contain_text("bert-large-pretrain")

    tab.get_by_role("button", name="Unload bert-large-pretrain").click()
    expect(tab.get_by_test_id("loaded-profile")).to_have_count(0)
    expect(tab.get_by_text("No profile loaded. Select a training job")).to_be_visible()
    assert not LoadedProfile.objects.filter(user=user).exists()

    tab.get_by_label("Select resnet50-baseline").check()
    load.click()
    expect(tab.get_by_test_id("loaded-profile")).to_contain_text("resnet50-baseline")
    tab.get_by_role("link", name="Open its dashboard").click()
    expect(tab).to_have_url(f"{live_server.url}/jobs/{jobs['resnet50-baseline'].id}/dashboard")


def test_it_opens_the_dashboard_from_the_loaded_job(live_server, tab, user, jobs):
    LoadedProfile.objects.create(user=user, job=jobs["resnet50-baseline"])
    sign_in(tab, live_server.url, "alice", "alice-password-1")

    tab.get_by_label("Open the dashboard for resnet50-baseline").click()

    expect(tab).to_have_url(f"{live_server.url}/jobs/{jobs['resnet50-baseline'].id}/dashboard")
    expect(tab.get_by_role("heading", name="Dashboard")).to_be_visible()
    expect(tab.get_by_role("heading", name="GPU active time")).to_be_visible()
    screenshot(tab, "dashboard-from-profiles")


def test_it_keeps_one_loaded_profile_per_user(live_server, new_tab, user, teammate, jobs):
    alice, bob = new_tab(), new_tab()
    sign_in(alice, live_server.url, "alice", "alice-password-1")
    sign_in(bob, live_server.url, "bob", "bob-password-1")

    alice.get_by_label("Select resnet50-baseline").check()
    alice.get_by_role("button", name="Load", exact=True).click()
    expect(alice.get_by_test_id("loaded-profile")).to_contain_text("resnet50-baseline")

    bob.get_by_label("Select gpt2-small-debug").check()
    bob.get_by_role("button", name="Load", exact=True).click()
    expect(bob.get_by_test_id("loaded-profile")).to_contain_text("gpt2-small-debug")

    alice.reload()
    expect(alice.get_by_test_id("loaded-profile")).to_contain_text("resnet50-baseline")
