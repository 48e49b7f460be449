import re

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile, TrainingJob
from tests.e2e.conftest import screenshot, sign_in
from tests.timeline.jobs import parse_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECTIONS = ["Profiles", "Dashboard", "Timeline", "Insights", "Info", "Settings"]


def test_it_sends_visitors_to_login_and_back(live_server, tab, user):
    tab.goto(live_server.url + "/settings")
    expect(tab).to_have_url(live_server.url + "/login?next=%2Fsettings")
    expect(tab.get_by_role("button", name="Sign in")).to_be_visible()
    screenshot(tab, "login")

    tab.get_by_label("User name").fill("alice")
    tab.get_by_label("Password").fill("alice-password-1")
    tab.get_by_role("button", name="Sign in").click()

    expect(tab).to_have_url(live_server.url + "/settings")
    expect(tab.get_by_role("heading", name="Settings", exact=True)).to_be_visible()


def test_it_shows_the_app_shell_after_login(live_server, tab, user):
    sign_in(tab, live_server.url, "alice", "alice-password-1")

    expect(tab).to_have_url(live_server.url + "/profiles")
    nav = tab.get_by_role("navigation", name="Main")
    for name in SECTIONS:
        expect(nav.get_by_role("link", name=name, exact=True)).to_be_visible()
    expect(tab.get_by_text("No profile loaded", exact=True)).to_be_visible()
    expect(tab.get_by_text("No training jobs yet")).to_be_visible()
    screenshot(tab, "profiles-empty")

    nav.get_by_role("link", name="Dashboard").click()
    expect(tab.get_by_role("heading", name="No profile loaded")).to_be_visible()
    screenshot(tab, "dashboard-no-profile")


def test_it_refuses_a_wrong_password(live_server, tab, user):
    tab.goto(live_server.url + "/login")
    tab.get_by_label("User name").fill("alice")
    tab.get_by_label("Password").fill("not-her-password")
    tab.get_by_role("button", name="Sign in").click()

    expect(tab.get_by_role("alert")).to_have_text("Wrong user name or password.")
    screenshot(tab, "login-refused")


def test_it_logs_out(live_server, tab, user):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    tab.get_by_role("button", name="Log out").click()

    # To sign in again, and back to the page that was open.
    expect(tab).to_have_url(live_server.url + "/login?next=%2Fprofiles")
    expect(tab.get_by_role("button", name="Sign in")).to_be_visible()
    tab.goto(live_server.url + "/settings")
    expect(tab).to_have_url(live_server.url + "/login?next=%2Fsettings")


def test_it_names_the_job_a_link_shows_never_the_loaded_one(live_server, tab, user):
    loaded = TrainingJob.objects.create(name="loaded-run", owner=user, status="completed")
    LoadedProfile.objects.create(user=user, job=loaded)
    shared = parse_job(
        user, "shared-run", [("algo-1", 0, "amd_mi250_small.json.gz")], status="completed"
    )
    sign_in(tab, live_server.url, "alice", "alice-password-1", path=f"/timeline?job={shared.id}")

    expect(tab.get_by_role("heading", name=re.compile("shared-run"))).to_be_visible()
    header = tab.get_by_test_id("topbar-profile")
    expect(header).to_have_text("Viewing: shared-run not loaded")
    expect(tab.locator("header.topbar")).not_to_contain_text("loaded-run")
    notice = tab.get_by_test_id("not-loaded-notice")
    expect(notice).to_contain_text(
        "You are viewing shared-run, which is not the loaded profile (loaded-run is loaded)."
    )
    screenshot(tab, "header-viewing-not-loaded")

    notice.get_by_role("button", name="Unload loaded-run and load shared-run").click()
    expect(header).to_have_text("Loaded: shared-run")
    expect(notice).to_have_count(0)
    assert LoadedProfile.objects.get(user=user).job_id == shared.id
    # Other pages show the loaded profile, which is now the one the link showed.
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Info").click()
    expect(tab.get_by_role("heading", name=re.compile("shared-run"))).to_be_visible()
    expect(header).to_have_text("Loaded: shared-run")


def test_a_laptops_screen_shows_the_loaded_jobs_whole_name(live_server, tab, user):
    """At 1366 px the thirteen links used to leave the loaded job four letters ("Loa…")."""
    job = TrainingJob.objects.create(name="h200-resnet50-bf16", owner=user, status="stopped")
    LoadedProfile.objects.create(user=user, job=job)
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    header = tab.get_by_test_id("topbar-profile")
    expect(header).to_have_text("Loaded: h200-resnet50-bf16")
    assert tab.viewport_size == {"width": 1366, "height": 800}
    assert header.evaluate("el => el.scrollWidth <= el.clientWidth"), "the name is cut short"
    expect(header).to_have_attribute(
        "title", "Loaded: h200-resnet50-bf16, the profile the data views show"
    )
    screenshot(tab, "header-laptop-loaded")
