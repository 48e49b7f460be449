"""The Insights page of a real ingested trace in headless Chromium: rules, analyses, a
parameter change that re-runs the rules (on a real worker) and the report download."""

import pytest
from playwright.sync_api import expect

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import LoadedProfile, PartState, TrainingJob
from profiler_app.reports.models import JobInsights
from tests.conftest import DATA_DIR
from tests.e2e.conftest import screenshot, sign_in
from tests.ingest.helpers import wait_parsed
from tests.reports.test_insights_api import RULE_NAMES, wait_insights

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

A100 = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"


@pytest.fixture
def a100_job(user, celery_worker_process):
    job = TrainingJob.objects.create(name="resnet-insights", owner=user, status="completed")
    with A100.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", A100.name), f)
    [parsed] = wait_parsed(part.id)  # the worker parses it, then runs the insights
    assert parsed.state == PartState.DONE, parsed.error
    wait_insights(job)
    LoadedProfile.objects.create(user=user, job=job)
    return job


def test_it_shows_rules_and_analyses_and_reruns_with_new_parameters(
    live_server, tab, user, a100_job
):
    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    for rule in RULE_NAMES:
        expect(tab.get_by_role("region", name=rule, exact=True)).to_be_visible()
    # No NVML samples in an imported trace: the GPU rule judges kernel busy time and says so;
    # a rule whose data the trace lacks says how to record it.
    low_gpu = tab.get_by_role("region", name="LowGPUUtilization", exact=True)
    expect(low_gpu).to_contain_text("No issue")
    expect(low_gpu).to_contain_text("kernel busy time (no NVML samples in this profile)")
    memory = tab.get_by_role("region", name="GPUMemoryIncrease", exact=True)
    expect(memory).to_contain_text("Not evaluated")
    expect(memory).to_contain_text("profile the job with the collector")
    expect(tab.get_by_role("table", name="Kernel launches")).to_be_visible()
    expect(tab.get_by_role("img", name="Rank 0 temporal breakdown")).to_be_visible()
    screenshot(tab, "insights-rules")

    before = JobInsights.objects.get(job=a100_job).generation
    tab.get_by_text("StepOutlier", exact=True).last.click()  # the rule's parameter form
    form = tab.get_by_role("form", name="StepOutlier parameters")
    form.locator('input[name="StepOutlier_stddev"]').fill("1")
    form.get_by_role("button", name="Save and re-run").click()
    expect(form).to_contain_text("Saved")
    wait_insights(a100_job, after_generation=before)
    assert JobInsights.objects.get(job=a100_job).report["overrides"] == {"StepOutlier_stddev": "1"}
    screenshot(tab, "insights-parameters")

    with tab.expect_download() as download_info:
        tab.get_by_role("link", name="Download report").click()
    download = download_info.value
    assert download.suggested_filename == f"profiler-report-{a100_job.id}.html"
    html = download.path().read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "resnet-insights" in html
    tab.goto(live_server.url + "/insights")
    expect(tab.get_by_role("table", name="Kernel types")).to_be_visible()
    expect(tab.get_by_role("img", name="Memory copy bandwidth per rank and kind")).to_be_visible()
    bandwidth = tab.get_by_role("table", name="Memory copy bandwidth while copies run (GB/s)")
    expect(bandwidth).to_contain_text("Memcpy DtoD")
    expect(tab.get_by_role("table", name="Queue length per stream")).to_be_visible()
    tab.get_by_role(
        "img", name="Memory copy bandwidth per rank and kind"
    ).scroll_into_view_if_needed()
    screenshot(tab, "insights-bandwidth")
    tab.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(tab.get_by_text("Input shapes were not recorded")).to_be_visible()
    screenshot(tab, "insights-analyses")


H100 = DATA_DIR / "h100_cnn_kineto.json.gz"  # recorded with record_shapes=True


def test_it_groups_operators_by_input_shape(live_server, tab, user, celery_worker_process):
    job = TrainingJob.objects.create(name="cnn-shapes", owner=user, status="completed")
    with H100.open("rb") as f:
        part, _ = store_part(job, PartSource("algo-1", 0, "kineto", H100.name), f)
    [parsed] = wait_parsed(part.id)
    assert parsed.state == PartState.DONE, parsed.error
    wait_insights(job)
    LoadedProfile.objects.create(user=user, job=job)

    sign_in(tab, live_server.url, "alice", "alice-password-1", path="/insights")
    by_name = tab.get_by_role("table", name="Operators by self CPU time (top 15 of 100)")
    expect(by_name).to_be_visible()
    expect(by_name.get_by_role("columnheader", name="Input shapes")).to_have_count(0)
    tab.get_by_label("Group by input shape").check()
    by_shape = tab.get_by_role("table", name="Operators by self CPU time (top 15 of 188)")
    expect(by_shape.get_by_role("columnheader", name="Input shapes")).to_be_visible()
    # The backward convolution of the deepest layer, with its own input shapes.
    expect(by_shape).to_contain_text("[[64, 64, 8, 8], [64, 64, 8, 8], [64, 64, 3, 3]")
    by_shape.scroll_into_view_if_needed()
    screenshot(tab, "insights-operators-by-shape")
