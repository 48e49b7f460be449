"""A JAX job profiled for real on CPU, its .xplane.pb parsed by the ingest, in headless
Chromium: the Dashboard's steps, the Timeline's steps, and the Insights' operator table, which
says a JAX job has no PyTorch operators."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.jobs import worker_processed_job
from tests.e2e.test_timeline import select_by_search, wait_for_paint
from tests.jax_training import profile_jax_training, xla_op_names

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
pytest.importorskip("jax")  # a dev dependency (make install-dev)

STEPS = 6


@pytest.fixture
def jax_job(user, tmp_path, celery_worker_process):
    profile = profile_jax_training(tmp_path, STEPS)
    job = worker_processed_job(user, "jax-cpu", profile, node="vm")
    return job, xla_op_names(profile)


def test_a_jax_profile_shows_its_steps_and_xla_ops(live_server, tab, jax_job):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    steps = tab.locator("section", has=tab.get_by_role("heading", name="Step time distribution"))
    expect(steps).to_contain_text(f"{STEPS} steps")
    tab.wait_for_timeout(1000)  # the charts grow in
    screenshot(tab, "jax-dashboard")

    tab.goto(live_server.url + "/timeline")
    wait_for_paint(tab)
    select_by_search(tab, "ProfilerStep#3")
    screenshot(tab, "jax-timeline-step-selected")

    tab.goto(live_server.url + "/insights")
    note = tab.get_by_text("A JAX profile has no PyTorch operators", exact=False)
    expect(note).to_be_visible()
    expect(tab.get_by_text("record_shapes=True", exact=False)).to_have_count(0)
    operators = tab.locator("section", has=tab.get_by_role("heading", name="Operators"))
    _, xla_ops = jax_job
    op = sorted(xla_ops)[0]
    operators.get_by_placeholder("Filter by name").fill(op)
    expect(operators.get_by_role("cell", name=op, exact=True)).to_be_visible()
    note.scroll_into_view_if_needed()
    screenshot(tab, "jax-insights-operators")
