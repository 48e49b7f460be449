import pytest
from playwright.sync_api import expect

from profiler_app.accounts.models import ApiToken
from profiler_app.core.models import TrainingJob
from profiler_app.insights.models import JobInsights
from tests.conftest import wait_for
from tests.e2e.conftest import screenshot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_it_creates_a_demo_job_on_an_empty_server(live_server, tab, user, celery_worker_process):
    sign_in(tab, live_server.url, "alice", "alice-password-1")
    expect(tab.get_by_text("No training jobs yet")).to_be_visible()
    screenshot(tab, "profiles-demo-offer")

    tab.get_by_role("button", name="Create a demo job").click()
    expect(tab.get_by_role("status")).to_contain_text("is training on this server's CPU")

    # The example script trains for real and its collector creates the job; the list, which
    # looks again every few seconds after a demo starts, then shows it without a reload.
    demo_row = tab.locator(".jobs-table tbody tr", has_text="demo-cnn-")
    expect(demo_row).to_have_count(1, timeout=240_000)
    job = TrainingJob.objects.get(name__startswith="demo-cnn-")
    expect(demo_row).to_contain_text(job.name)
    screenshot(tab, "profiles-demo-arrived")

    # The demo's collector may upload several chunks per rank: its insights must compute.
    def finished():
        job.refresh_from_db()
        parts = list(job.parts.all())
        settled = job.status == "completed" and parts and all(p.state == "done" for p in parts)
        row = JobInsights.objects.filter(job=job).first()
        return row if settled and row and row.status in ("done", "failed") else None

    insights = wait_for(finished, timeout=240, interval=1)
    assert insights.status == "done", insights.error
    # The token the demo uploaded with is revoked once the script has exited.
    wait_for(lambda: not ApiToken.objects.filter(user=user).exists(), timeout=60)
    demo_row.get_by_role("checkbox").click()
    expect(demo_row.get_by_role("checkbox")).to_be_checked()
    tab.get_by_role("button", name="Load", exact=True).click()
    expect(tab.get_by_role("banner")).to_contain_text(f"Loaded: {job.name}")
    tab.goto(live_server.url + "/insights")
    expect(tab.get_by_role("region", name="CPUBottleneck", exact=True)).to_be_visible()
    expect(tab.get_by_text("could not be computed")).to_have_count(0)
    expect(tab.get_by_role("region", name="OverallSystemUsage", exact=True)).to_contain_text(
        "No issue"
    )
    # This node has no GPU: the collector recorded no GPU samples, and the page says so.
    expect(tab.get_by_role("region", name="GPUMemoryIncrease", exact=True)).to_contain_text(
        "the collector recorded none for this job"
    )
    screenshot(tab, "demo-insights")
