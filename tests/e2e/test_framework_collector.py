"""A JAX job and a TensorFlow job profiled through the collector on CPU (their windows captured by
their framework's own profiler and uploaded in their chunks), in headless Chromium: the
Dashboard's steps and its headline, which says the job has no GPU instead of GPU figures of zero,
and the Timeline with a step selected."""

from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from profiler_app.core.models import JobStatus, LoadedProfile, PartState, TrainingJob
from tests.collector.helpers import run_job_script, settled_parts
from tests.collector.test_jax_collector import SCHEDULE, STEPS
from tests.conftest import wait_for
from tests.e2e.conftest import screenshot, sign_in
from tests.e2e.test_timeline import select_by_search, wait_for_paint
from tests.insights.test_insights_api import wait_insights

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Each framework's training script and what keeps its logs quiet (both installed by
# make install-dev).
FRAMEWORKS = {
    "jax": ("jax_job.py", {"JAX_PLATFORMS": "cpu"}),
    "tensorflow": ("tensorflow_job.py", {"TF_CPP_MIN_LOG_LEVEL": "2"}),
}


@pytest.fixture(params=sorted(FRAMEWORKS))
def collector_job(request, live_server, celery_worker_process, api_token, user, tmp_path):
    framework = request.param
    name = f"{framework}-collector"
    server = SimpleNamespace(url=live_server.url, token=api_token)
    script, quiet = FRAMEWORKS[framework]
    run_job_script(server, tmp_path / "spool", name, script, STEPS, **quiet, **SCHEDULE)
    job = wait_for(
        lambda: TrainingJob.objects.filter(name=name, status=JobStatus.COMPLETED).first(),
        timeout=120,
    )

    parts = settled_parts(job)
    assert [p.state for p in parts] == [PartState.DONE] * len(parts), [p.error for p in parts]
    wait_insights(job)
    LoadedProfile.objects.create(user=user, job=job)
    return job


def test_a_collector_job_of_jax_or_tensorflow_shows_its_steps_without_gpu_figures(
    live_server, tab, collector_job
):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/dashboard")
    steps = tab.locator("section", has=tab.get_by_role("heading", name="Step time distribution"))
    expect(steps).to_contain_text(f"{STEPS} steps")
    headline = tab.get_by_role("region", name="Headline")
    expect(headline.get_by_text("not available: no GPU in this job")).to_have_count(2)
    expect(headline.get_by_text("Host time (no GPU)", exact=False)).to_be_visible()
    expect(headline.get_by_text("GPU idle", exact=False)).to_have_count(0)
    tab.wait_for_timeout(1000)  # the charts grow in (for the screenshot only)
    screenshot(tab, f"{collector_job.name}-dashboard")

    tab.goto(live_server.url + "/timeline")
    wait_for_paint(tab)
    select_by_search(tab, "step_3")
    screenshot(tab, f"{collector_job.name}-timeline-step-selected")
