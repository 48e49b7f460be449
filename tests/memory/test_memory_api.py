"""The Memory page's API for real traces parsed by a real worker, against the raw JSON."""

import gzip
import json
from decimal import Decimal

import pytest

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.models import UtilizationPoint
from tests.conftest import DATA_DIR
from tests.ingest.helpers import upload, upload_parsed, wait_parsed
from tests.traces.expected import ns
from tests.traces.memory_expected import (
    MEMORY_TRACE,
    memory_expected,
    running_sum,
    write_without_totals,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def memory_job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="cpu-memory", owner=user, status="completed")
    return job, upload_parsed(api, job, DATA_DIR / MEMORY_TRACE).id


def test_it_serves_the_curve_peak_and_top_allocators(api, memory_job):
    job, part = memory_job
    raw = memory_expected()
    body = api.get(f"/api/jobs/{job.id}/memory/").json()
    assert body["part"] == part
    [peak] = body["peaks"]
    assert (peak["device"], peak["allocated"], peak["time_ns"]) == (
        "CPU",
        raw.peak_allocated,
        raw.peak_time_ns,
    )
    assert peak["running"] == raw.running
    [device] = body["devices"]
    assert len(device["curve"]) == len(raw.events)  # fewer than the points kept
    assert max(p[1] for p in device["curve"]) == raw.peak_allocated
    assert [p[0] for p in device["curve"]] == [t for t, *_ in raw.events]
    top = device["allocators"][:3]
    expected = sorted(raw.allocated_bytes.items(), key=lambda kv: -kv[1])[:3]
    assert [(a["name"], a["allocated_bytes"]) for a in top] == expected
    assert body["nvml"] == []
    assert (peak["reserved"], peak["totals_recorded"]) == (raw.peak_reserved, True)
    # The page's times start at the trace's first event, not at the first memory event.
    assert body["start_ns"] == first_event_ns(DATA_DIR / MEMORY_TRACE) < raw.events[0][0]


def first_event_ns(path) -> int:
    with gzip.open(path) as f:
        doc = json.load(f, parse_float=Decimal)
    starts = (ns(e["ts"]) for e in doc["traceEvents"] if e.get("ph") in ("X", "i"))
    return min(starts) + int(doc["baseTimeNanoseconds"])


def test_it_rebuilds_the_curve_from_bytes_for_a_trace_without_totals(
    api, user, celery_worker_process, tmp_path
):
    trace = write_without_totals(tmp_path / "bytes-only.json.gz")
    job = TrainingJob.objects.create(name="pytorch-1.9", owner=user, status="completed")
    [done] = wait_parsed(upload(api, job, trace)["id"])
    assert done.state == PartState.DONE, done.error
    raw = running_sum(trace)
    body = api.get(f"/api/jobs/{job.id}/memory/").json()
    [device] = body["devices"]
    assert (device["time_ns"], device["allocated"]) == raw.peaks[(0, -1)]
    assert (device["reserved"], device["totals_recorded"]) == (None, False)
    assert device["curve"] == [[t, total, None] for t, total in raw.sums[(0, -1)]]
    assert body["start_ns"] == first_event_ns(trace)
    events = api.get(f"/api/jobs/{job.id}/memory/events/", {"limit": 1000}).json()["results"]
    assert [(e["total_allocated"], e["total_reserved"]) for e in events] == [
        (total, None) for _, total in raw.sums[(0, -1)]
    ]


def test_it_pages_and_filters_the_memory_events(api, memory_job):
    job, part = memory_job
    raw = memory_expected()
    t0, t1 = raw.events[50][0], raw.events[400][0]
    url = f"/api/jobs/{job.id}/memory/events/"
    query = {"min_bytes": 65536, "start_ns": t0, "end_ns": t1, "device": "CPU", "limit": 7}
    body = api.get(url, {**query, "offset": 3}).json()
    wanted = [e for e in raw.events if abs(e[1]) >= 65536 and t0 <= e[0] <= t1]
    assert body["part"] == part and body["count"] == len(wanted)
    assert [(e["time_ns"], e["bytes"], e["operator"]) for e in body["results"]] == [
        (t, b, name) for t, b, _, name in wanted[3:10]
    ]
    assert api.get(url, {"device": "GPU 0"}).json()["count"] == 0


@pytest.mark.parametrize(
    "query, field",
    [
        ({"min_bytes": "big"}, "min_bytes"),
        ({"min_bytes": -1}, "min_bytes"),
        ({"device": "TPU"}, "device"),
        ({"start_ns": 10, "end_ns": 5}, "end_ns"),
        ({"limit": 100000}, "limit"),
        ({"limit": 0}, "limit"),
    ],
)
def test_it_explains_bad_event_filters(api, user, query, field):
    job = TrainingJob.objects.create(name="empty", owner=user)
    response = api.get(f"/api/jobs/{job.id}/memory/events/", query)
    assert response.status_code == 400
    assert field in response.json()


def test_a_job_without_memory_events_has_an_empty_memory_page(api, user):
    job = TrainingJob.objects.create(name="empty", owner=user)
    body = api.get(f"/api/jobs/{job.id}/memory/").json()
    assert body == {
        "job": job.id,
        "part": None,
        "start_ns": None,
        "peaks": [],
        "devices": [],
        "nvml": [],
    }
    events = api.get(f"/api/jobs/{job.id}/memory/events/").json()
    assert events == {"part": None, "count": 0, "results": []}
    assert api.get("/api/jobs/999999/memory/").status_code == 404


def test_it_draws_the_collectors_nvml_memory_samples(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="h100", owner=user, status="completed")
    chunks = sorted((DATA_DIR / "h100_collector").glob("chunk-*.pcol"))[3:6]
    parts = [upload(api, job, chunk, kind="collector")["id"] for chunk in chunks]
    for done in wait_parsed(*parts):
        assert done.state == PartState.DONE, done.error
    body = api.get(f"/api/jobs/{job.id}/memory/").json()
    stored = UtilizationPoint.objects.filter(job=job, metric="gpu_mem_used_bytes")
    assert stored.count() >= 2  # NVML samples at most once per chunk here
    [series] = body["nvml"]
    assert series["device"] == "GPU 0"
    assert series["points"] == [
        [t, v] for t, v in stored.order_by("time_ns").values_list("time_ns", "value")
    ]
