"""Dashboard numbers for a real A100 trace parsed by a real worker, against the raw JSON."""

import gzip
import json
from collections import Counter
from decimal import Decimal

import pytest

from profiler_app.core.models import TrainingJob
from tests.conftest import DATA_DIR
from tests.ingest.helpers import upload_parsed
from tests.timeline.jobs import parse_job
from tests.traces.expected import ns

TRACE = "gpu_training_rank0.pt.trace.json.gz"


def raw_events(trace: str) -> list[dict]:
    with gzip.open(DATA_DIR / trace) as f:
        return json.load(f, parse_float=Decimal)["traceEvents"]


@pytest.fixture(scope="module")
def raw():
    """Per-panel expectations computed straight from the JSON, independently of the parser."""
    events = [e for e in raw_events(TRACE) if e.get("ph") == "X"]
    by_cat: dict[str, list[dict]] = {}
    for e in events:
        by_cat.setdefault(e.get("cat", ""), []).append(e)
    kernel_total: Counter[str] = Counter()
    kernel_count: Counter[str] = Counter()
    for e in by_cat["kernel"]:
        kernel_total[e["name"]] += ns(e["dur"])
        kernel_count[e["name"]] += 1
    memory: dict[str, list[int]] = {}
    for e in by_cat["gpu_memcpy"] + by_cat["gpu_memset"]:
        kind = "Memset" if e["cat"] == "gpu_memset" else e["name"][:11]
        row = memory.setdefault(kind, [0, 0, 0])
        row[0] += 1
        row[1] += ns(e["dur"])
        row[2] += e["args"]["bytes"]
    steps = sorted(
        (ns(e["ts"]), ns(e["dur"]))
        for e in by_cat["user_annotation"]
        if e["name"].startswith("ProfilerStep#")
    )
    return {
        "kernel_total": kernel_total,
        "kernel_count": kernel_count,
        "activity": {
            "kernel": (len(by_cat["kernel"]), sum(ns(e["dur"]) for e in by_cat["kernel"])),
            "memcpy": (len(by_cat["gpu_memcpy"]), sum(ns(e["dur"]) for e in by_cat["gpu_memcpy"])),
            "memset": (len(by_cat["gpu_memset"]), sum(ns(e["dur"]) for e in by_cat["gpu_memset"])),
        },
        "memory": {k: tuple(v) for k, v in memory.items()},
        "step_durations": [dur for _, dur in steps],
    }


@pytest.fixture
def parsed_job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="a100", owner=user, status="completed")
    upload_parsed(api, job, DATA_DIR / TRACE)
    return job


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_it_serves_every_panel_from_the_aggregates(api, parsed_job, raw):
    body = api.get(f"/api/jobs/{parsed_job.id}/dashboard/").json()
    assert body["partial"] is False

    kernel_time = body["kernel_time"]
    assert kernel_time["total_count"] == sum(raw["kernel_count"].values()) == 4350
    assert kernel_time["total_ns"] == sum(raw["kernel_total"].values())
    top_names = [row["name"] for row in kernel_time["top"]]
    assert top_names[:15] == [n for n, _ in raw["kernel_total"].most_common(15)]
    assert {r["name"]: r["total_ns"] for r in kernel_time["top"]} == {
        n: raw["kernel_total"][n] for n in top_names
    }
    by_count = body["kernel_count"]["top"]
    assert [r["count"] for r in by_count[:15]] == [
        c for _, c in raw["kernel_count"].most_common(15)
    ]

    activity = {r["kind"]: (r["count"], r["total_ns"]) for r in body["gpu_activity"]["rows"]}
    assert activity == raw["activity"]
    memory = {
        r["kind"]: (r["count"], r["total_ns"], r["bytes"]) for r in body["memory_ops"]["rows"]
    }
    assert memory == raw["memory"]
    assert sum(r["total_ns"] for r in body["precision"]["rows"]) == kernel_time["total_ns"]

    assert body["steps"]["durations_ns"] == raw["step_durations"]
    assert body["steps"]["empty_reason"] is None

    # An imported trace has no NVML samples: GPU busy time stands in, CPU panels say why empty.
    assert body["gpu_active"]["source"] == "kernel_busy"
    assert body["gpu_active"]["active_points"] > 0
    assert body["gpu_utilization"]["series"][0]["node"] == "algo-1"
    points = body["gpu_utilization"]["series"][0]["points"]
    assert 0 < len(points) <= 500
    assert all(0 <= value <= 100 for _, value in points)
    assert body["cpu_active"]["empty_reason"] == "no CPU utilisation samples in an imported trace"
    assert body["cpu_utilization"]["series"] == []

    name = body["annotation_names"][0]
    durations = api.get(f"/api/jobs/{parsed_job.id}/annotations/durations/", {"name": name}).json()[
        "durations_ns"
    ]
    assert durations and all(d >= 0 for d in durations)
    missing = api.get(f"/api/jobs/{parsed_job.id}/annotations/durations/")
    assert missing.status_code == 400
    assert missing.json()["name"] == ["Give the annotation name, e.g. ?name=Forward."]


@pytest.mark.django_db
def test_it_explains_empty_panels_of_a_job_without_data(api, user):
    job = TrainingJob.objects.create(name="empty", owner=user)
    body = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert body["partial"] is True
    assert body["kernel_time"]["empty_reason"] == "no GPU kernels in this profile"
    assert body["steps"]["empty_reason"] == "no steps annotated (ProfilerStep#n or step_n)"
    assert body["gpu_active"]["empty_reason"] == "no GPU in this profile"


@pytest.mark.django_db
def test_it_keeps_custom_histograms_per_user(client_for, user, teammate):
    job = TrainingJob.objects.create(name="hist", owner=user)
    mine, theirs = client_for(user), client_for(teammate)
    created = mine.post(
        "/api/histograms/", {"job": job.id, "annotation_name": "Forward"}, format="json"
    )
    assert created.status_code == 201
    again = mine.post(
        "/api/histograms/", {"job": job.id, "annotation_name": "Forward"}, format="json"
    )
    assert again.status_code == 400
    assert [h["annotation_name"] for h in mine.get(f"/api/histograms/?job={job.id}").json()] == [
        "Forward"
    ]
    assert theirs.get(f"/api/histograms/?job={job.id}").json() == []
    assert theirs.delete(f"/api/histograms/{created.json()['id']}/").status_code == 404
    assert mine.delete(f"/api/histograms/{created.json()['id']}/").status_code == 204


@pytest.mark.django_db
def test_it_requires_authentication_for_the_dashboard(client_for, user):
    job = TrainingJob.objects.create(name="private", owner=user)
    anonymous = client_for(None)
    assert anonymous.get(f"/api/jobs/{job.id}/dashboard/").status_code == 401
    assert anonymous.get("/api/histograms/").status_code == 401
    assert anonymous.get(f"/api/jobs/{job.id}/annotations/durations/?name=x").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_communication_kernels_are_no_compute_precision(api, user):
    """NCCL's send/receive kernels name their int8_t buffers; that is not an INT8 computation."""
    trace = "nccl_rank0.json.gz"
    job = parse_job(user, "two-rank-nccl", [("algo-1", 0, trace)])
    kernels = [e for e in raw_events(trace) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    compute_ns = sum(ns(e["dur"]) for e in kernels if not e["name"].startswith("ncclKernel"))
    nccl_int8_ns = sum(
        ns(e["dur"]) for e in kernels if e["name"].startswith("ncclKernel") and "int8" in e["name"]
    )
    assert nccl_int8_ns > 0

    rows = api.get(f"/api/jobs/{job.id}/dashboard/").json()["precision"]["rows"]
    assert sum(r["total_ns"] for r in rows) == compute_ns
    assert "INT8" not in {r["precision"] for r in rows}


@pytest.mark.django_db(transaction=True)
def test_tf32_tensor_op_kernels_are_tf32_in_the_precision_pie_and_the_kernels_table(api, user):
    """cuBLAS's CUTLASS "tensorop_s1688gemm" kernels read FP32 and multiply in TF32, as cuDNN's
    "tf32f32" xmma kernels and CUTLASS "tfloat32_t" convolutions (mangled names) do."""
    trace = "nccl_rank0.json.gz"
    job = parse_job(user, "tf32", [("algo-1", 0, trace)])
    tf32 = [
        e
        for e in raw_events(trace)
        if e.get("ph") == "X"
        and e.get("cat") == "kernel"
        and ("tensorop_s1688" in e["name"] or "tf32" in e["name"] or "tfloat32" in e["name"])
    ]
    names = {e["name"] for e in tf32}
    assert any("cutlass_80_tensorop_s1688gemm" in n for n in names)

    rows = api.get(f"/api/jobs/{job.id}/dashboard/").json()["precision"]["rows"]
    [row] = [r for r in rows if r["precision"] == "TF32"]
    assert (row["count"], row["total_ns"]) == (len(tf32), sum(ns(e["dur"]) for e in tf32))
    assert (row["count"], row["total_ns"]) == (489, 38_611_252)

    kernels = api.get(f"/api/jobs/{job.id}/kernels/").json()["kernels"]
    assert {k["name"] for k in kernels if k["precision"] == "TF32"} == names


@pytest.mark.django_db
def test_many_nodes_share_one_budget_of_utilisation_points(user):
    """Each node's series is the mean of its points per bucket; with many nodes the buckets
    widen, so the whole chart stays SERIES_POINTS_TOTAL points (a node keeps NODE_POINTS_MIN)."""
    from profiler_app.core.models import Node, ProfilePart
    from profiler_app.dashboard import queries
    from profiler_app.profiles.models import UtilizationPoint
    from profiler_app.traces.window import WHOLE_TRACE

    job = TrainingJob.objects.create(name="many-nodes", owner=user)
    n_nodes, n_points, step_ns = 40, 1_000, 1_000
    for i in range(n_nodes):
        node = Node.objects.create(job=job, name=f"algo-{i + 1:02d}")
        part = ProfilePart.objects.create(
            job=job, node=node, rank=i, kind="kineto", size_bytes=1, sha256=str(i)
        )
        UtilizationPoint.objects.bulk_create(
            UtilizationPoint(
                job=job,
                part=part,
                node=node,
                rank=i,
                metric="gpu_util_pct",
                device=0,
                source="nvml",
                time_ns=k * step_ns,
                value=float((k + i) % 100),
            )
            for k in range(n_points)
        )
    end_ns = n_points * step_ns
    got = queries.utilization_series(job, WHOLE_TRACE, "gpu_util_pct", 0, end_ns, True)
    per_node = queries.SERIES_POINTS_TOTAL // n_nodes
    assert queries.points_per_node(n_nodes) == per_node < n_points
    assert len(got["series"]) == n_nodes
    bucket_ns = end_ns // per_node + 1
    for i, series in enumerate(got["series"]):
        assert series["node"] == f"algo-{i + 1:02d}"
        buckets = Counter(k * step_ns // bucket_ns for k in range(n_points))
        assert len(series["points"]) == len(buckets) <= per_node
        first_bucket = [float((k + i) % 100) for k in range(n_points) if k * step_ns < bucket_ns]
        assert series["points"][0] == [0, round(sum(first_bucket) / len(first_bucket), 3)]
    assert queries.points_per_node(1) == queries.SERIES_POINTS
    assert queries.points_per_node(10_000) == queries.NODE_POINTS_MIN


@pytest.mark.django_db(transaction=True)
def test_kernel_time_on_two_gpus_is_a_share_of_both_gpus_time(api, user):
    """Two ranks on two nodes: the panels' shares are of twice the span (the UI's ``gpuTime``);
    the GPUs counted are the (node, device) pairs that ran kernels in the raw JSON."""
    ranks = ["multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"]
    job = parse_job(user, "two-gpus", [("algo-1", 0, ranks[0]), ("algo-2", 1, ranks[1])])
    devices = {
        (node, e["args"]["device"])
        for node, trace in zip(("algo-1", "algo-2"), ranks, strict=True)
        for e in raw_events(trace)
        if e.get("ph") == "X" and e.get("cat") == "kernel"
    }
    body = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert body["gpus"] == len(devices) == 2
    # Each GPU's kernels fit in its own span: the summed kernel time does not fit in one.
    assert body["kernel_time"]["total_ns"] <= body["gpus"] * body["profile_ns"]

    single = parse_job(user, "one-gpu", [("algo-1", 0, TRACE)])
    assert api.get(f"/api/jobs/{single.id}/dashboard/").json()["gpus"] == 1
