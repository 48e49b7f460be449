import pytest
from playwright.sync_api import expect

from profiler_app.core.models import AppSettings
from tests.e2e.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_lets_an_admin_change_auto_shutdown(live_server, tab, staff):
    sign_in(tab, live_server.url, "carol", "carol-password-1", path="/settings")
    summary = tab.get_by_test_id("shutdown-summary")
    expect(summary).to_contain_text("Shuts down after 2 h idle; last activity")
    hours = tab.get_by_label("Auto-shutdown threshold (hours)")
    expect(hours).to_have_value("2")
    screenshot(tab, "settings-admin")

    hours.fill("0")
    tab.get_by_role("button", name="Save", exact=True).click()
    expect(tab.get_by_role("alert")).to_contain_text("The threshold must be more than 0 hours")
    hours.fill("100000")
    tab.get_by_role("button", name="Save", exact=True).click()
    expect(tab.get_by_role("alert")).to_contain_text("at most 720 hours")
    screenshot(tab, "settings-admin-invalid")
    assert AppSettings.load().auto_shutdown_hours == 2

    hours.fill("6.5")
    tab.get_by_role("button", name="Save", exact=True).click()
    expect(tab.get_by_text("Saved.")).to_be_visible()
    expect(summary).to_contain_text("Shuts down after 6.5 h idle")
    assert AppSettings.load().auto_shutdown_hours == 6.5

    tab.get_by_label("Enable application auto-shutdown").uncheck()
    tab.get_by_role("button", name="Save", exact=True).click()
    expect(summary).to_contain_text("Auto-shutdown is off")
    assert AppSettings.load().auto_shutdown_enabled is False
    tab.reload()
    expect(tab.get_by_label("Enable application auto-shutdown")).not_to_be_checked()


def test_it_shows_settings_read_only_to_others(live_server, tab, user):
    settings = AppSettings.load()
    settings.auto_shutdown_hours = 3
    settings.save()
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/settings")

    expect(tab.get_by_test_id("shutdown-summary")).to_contain_text("Shuts down after 3 h idle")
    expect(tab.get_by_text("Only administrators can change these settings.")).to_be_visible()
    expect(tab.get_by_label("Enable application auto-shutdown")).to_be_disabled()
    expect(tab.get_by_label("Auto-shutdown threshold (hours)")).to_be_disabled()
    expect(tab.get_by_role("button", name="Save", exact=True)).to_have_count(0)
    screenshot(tab, "settings-read-only")
