"""Ranks a job's traces name but never sent, and a job deleted while a teammate reads it."""

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import loaded_job
from tests.ingest.test_missing_ranks import RANK0, world_size
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_names_the_missing_ranks_on_info_cluster_dashboard_and_the_catalog(
    live_server, tab, user
):
    size = world_size(RANK0)
    loaded_job(user, "rank-0-alone", [("algo-1", 0, RANK0)])
    note = f"1 of {size} ranks · ranks 1–{size - 1} missing"
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/info")

    expect(tab.get_by_test_id("missing-ranks")).to_contain_text(note)
    screenshot(tab, "missing-ranks")
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Cluster").click()
    expect(tab.get_by_role("heading", name="Cluster", exact=True)).to_be_visible()
    expect(tab.get_by_test_id("missing-ranks")).to_contain_text(note)
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboard").click()
    expect(tab.get_by_role("heading", name="Dashboard", exact=True)).to_be_visible()
    expect(tab.get_by_test_id("missing-ranks")).to_contain_text(note)
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Profiles").click()
    row = tab.get_by_role("row", name="rank-0-alone")
    expect(row.get_by_test_id("missing-ranks-badge")).to_have_text(f"1 of {size} ranks")


def test_it_says_the_job_was_deleted_to_a_teammate_reading_it(
    live_server, tab, user, teammate, client_for
):
    job = parse_job(user, "soon-gone", [("algo-1", 0, RANK0)])
    LoadedProfile.objects.create(user=teammate, job=job)
    sign_in(tab, live_server.url, "bob", "bob-password-1", path="/info")
    expect(tab.get_by_role("heading", name="soon-gone")).to_be_visible()

    assert client_for(user).delete(f"/api/jobs/{job.id}/").status_code == 204
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Cluster").click()
    # The deletion unloaded it. Which answer comes first decides the words: the job's own (a
    # 404: "This job was deleted") or the loaded profile's (none: "No profile loaded"); either
    # way the page says so plainly, with no raw error and no endless loading.
    expect(tab.get_by_test_id("topbar-profile")).to_have_text("No profile loaded")
    main = tab.get_by_role("main")
    expect(
        main.get_by_role("heading", name="This job was deleted").or_(
            main.get_by_role("heading", name="No profile loaded")
        )
    ).to_be_visible()
    expect(tab.get_by_text("No TrainingJob matches")).to_have_count(0)
    expect(tab.get_by_role("status").filter(has_text="Loading")).to_have_count(0)
    screenshot(tab, "job-deleted")
    tab.get_by_role("link", name="Profiles").last.click()
    expect(tab).to_have_url(f"{live_server.url}/profiles")
