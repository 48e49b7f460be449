"""The report download's size bound (REPORT_MAX_MB): a report whose stored findings and
analyses pass it is refused with 413 in JSON, measured in the database before they are loaded;
under it, the page downloads."""

import pytest

from profiler_app.insights import queries
from profiler_app.insights.models import InsightsStatus
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def reported_job(user):
    job = parse_job(user, "reported", [("algo-1", 0, "h100_cnn_kineto.json.gz")])
    assert compute_here(job).status == InsightsStatus.DONE
    return job


def test_it_refuses_a_report_over_the_limit(api, reported_job, settings):
    url = f"/api/jobs/{reported_job.id}/insights/report.html"
    page = api.get(url)
    assert page.status_code == 200
    stored = queries.report_bytes(reported_job, reported_job.window)
    assert stored > 10_000  # the rules' findings and the analyses, as JSON
    settings.REPORT_MAX_BYTES = stored - 1

    response = api.get(url)

    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": f"This job's report (its findings and analyses) takes {stored:,} bytes, over "
        f"this server's limit of {stored - 1:,} bytes for a report download (REPORT_MAX_MB); "
        "its findings are on the Insights page.",
        "code": "answer_too_large",
    }
    settings.REPORT_MAX_BYTES = stored
    assert api.get(url).content == page.content
