"""Cluster and comparison API on real traces parsed by the real ingest, against the raw JSON."""

from decimal import Decimal

import pytest

from profiler_app.analysis.cluster import collective_waits_by_window
from profiler_app.cluster.logic import save_collective_waits
from profiler_app.cluster.models import CollectiveWait
from profiler_app.core.models import PartState, TrainingJob
from profiler_app.ingest import logic as ingest
from profiler_app.insights.inputs import rank_traces
from profiler_app.profiles.models import CollectiveStat, RankOverlap, StepBreakdown
from tests.cluster import raw
from tests.ingest.helpers import upload_parsed
from tests.timeline.jobs import parse_job, parse_paths
from tests.traces.expected import DATA, expected, kernel_names_by_category

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"
NCCL = "nccl_rank0.json.gz"


@pytest.mark.django_db
def test_it_breaks_down_every_rank_and_step_as_the_raw_json_does(api, user):
    job = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    expected_steps = {0: raw.step_breakdown(RANK0), 1: raw.step_breakdown(RANK1)}

    body = api.get(f"/api/jobs/{job.id}/cluster/").json()
    assert body["steps"] == [551, 552] and body["steps_inferred"] is False
    assert [r["rank"] for r in body["ranks"]] == [0, 1]
    assert [r["node"] for r in body["ranks"]] == ["algo-1", "algo-2"]
    for row in body["ranks"]:
        steps = expected_steps[row["rank"]].values()
        for at, field in enumerate(["dur_ns", "gap_ns", "compute_ns", "tail_ns"]):
            assert row[field] == round(sum(s[at] for s in steps) / 2), field
        assert row["steps"] == 2

    one = api.get(f"/api/jobs/{job.id}/cluster/", {"step": 552}).json()
    assert one["step"] == 552
    for row in one["ranks"]:
        assert (row["dur_ns"], row["gap_ns"], row["compute_ns"], row["tail_ns"]) == (
            expected_steps[row["rank"]][552]
        )
        assert row["start_ns"] == str(expected(RANK0 if row["rank"] == 0 else RANK1).steps[1][1])
    # Both ranks reach the step's communication together only if the faster one waits.
    ready = {r: s[552][1] + s[552][2] for r, s in expected_steps.items()}
    assert {r["rank"]: r["sync_wait_ns"] for r in one["ranks"]} == {
        r: max(ready.values()) - v for r, v in ready.items()
    }
    # Two ranks are too few to call one slow.
    assert body["slow"] == []
    assert {c["collective"] for c in body["collectives"]} == {"send_recv"}
    assert body["collectives"][0]["algbw_gbps"] is None  # no message sizes in these traces
    assert {(r["rank"], r["collective"]) for r in body["collective_ranks"]} == {
        (0, "send_recv"),
        (1, "send_recv"),
    }
    assert [(d["rank"], d["device"]) for d in body["devices"]] == [(0, 0), (1, 1)]
    assert all(0 < r["overlap_pct"] <= 100 for r in body["ranks"])


@pytest.mark.django_db
def test_it_measures_each_ranks_wait_in_the_collectives(api, user):
    job = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    url = f"/api/jobs/{job.id}/cluster/"
    # Before the job-level pass (the insights task) has seen all ranks: not known yet.
    assert [r["wait_ns"] for r in api.get(url).json()["collective_ranks"]] == [None, None]

    save_collective_waits(
        job, collective_waits_by_window(rank_traces(job))
    )  # as the insights task does
    rows = api.get(url).json()["collective_ranks"]
    waits = raw.collective_waits([RANK0, RANK1])
    assert {r["rank"]: (r["count"], r["wait_ns"], r["max_wait_ns"]) for r in rows} == waits
    assert all(wait > 0 for _, wait, _ in waits.values())  # each rank waited at some call

    # Run again (new parts, new parameters): the job's rows are replaced, not added to.
    save_collective_waits(job, collective_waits_by_window(rank_traces(job)))
    assert CollectiveWait.objects.filter(job=job).count() == 2 * 2  # a row per window
    # One rank alone has nobody to wait for: not derivable.
    single = parse_job(user, "one-rank", [("algo-1", 0, RANK0)])
    save_collective_waits(single, collective_waits_by_window(rank_traces(single)))
    [row] = api.get(f"/api/jobs/{single.id}/cluster/").json()["collective_ranks"]
    assert row["wait_ns"] is None


@pytest.mark.django_db
def test_it_measures_the_waits_in_the_jobs_window(api, user):
    job = parse_job(user, "two-ranks", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    save_collective_waits(job, collective_waits_by_window(rank_traces(job)))
    url = f"/api/jobs/{job.id}/cluster/"

    def waits() -> dict[int, tuple[int, int, int]]:
        rows = api.get(url).json()["collective_ranks"]
        return {r["rank"]: (r["count"], r["wait_ns"], r["max_wait_ns"]) for r in rows}

    assert waits() == raw.collective_waits([RANK0, RANK1])
    assert api.patch(f"/api/jobs/{job.id}/", {"window": "complete_steps"}).status_code == 200
    # Each rank without its last step: five calls each, and rank 1 joins every one last.
    complete = raw.collective_waits([RANK0, RANK1], complete_steps=True)
    assert complete == {0: (5, 144_490_000, 62_783_000), 1: (5, 0, 0)}
    assert waits() == complete
    # The switch needs no recomputation: both windows are stored.
    assert api.patch(f"/api/jobs/{job.id}/", {"window": "whole_trace"}).status_code == 200
    assert waits() == raw.collective_waits([RANK0, RANK1])


@pytest.mark.django_db
def test_it_counts_collectives_and_bandwidth_from_the_trace_metadata(api, user):
    job = parse_job(user, "nccl", [("algo-1", 0, NCCL)])
    body = api.get(f"/api/jobs/{job.id}/cluster/").json()
    raw_rows = raw.collectives(NCCL)
    names = {"allreduce": "all_reduce", "broadcast": "broadcast"}
    rows = {c["collective"]: c for c in body["collectives"]}
    assert set(rows) == {names[k] for k in raw_rows}
    for name, (count, total_ns, nbytes) in raw_rows.items():
        row = rows[names[name]]
        assert (row["count"], row["total_ns"], row["bytes"], row["group_size"]) == (
            count,
            total_ns,
            nbytes,
            2,
        )
        assert row["algbw_gbps"] == pytest.approx(nbytes / total_ns, abs=1e-4)
    assert rows["all_reduce"]["busbw_gbps"] == pytest.approx(
        rows["all_reduce"]["algbw_gbps"] * 2 * (2 - 1) / 2, abs=1e-3
    )
    assert rows["broadcast"]["bus_factor"] == 1.0


@pytest.mark.django_db
def test_it_flags_the_slow_rank_of_a_synthetic_8_rank_job(api, user, tmp_path):
    slow = 5
    paths = []
    for rank in range(8):
        scale = Decimal("1.3") if rank == slow else 1 + Decimal(rank) / 2000
        target = tmp_path / f"rank-{rank}.json.gz"
        paths.append((f"algo-{rank // 2 + 1}", rank, raw.write_scaled(RANK0, target, scale, rank)))
    job = parse_paths(user, "eight-ranks", paths, status="completed")

    body = api.get(f"/api/jobs/{job.id}/cluster/").json()
    assert len(body["ranks"]) == 8
    flagged = {(f["scope"], f["key"], f["metric"]) for f in body["slow"]}
    assert ("rank", str(slow), "compute_ns") in flagged
    assert {key for scope, key, _ in flagged if scope == "rank"} == {str(slow)}
    finding = next(f for f in body["slow"] if f["key"] == str(slow) and f["metric"] == "compute_ns")
    assert finding["ratio"] == pytest.approx(1.3, abs=0.01)
    # The slow rank's node is the slow node.
    assert {key for scope, key, _ in flagged if scope == "node"} <= {"algo-3"}


@pytest.mark.django_db
def test_it_replaces_a_reparsed_parts_rows(user):
    job = parse_job(user, "again", [("algo-1", 0, NCCL)])
    part = job.parts.get()
    counts = [
        m.objects.filter(part=part).count() for m in (StepBreakdown, CollectiveStat, RankOverlap)
    ]
    part.state = PartState.PENDING
    part.save()
    assert ingest.claim(part.id, "second-task")
    ingest.parse_claimed_part(part.id, "second-task")
    assert (
        [m.objects.filter(part=part).count() for m in (StepBreakdown, CollectiveStat, RankOverlap)]
        == counts
        # The trace has complete steps: its sums have a row per window, its steps one each.
        == [3, 2 * 2, 1 * 2]
    )


@pytest.mark.django_db
def test_it_compares_two_jobs(api, user):
    a = parse_job(user, "baseline", [("algo-1", 0, RANK0)])
    b = parse_job(user, "change", [("algo-1", 0, NCCL)])
    body = api.get("/api/compare/", {"a": a.id, "b": b.id}).json()
    assert (body["a"]["name"], body["b"]["name"]) == ("baseline", "change")
    ea, eb = expected(RANK0), expected(NCCL)
    rows = {r["name"]: r for r in body["kernels"]["rows"]}
    # Kernels only, as "Kernel time" counts them: no copies or sets.
    kernels_a = kernel_names_by_category(RANK0)["kernel"]
    kernels_b = kernel_names_by_category(NCCL)["kernel"]
    only_b, only_a = kernels_b - kernels_a, kernels_a - kernels_b
    assert body["kernels"]["added"] == len(only_b) and body["kernels"]["removed"] == len(only_a)
    allreduce = next(n for n in only_b if n.startswith("ncclKernel_AllReduce"))
    assert rows[allreduce]["status"] == "added"
    assert (
        rows[allreduce]["total_ns_b"]
        == rows[allreduce]["delta_ns"]
        == eb.kernel_total_ns[allreduce]
    )
    deltas = [abs(r["norm_delta_ns"]) for r in body["kernels"]["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    assert body["kernels"]["total_delta_ns"] == sum(eb.kernel_total_ns[n] for n in kernels_b) - sum(
        ea.kernel_total_ns[n] for n in kernels_a
    )
    assert body["steps"]["a"]["count"] == 2 and body["steps"]["b"]["count"] == 3
    assert body["steps"]["b"]["mean_ns"] == sum(s[2] for s in eb.steps) // 3
    metrics = {m["metric"]: (m["a"], m["b"]) for m in body["metrics"]}
    assert metrics["ranks"] == (1, 1)
    assert [r["rank"] for r in body["ranks"]] == [0]


@pytest.mark.django_db
def test_it_refuses_bad_or_missing_jobs(api, user):
    job = TrainingJob.objects.create(name="empty", owner=user)
    assert api.get("/api/compare/", {"a": job.id}).status_code == 400
    assert api.get("/api/compare/", {"a": job.id, "b": 999999}).status_code == 404
    assert api.get("/api/jobs/999999/cluster/").status_code == 404
    assert api.get(f"/api/jobs/{job.id}/cluster/", {"step": "x"}).status_code == 400
    empty = api.get(f"/api/jobs/{job.id}/cluster/").json()
    assert empty["ranks"] == [] and empty["collectives"] == [] and empty["steps"] == []


@pytest.mark.django_db
def test_it_requires_authentication(client_for, user):
    job = TrainingJob.objects.create(name="private", owner=user)
    anonymous = client_for(None)
    assert anonymous.get(f"/api/jobs/{job.id}/cluster/").status_code == 401
    assert anonymous.get("/api/compare/", {"a": job.id, "b": job.id}).status_code == 401


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_writes_the_cluster_rows_in_the_worker(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="worker", owner=user, status="completed")
    upload_parsed(api, job, DATA / NCCL)
    body = api.get(f"/api/jobs/{job.id}/cluster/").json()
    assert body["steps"] == [4, 5, 6]
    assert {c["collective"] for c in body["collectives"]} == {"all_reduce", "broadcast"}
