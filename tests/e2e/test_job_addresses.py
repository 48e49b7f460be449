"""A job's address (/jobs/<id>/<page>) opens that job in headless Chromium, whatever the viewer
has loaded: links, two tabs, a teammate's open page of a job deleted since, a job whose every
part failed, and the call tree opening on the thread that ran the training steps."""

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile, PartState
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.seed import add_part, make_job
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SMALL = "amd_mi250_small.json.gz"


def small_job(owner, name):
    return parse_job(owner, name, [("algo-1", 0, SMALL)], status="completed")


def heading(page, name):
    return page.get_by_role("heading", name=re.compile(f"^{re.escape(name)}"))


def test_a_link_to_a_jobs_dashboard_opens_it_while_another_is_loaded(live_server, tab, user):
    loaded = small_job(user, "loaded-run")
    linked = small_job(user, "linked-run")
    LoadedProfile.objects.create(user=user, job=loaded)

    # A History run link, followed from a colleague's message.
    sign_in(tab, live_server.url, "alice", "alice-password-1", f"/jobs/{linked.id}/dashboard")
    expect(tab).to_have_url(f"{live_server.url}/jobs/{linked.id}/dashboard")
    expect(heading(tab, "linked-run")).to_be_visible()
    expect(tab.get_by_test_id("topbar-profile")).to_have_text("Viewing: linked-run not loaded")
    expect(tab.get_by_test_id("not-loaded-notice")).to_contain_text("loaded-run is loaded")
    expect(tab.get_by_text("GPU kernels", exact=False).first).to_be_visible()
    screenshot(tab, "job-address-dashboard")

    # The menu stays on the job the address names.
    nav = tab.get_by_role("navigation", name="Main")
    nav.get_by_role("link", name="Info").click()
    expect(tab).to_have_url(f"{live_server.url}/jobs/{linked.id}/info")
    expect(heading(tab, "linked-run")).to_be_visible()
    assert LoadedProfile.objects.get(user=user).job_id == loaded.id

    # An old link with ?job= moves to the job's address.
    tab.goto(f"{live_server.url}/dashboard?job={linked.id}")
    expect(tab).to_have_url(f"{live_server.url}/jobs/{linked.id}/dashboard")
    expect(heading(tab, "linked-run")).to_be_visible()


def test_two_tabs_show_two_jobs(live_server, tab, user):
    first = small_job(user, "first-run")
    second = small_job(user, "second-run")
    sign_in(tab, live_server.url, "alice", "alice-password-1", f"/jobs/{first.id}/dashboard")
    other = tab.context.new_page()  # the same browser, the same session
    other.goto(f"{live_server.url}/jobs/{second.id}/dashboard")

    expect(heading(other, "second-run")).to_be_visible()
    expect(heading(tab, "first-run")).to_be_visible()
    tab.reload()
    expect(heading(tab, "first-run")).to_be_visible()
    expect(tab.get_by_text("second-run")).to_have_count(0)
    expect(other.get_by_text("first-run")).to_have_count(0)


def test_a_teammates_open_page_says_who_deleted_the_job(live_server, new_tab, user, teammate):
    job = small_job(user, "doomed-run")
    bob = new_tab()
    sign_in(bob, live_server.url, "bob", "bob-password-1", f"/jobs/{job.id}/dashboard")
    expect(heading(bob, "doomed-run")).to_be_visible()

    owner = Client()
    owner.force_login(user)
    assert owner.delete(f"/api/jobs/{job.id}/").status_code == 204

    # Bob touches nothing: the open page watches its job.
    expect(bob.get_by_role("heading", name="This job was deleted")).to_be_visible()
    expect(bob.get_by_test_id("job-deleted")).to_contain_text("doomed-run was deleted by alice on")
    screenshot(bob, "job-address-deleted")


def test_a_job_whose_every_part_failed_says_so_on_its_own_pages(live_server, tab, user):
    job = make_job("broken-run", owner=user, nodes=(("algo-1", 1, 8),))
    add_part(job, "algo-1", rank=0, state=PartState.FAILED, error="Not a trace: no traceEvents")
    add_part(job, "algo-1", rank=1, state=PartState.FAILED, error="The gzip stream is cut short")
    sign_in(tab, live_server.url, "alice", "alice-password-1", f"/jobs/{job.id}/dashboard")

    for page in ("dashboard", "timeline", "info"):
        tab.goto(f"{live_server.url}/jobs/{job.id}/{page}")
        panel = tab.get_by_test_id("failed-job")
        expect(panel.get_by_text("Failed", exact=True)).to_be_visible()
        expect(panel).to_contain_text("All 2 of its parts failed to process")
        expect(panel).to_contain_text(
            "algo-1_rank0.pt.trace.json.gz (algo-1 rank 0): Not a trace: no traceEvents"
        )
        expect(panel).to_contain_text(
            "algo-1_rank1.pt.trace.json.gz (algo-1 rank 1): The gzip stream is cut short"
        )
    expect(tab.get_by_text("No GPU in this profile")).to_have_count(0)
    screenshot(tab, "job-address-failed")


def test_the_call_tree_opens_on_the_thread_that_ran_the_steps(live_server, tab, user):
    job = parse_job(
        user,
        "steps-run",
        [("algo-1", 0, "gpu_training_rank0.pt.trace.json.gz")],
        status="completed",
    )
    sign_in(tab, live_server.url, "alice", "alice-password-1", f"/jobs/{job.id}/calltree")
    thread = tab.get_by_label("Thread")
    expect(thread.locator("option:checked")).to_contain_text("pt_main_thread")
    expect(thread.locator("option:checked")).to_contain_text("steps)")
    table = tab.get_by_role("table", name="Call tree")
    expect(table.locator("tbody tr").first).to_contain_text("ProfilerStep*")
    screenshot(tab, "job-address-calltree")
