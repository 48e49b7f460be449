import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, sign_in

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

    expect(tab).to_have_url(live_server.url + "/login")
    tab.goto(live_server.url + "/profiles")
    expect(tab).to_have_url(live_server.url + "/login?next=%2Fprofiles")
