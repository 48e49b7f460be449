"""Each viewer's own window of a job: the owner's is the job's default, a teammate chooses their
own without changing the job, and every page answers in the caller's window. Figures come from
the trace's raw JSON (``tests.cluster.raw``), never from the parser."""

import pytest

from profiler_app.core.models import JobWindowChoice, TrainingJob
from profiler_app.insights import logic as insights
from profiler_app.insights.models import JobInsights
from tests.cluster import raw
from tests.timeline.jobs import parse_job

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"
WHOLE, COMPLETE = "whole_trace", "complete_steps"

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(user):
    """Alice's two-rank job; she reads it in complete steps (her default for the team)."""
    return parse_job(
        user, "alices-run", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)], window=COMPLETE
    )


@pytest.fixture
def alice(user, client_for):
    return client_for(user)


@pytest.fixture
def bob(teammate, client_for):
    return client_for(teammate)


def kernel_ns(complete_steps: bool) -> int:
    return sum(raw.gpu_times(t, complete_steps)["kernel_ns"] for t in (RANK0, RANK1))


def step_times(complete_steps: bool) -> list[int]:
    return raw.step_times(RANK0, complete_steps) + raw.step_times(RANK1, complete_steps)


def pages(client, job: TrainingJob) -> dict[str, dict]:
    return {
        page: client.get(f"/api/jobs/{job.id}/{page}/").json()
        for page in ("dashboard", "kernels", "cluster", "calltree")
    }


def test_it_starts_every_viewer_in_the_owners_window(bob, job):
    body = bob.get(f"/api/jobs/{job.id}/").json()
    assert (body["window"], body["default_window"]) == (COMPLETE, COMPLETE)
    seen = pages(bob, job)
    assert {seen[p]["window"]["window"] for p in ("dashboard", "kernels", "cluster")} == {COMPLETE}
    assert seen["calltree"]["window"] == COMPLETE
    assert seen["dashboard"]["totals"]["kernel_ns"] == kernel_ns(complete_steps=True)
    assert sorted(seen["dashboard"]["steps"]["durations_ns"]) == sorted(step_times(True))


def test_it_gives_a_teammate_their_own_window_and_leaves_the_owners(alice, bob, teammate, job):
    switched = bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json")
    assert switched.status_code == 200, switched.content
    assert (switched.json()["window"], switched.json()["default_window"]) == (WHOLE, COMPLETE)
    job.refresh_from_db()
    assert job.window == COMPLETE  # the job is as it was
    assert JobWindowChoice.objects.get(user=teammate, job=job).window == WHOLE

    bobs, alices = pages(bob, job), pages(alice, job)
    assert bobs["dashboard"]["totals"]["kernel_ns"] == kernel_ns(complete_steps=False)
    assert bobs["kernels"]["totals"]["kernel_ns"] == kernel_ns(complete_steps=False)
    assert sorted(bobs["dashboard"]["steps"]["durations_ns"]) == sorted(step_times(False))
    assert bobs["cluster"]["window"]["label"] == "whole trace"
    assert bobs["calltree"]["window"] == WHOLE
    assert alices["dashboard"]["totals"]["kernel_ns"] == kernel_ns(complete_steps=True)
    assert alices["kernels"]["totals"]["kernel_ns"] == kernel_ns(complete_steps=True)
    assert sorted(alices["dashboard"]["steps"]["durations_ns"]) == sorted(step_times(True))
    assert alices["cluster"]["window"]["label"].startswith("complete steps: from the trace's")
    assert alices["calltree"]["window"] == COMPLETE
    # The complete steps leave host events out of the call tree.
    assert 0 < alices["calltree"]["total_ns"] < bobs["calltree"]["total_ns"]

    # The job list and the loaded profile say the same per viewer.
    [listed] = bob.get("/api/jobs/").json()["results"]
    assert (listed["window"], listed["default_window"]) == (WHOLE, COMPLETE)
    assert alice.get("/api/jobs/").json()["results"][0]["window"] == COMPLETE
    assert bob.put("/api/loaded-profile/", {"job": job.id}, format="json").status_code == 200
    assert bob.get("/api/loaded-profile/").json()["job_detail"]["window"] == WHOLE

    # Choosing the owner's window again follows the owner's from then on.
    back = bob.patch(f"/api/jobs/{job.id}/", {"window": COMPLETE}, format="json").json()
    assert back["window"] == COMPLETE and not JobWindowChoice.objects.filter(job=job).exists()


def test_the_owner_changes_the_default_a_teammate_without_a_choice_follows(alice, bob, job):
    bob.patch(f"/api/jobs/{job.id}/", {"window": COMPLETE}, format="json")
    changed = alice.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json").json()
    assert (changed["window"], changed["default_window"]) == (WHOLE, WHOLE)
    body = bob.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert body["window"]["window"] == WHOLE
    assert body["totals"]["kernel_ns"] == kernel_ns(complete_steps=False)


def test_it_compares_both_jobs_in_the_viewers_window(alice, bob, user, job):
    other = parse_job(user, "one-rank", [("algo-1", 0, RANK1)])  # the whole trace by default
    query = {"a": job.id, "b": other.id}

    def kernel_ns_of(body: dict) -> tuple[int, int]:
        [row] = [m for m in body["metrics"] if m["metric"] == "kernel_ns"]
        return row["a"], row["b"]

    # Alice views A in complete steps: both sides so.
    body = alice.get("/api/compare/", query).json()
    assert body["a"]["window"]["window"] == body["b"]["window"]["window"] == COMPLETE
    assert kernel_ns_of(body) == (
        kernel_ns(complete_steps=True),
        raw.gpu_times(RANK1, True)["kernel_ns"],
    )
    # Bob views A in the whole trace: both sides so, whatever the owners chose.
    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json")
    body = bob.get("/api/compare/", query).json()
    assert body["a"]["window"]["window"] == body["b"]["window"]["window"] == WHOLE
    assert kernel_ns_of(body) == (
        kernel_ns(complete_steps=False),
        raw.gpu_times(RANK1)["kernel_ns"],
    )
    # A window asked for explicitly still wins.
    body = bob.get("/api/compare/", {**query, "window": COMPLETE}).json()
    assert body["b"]["window"]["window"] == COMPLETE


def test_it_computes_a_teammates_insights_in_their_window(alice, bob, job):
    insights.compute(job.id, insights.request_run(job.id))
    owners = alice.get(f"/api/jobs/{job.id}/analyses/").json()
    assert owners["status"] == "done" and owners["window"]["window"] == COMPLETE
    assert owners["totals"]["kernel_ns"] == kernel_ns(complete_steps=True)
    assert bob.get(f"/api/jobs/{job.id}/insights/").json()["window"]["window"] == COMPLETE

    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json")
    body = bob.get(f"/api/jobs/{job.id}/insights/").json()  # queues his window's first run
    assert (body["status"], body["report"], body["window"]) == ("queued", None, None)
    assert bob.get(f"/api/jobs/{job.id}/analyses/").json()["status"] == "queued"
    insights.compute(job.id, window=WHOLE)

    body = bob.get(f"/api/jobs/{job.id}/insights/").json()
    assert body["status"] == "done" and body["window"]["window"] == WHOLE
    analyses = bob.get(f"/api/jobs/{job.id}/analyses/").json()
    assert analyses["window"]["window"] == WHOLE
    assert analyses["totals"]["kernel_ns"] == kernel_ns(complete_steps=False)
    assert kernel_ns(complete_steps=False) != kernel_ns(complete_steps=True)
    page = bob.get(f"/api/jobs/{job.id}/insights/report.html")
    assert page.status_code == 200 and b"whole trace" in page.content
    # The owner's are unchanged.
    assert alice.get(f"/api/jobs/{job.id}/analyses/").json() == owners
    page = alice.get(f"/api/jobs/{job.id}/insights/report.html")
    assert page.status_code == 200 and b"complete steps" in page.content


def test_it_recomputes_every_window_when_the_overrides_change(alice, bob, job):
    insights.compute(job.id, insights.request_run(job.id))
    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json")
    bob.get(f"/api/jobs/{job.id}/insights/")
    insights.compute(job.id, window=WHOLE)
    rows = JobInsights.objects.filter(job=job)
    before = dict(rows.values_list("window", "generation"))

    put = alice.put(
        f"/api/jobs/{job.id}/insights/parameters/", {"StepOutlier_stddev": 1}, format="json"
    )
    assert put.status_code == 200
    assert dict(rows.values_list("window", "status")) == {WHOLE: "queued", COMPLETE: "queued"}
    for window in (WHOLE, COMPLETE):
        insights.compute(job.id, window=window)
    after = dict(rows.values_list("window", "generation"))
    assert {w: after[w] - before[w] for w in after} == {WHOLE: 1, COMPLETE: 1}
    assert set(rows.values_list("status", flat=True)) == {"done"}


def test_it_still_lets_only_the_owner_change_the_rest_of_the_job(bob, client_for, job):
    url = f"/api/jobs/{job.id}/"
    for body in (
        {"name": "bobs-now"},
        {"window": WHOLE, "name": "bobs-now"},
        {"notes": "x"},
        {"tags": ["mine"]},
        {},
    ):
        refused = bob.patch(url, body, format="json")
        assert refused.status_code == 403, body
        assert refused.json()["code"] == "not_owner"
    assert bob.delete(url).status_code == 403
    refused = bob.put(f"{url}insights/parameters/", {"StepOutlier_stddev": 1}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "not_owner"
    job.refresh_from_db()
    assert (job.name, job.notes, job.tags, job.window) == ("alices-run", "", [], COMPLETE)
    assert client_for(None).patch(url, {"window": WHOLE}, format="json").status_code in (401, 403)
    assert bob.patch(url, {"window": "last_step"}, format="json").status_code == 400


def test_a_choice_goes_with_its_job_and_its_user(bob, teammate, job):
    bob.patch(f"/api/jobs/{job.id}/", {"window": WHOLE}, format="json")
    teammate.delete()
    assert not JobWindowChoice.objects.exists()
    other = TrainingJob.objects.create(name="other", owner=job.owner)
    JobWindowChoice.objects.create(user=job.owner, job=other, window=COMPLETE)
    other.delete()
    assert not JobWindowChoice.objects.exists()
