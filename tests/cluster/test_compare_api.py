"""The comparison API on real traces parsed by the real ingest: figures per step and per rank
beside the raw totals, both jobs in one window, against sums taken from the raw JSON."""

from decimal import Decimal
from statistics import median

import pytest

from profiler_app.core.models import TrainingJob
from tests.cluster import raw
from tests.timeline.jobs import parse_job, parse_paths
from tests.traces.expected import DATA

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"
GPU = ["kernel_ns", "compute_ns", "comm_ns", "memory_ns"]


def figures(body: dict) -> dict[str, tuple]:
    return {
        m["metric"]: (m["a"], m["b"], m["norm_a"], m["norm_b"], m["better"])
        for m in body["metrics"]
    }


@pytest.mark.django_db
def test_it_compares_per_step_and_per_rank_beside_the_raw_totals(api, user):
    two = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    one = parse_job(user, "one-rank", [("algo-1", 0, RANK0)])
    body = api.get("/api/compare/", {"a": two.id, "b": one.id}).json()

    assert body["a"]["window"]["window"] == body["b"]["window"]["window"] == "whole_trace"
    assert (body["a"]["ranks"], body["a"]["steps"], body["a"]["rank_steps"]) == (2, 4, 4)
    assert (body["b"]["ranks"], body["b"]["steps"], body["b"]["rank_steps"]) == (1, 2, 2)
    raw0, raw1 = raw.gpu_times(RANK0), raw.gpu_times(RANK1)
    found = figures(body)
    for key in GPU:
        total_a, total_b = raw0[key] + raw1[key], raw0[key]
        assert found[key] == (total_a, total_b, round(total_a / 4, 1), total_b / 2, "lower"), key
    # The raw total halves (−651 ms of kernel time), but per step per rank B does less:
    # 303.26 ms against 314.39 ms.
    assert found["kernel_ns"][2:4] == (314_386_250.0, 303_259_500.0)
    steps_a = raw.step_times(RANK0) + raw.step_times(RANK1)
    assert found["step_p50_ns"] == (
        median(steps_a),
        median(raw.step_times(RANK0)),
        median(steps_a),
        median(raw.step_times(RANK0)),
        "lower",
    )
    assert found["ranks"] == (2, 1, None, None, None)
    assert found["kernel_runs"][4] is None  # a count: no verdict
    # The kernels panel: each name's time per step per rank, largest change first.
    rows = body["kernels"]["rows"]
    for row in rows:
        assert row["norm_ns_a"] == round(row["total_ns_a"] / 4)
        assert row["norm_ns_b"] == round(row["total_ns_b"] / 2)
    changes = [abs(r["norm_delta_ns"]) for r in rows]
    assert changes == sorted(changes, reverse=True)
    assert body["kernels"]["total_delta_ns"] == -raw1["kernel_ns"]


@pytest.mark.django_db
def test_it_shows_the_same_work_per_gpu_as_no_change(api, user, tmp_path):
    copy = raw.write_scaled(RANK0, tmp_path / "rank-1.json.gz", Decimal(1), 1)
    two = parse_paths(user, "two-copies", [("algo-1", 0, DATA / RANK0), ("algo-2", 1, copy)])
    one = parse_job(user, "one-rank", [("algo-1", 0, RANK0)])
    body = api.get("/api/compare/", {"a": one.id, "b": two.id}).json()
    found = figures(body)
    for key in GPU:
        total = raw.gpu_times(RANK0)[key]
        assert found[key][:4] == (total, 2 * total, total / 2, total / 2), key
    assert found["gpu_idle_pct"][2] == found["gpu_idle_pct"][3]
    assert body["kernels"]["norm_total_delta_ns"] == 0
    assert all(r["norm_delta_ns"] == 0 for r in body["kernels"]["rows"])


@pytest.mark.django_db
def test_it_takes_both_jobs_in_one_window(api, user):
    a = parse_job(user, "complete", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    b = parse_job(user, "whole", [("algo-1", 0, RANK1)])
    TrainingJob.objects.filter(pk=a.pk).update(window="complete_steps")

    # Left out: A's window, for both.
    body = api.get("/api/compare/", {"a": a.id, "b": b.id}).json()
    assert body["a"]["window"]["window"] == body["b"]["window"]["window"] == "complete_steps"
    assert body["b"]["window"]["label"].startswith("complete steps: from the trace's start")
    assert (body["a"]["rank_steps"], body["b"]["rank_steps"]) == (2, 1)
    cut0, cut1 = raw.gpu_times(RANK0, True), raw.gpu_times(RANK1, True)
    found = figures(body)
    assert found["kernel_ns"][:4] == (
        cut0["kernel_ns"] + cut1["kernel_ns"],
        cut1["kernel_ns"],
        (cut0["kernel_ns"] + cut1["kernel_ns"]) / 2,
        cut1["kernel_ns"],
    )
    assert body["steps"]["b"]["count"] == 1
    assert body["steps"]["b"]["p50_ns"] == raw.step_times(RANK1, True)[0]

    # Chosen: the whole trace for both, though A's own window is complete steps.
    body = api.get("/api/compare/", {"a": a.id, "b": b.id, "window": "whole_trace"}).json()
    assert body["a"]["window"]["label"] == body["b"]["window"]["label"] == "whole trace"
    assert figures(body)["kernel_ns"][1] == raw.gpu_times(RANK1)["kernel_ns"]
    assert api.get("/api/compare/", {"a": a.id, "b": b.id, "window": "x"}).status_code == 400


@pytest.mark.django_db
def test_it_finds_any_job_for_the_pickers_by_name(api, user, teammate):
    oldest = TrainingJob.objects.create(name="baseline-resnet", owner=teammate)
    for n in range(60):
        TrainingJob.objects.create(name=f"sweep-{n:02}", owner=user)
    newest = api.get("/api/jobs/", {"ordering": "-created_at"}).json()
    assert newest["count"] == 61 and len(newest["results"]) == 50
    assert oldest.id not in {j["id"] for j in newest["results"]}

    found = api.get("/api/jobs/", {"search": "RESNET", "ordering": "-created_at"}).json()
    assert [j["id"] for j in found["results"]] == [oldest.id]
    page = api.get("/api/jobs/", {"search": "sweep", "page": 2}).json()
    assert page["count"] == 60 and len(page["results"]) == 10 and page["previous"]
    assert api.get("/api/compare/", {"a": oldest.id, "b": oldest.id}).status_code == 200
