"""The history API: who may change what, input errors as 4xx, the verdict's shape."""

import pytest

from profiler_app.core.logic import PartSource, store_part
from profiler_app.history import logic
from profiler_app.history.models import Series
from profiler_app.insights import logic as reports
from tests.history.traces import NCCL
from tests.timeline.jobs import parse_paths
from tests.traces.expected import DATA


@pytest.fixture
def two_runs(user, slower_trace):
    base = parse_paths(user, "nccl-1", [("algo-1", 0, DATA / NCCL)])
    run = parse_paths(user, "nccl-2", [("algo-1", 0, slower_trace)])
    for job in (base, run):
        logic.assign(job, "nccl-model")
        logic.judge_job(job.pk)
    return base, run


@pytest.mark.django_db
def test_it_serves_the_series_its_runs_and_a_verdict(api, two_runs):
    base, run = two_runs
    [series] = api.get("/api/series/").json()["results"]
    assert (series["name"], series["run_count"], series["can_change"]) == ("nccl-model", 2, True)
    runs = api.get(f"/api/series/{series['id']}/runs/").json()
    assert [r["job_name"] for r in runs] == ["nccl-1", "nccl-2"]
    assert [r["verdict_status"] for r in runs] == ["unjudged", "regression"]
    assert runs[1]["verdict_baseline"] == base.pk
    assert runs[1]["figures"]["step_p50_ns"] == 249_952_679
    verdict = api.get(f"/api/jobs/{run.pk}/verdict/").json()
    assert (verdict["status"], verdict["series"], verdict["baseline_name"]) == (
        "regression",
        "nccl-model",
        "nccl-1",
    )
    assert verdict["test"]["p_value"] == 0.05
    assert verdict["series_id"] == series["id"]


@pytest.mark.django_db
def test_it_checks_against_another_baseline_and_threshold(api, two_runs):
    base, run = two_runs
    found = api.post(f"/api/jobs/{base.pk}/verdict/check/", {"baseline": run.pk}).json()
    assert found["status"] == "no_regression" and found["change_pct"] < 0
    lenient = api.post(f"/api/jobs/{run.pk}/verdict/check/", {"threshold_pct": 50}).json()
    assert (lenient["status"], lenient["threshold_pct"]) == ("no_regression", 50.0)
    bad = api.post(f"/api/jobs/{run.pk}/verdict/check/", {"threshold_pct": -1})
    assert bad.status_code == 400 and "threshold_pct" in bad.json()
    gone = api.post(f"/api/jobs/{run.pk}/verdict/check/", {"baseline": 999_999})
    assert gone.status_code == 400


@pytest.mark.django_db
def test_it_refuses_to_judge_a_run_still_being_parsed(api, user, parsed_by_hand):
    job = parse_paths(user, "done-1", [("algo-1", 0, DATA / NCCL)])
    other = DATA / "multirank_sampled" / "rank-1.json.gz"
    with other.open("rb") as stream:
        store_part(job, PartSource("algo-2", 1, "kineto", other.name), stream)
    found = api.post(f"/api/jobs/{job.pk}/verdict/check/", {})
    assert found.status_code == 409
    assert "still being parsed" in found.json()["detail"]
    assert api.get(f"/api/jobs/{job.pk}/verdict/").json()["status"] == "pending"


@pytest.mark.django_db
def test_only_the_owner_changes_a_series_or_moves_a_job(client_for, teammate, staff, two_runs):
    base, run = two_runs
    series = Series.objects.get(name="nccl-model")
    other = client_for(teammate)
    assert other.get(f"/api/series/{series.pk}/").json()["can_change"] is False
    refused = other.patch(f"/api/series/{series.pk}/", {"step_threshold_pct": 1}, format="json")
    assert refused.status_code == 403
    moved = other.put(f"/api/jobs/{run.pk}/series/", {"series": "mine"}, format="json")
    assert moved.status_code == 403
    assert client_for(None).get("/api/series/").status_code in (401, 403)
    ok = client_for(staff).patch(
        f"/api/series/{series.pk}/", {"baseline": run.pk, "alpha": 0.01}, format="json"
    )
    assert ok.status_code == 200 and ok.json()["baseline_name"] == "nccl-2"


@pytest.mark.django_db
def test_it_validates_series_settings(api, user, two_runs):
    base, _ = two_runs
    series = Series.objects.get(name="nccl-model")
    outsider = parse_paths(user, "other-1", [("algo-1", 0, DATA / NCCL)])
    wrong = api.patch(f"/api/series/{series.pk}/", {"baseline": outsider.pk}, format="json")
    assert wrong.status_code == 400 and "not a run of series" in str(wrong.json())
    for field, value in [("alpha", 0.9), ("step_threshold_pct", -5), ("webhook_url", "ftp://x")]:
        found = api.patch(f"/api/series/{series.pk}/", {field: value}, format="json")
        assert found.status_code == 400, field
    blank = api.put(f"/api/jobs/{base.pk}/series/", {"series": "  "}, format="json")
    assert blank.status_code == 400
    moved = api.put(f"/api/jobs/{outsider.pk}/series/", {"series": "nccl-model"}, format="json")
    assert moved.json() == {"series": "nccl-model", "series_id": series.pk, "chosen": True}


@pytest.mark.django_db
def test_the_report_shows_the_verdict(api, two_runs):
    _, run = two_runs
    reports.request_run(run.pk, delay_s=0)
    reports.compute(run.pk)
    html = api.get(f"/api/jobs/{run.pk}/insights/report.html").content.decode()
    assert "<h1>Regression verdict of series nccl-model</h1>" in html
    assert "<strong>Regression</strong> against nccl-1." in html
    assert "U = 9, p = 0.05 (exact, 3 steps against 3)" in html
    assert "<td>ncclKernel_AllReduce_RING_LL_Sum_float" in html
    assert "<td>15.59</td><td>43.64</td>" in html
