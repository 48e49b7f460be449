"""A JAX job profiled for real on CPU, its .xplane.pb parsed by the ingest, in headless
Chromium: the Dashboard's steps and the Timeline's XLA ops."""

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import LoadedProfile
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.test_timeline import wait_for_paint
from tests.jax_training import profile_jax_training
from tests.timeline.jobs import parse_paths

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
pytest.importorskip("jax")  # a dev dependency (make install-dev)

STEPS = 6


@pytest.fixture
def jax_job(user, tmp_path):
    profile = profile_jax_training(tmp_path, STEPS)
    job = parse_paths(user, "jax-cpu", [("vm", 0, profile)], status="completed")
    LoadedProfile.objects.create(user=user, job=job)
    return job


def test_a_jax_profile_shows_its_steps_and_xla_ops(live_server, tab, jax_job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    steps = tab.locator("section", has=tab.get_by_role("heading", name="Step time distribution"))
    expect(steps).to_contain_text(f"{STEPS} steps")
    tab.wait_for_timeout(1000)  # the charts grow in
    screenshot(tab, "jax-dashboard")

    tab.goto(live_server.url + "/timeline")
    wait_for_paint(tab)
    tab.get_by_placeholder("Search events by name").fill("ProfilerStep#3")
    tab.get_by_role("option").first.click()
    pane = tab.get_by_role("region", name="Selection details")
    expect(pane.get_by_label("Selected")).to_contain_text("ProfilerStep#3")
    screenshot(tab, "jax-timeline-step-selected")
