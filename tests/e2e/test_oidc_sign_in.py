"""Signing in through the team's identity provider in the browser: the login page's button,
the provider's own login form (a real OpenID Connect provider on loopback), and back signed in,
staff when the provider puts the person in a staff group."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import screenshot, sign_in
from tests.oidc_provider import running_provider, use_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(live_server, settings):
    with running_provider(live_server.url) as issuer:
        use_provider(settings, issuer)
        yield issuer


def sign_in_with_provider(page: Page, base_url: str, login: str, path: str = "/") -> None:
    page.goto(base_url + path)
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.get_by_placeholder("Enter any login").fill(login)
    page.get_by_placeholder("and password").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    expect(page.get_by_test_id("current-user")).to_have_text(login)


def test_it_signs_in_through_the_provider_with_staff_from_its_groups(
    provider, live_server, new_tab
):
    admin = new_tab()
    admin.goto(live_server.url + "/login")
    expect(admin.get_by_text("or with a local account")).to_be_visible()
    screenshot(admin, "oidc-login-page")
    sign_in_with_provider(admin, live_server.url, "alice", "/settings")
    assert admin.url == live_server.url + "/settings"
    expect(admin.locator(".badge-admin")).to_have_text("admin")

    member = new_tab()
    sign_in_with_provider(member, live_server.url, "bob")
    expect(member.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
    expect(member.locator(".badge-admin")).to_have_count(0)


def test_a_local_account_still_signs_in_beside_the_provider(provider, live_server, tab, user):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    expect(tab.locator(".badge-admin")).to_have_count(0)


def test_the_login_page_offers_no_provider_when_none_is_configured(live_server, tab, user):
    tab.goto(live_server.url + "/login")
    expect(tab.get_by_label("User name")).to_be_visible()
    expect(tab.get_by_role("link", name="Sign in with")).to_have_count(0)
    expect(tab.get_by_text("or with a local account")).to_have_count(0)


def test_it_says_so_when_the_provider_refuses(provider, live_server, tab, settings):
    settings.OIDC_ALLOWED_GROUPS = ["profiler-admins"]
    tab.goto(live_server.url + "/login")
    tab.get_by_role("link", name="Sign in with Test IdP").click()
    tab.get_by_placeholder("Enter any login").fill("bob")
    tab.get_by_placeholder("and password").fill("any password")
    tab.get_by_role("button", name="Sign-in").click()
    expect(tab.get_by_role("alert")).to_have_text(
        "Signing in with Test IdP did not work. Try again, or ask whoever runs this server "
        "whether your account may use it."
    )
    screenshot(tab, "oidc-refused")
