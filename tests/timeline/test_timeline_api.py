"""The timeline API over parts the real ingest parsed: tree, binary viewport, search, event
details and Chrome-trace export, checked against the raw traces; and who may call it."""

import gzip
import json
from collections import Counter

import numpy as np
import pytest

from profiler_app.timeline.pure.payload import decode
from tests.timeline.drawn import drawn_totals
from tests.timeline.jobs import TWO_RANKS
from tests.timeline.raw import raw_timeline
from tests.traces.expected import DATA, expected

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def job(parsed_job):
    return parsed_job("sampled-2-ranks", TWO_RANKS)


def tree_of(api, job) -> dict:
    response = api.get(f"/api/jobs/{job.id}/timeline/tracks/")
    assert response.status_code == 200, response.content
    return response.json()


def nodes(body: dict) -> list[dict]:
    out = []

    def walk(node):
        out.append(node)
        for child in node.get("children", []):
            walk(child)

    for root in body["tracks"]:
        walk(root)
    return out


def viewport(api, job, body, width_px, tracks, **extra):
    params = {
        "start_ns": body["start_ns"],
        "end_ns": str(int(body["end_ns"]) + 1),
        "width_px": width_px,
    }
    return api.get(
        f"/api/jobs/{job.id}/timeline/viewport/", {**params, "tracks": ",".join(tracks)}, **extra
    )


def test_it_serves_the_track_tree(api, job):
    body = tree_of(api, job)
    want = [expected(trace) for _, _, trace in TWO_RANKS]
    assert body["start_ns"] == str(min(e.start_ns for e in want))
    assert body["end_ns"] == str(max(e.end_ns for e in want))
    assert body["n_events"] == sum(len(e.events) for e in want)
    assert [p["rank"] for p in body["parts"]] == [0, 1]
    assert [root["label"] for root in body["tracks"]] == ["algo-1", "algo-2"]
    by_id = {n["id"]: n for n in nodes(body)}
    assert by_id["algo-2/4045"]["label"] == "HOST-1 PID-4045"
    assert by_id["algo-2/4045/gpu1/s7"] == {
        "id": "algo-2/4045/gpu1/s7",
        "label": "stream 7",
        "kind": "stream",
        "data": "events",
        "rows": 1,
        "events": raw_timeline(TWO_RANKS[1][2]).count[("stream", 1, 7)],
        "info": {"device": 1, "stream": 7},
    }


@pytest.mark.parametrize("width_px", [50, 2000])
def test_it_answers_a_viewport_that_adds_up_to_the_trace(api, job, width_px):
    body = tree_of(api, job)
    lanes = [n for n in nodes(body) if n["data"] == "events"]
    response = viewport(api, job, body, width_px, [n["id"] for n in lanes])
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    header, arrays = decode(response.content)
    count, busy = drawn_totals(header, arrays)
    raws = [raw_timeline(trace) for _, _, trace in TWO_RANKS]
    assert count == sum(r.n_events for r in raws)
    assert busy == sum(sum(r.busy_ns.values()) for r in raws)
    assert header["k"] <= 21 if width_px == 2000 else header["k"] > 21


def test_it_sends_counters_aggregates_and_compresses(api, job):
    body = tree_of(api, job)
    tracks = ["algo-1/gpus", "algo-1/4037/gpu0/util", "algo-2", "algo-2/4045/gpu1/device"]
    response = viewport(api, job, body, 800, tracks, HTTP_ACCEPT_ENCODING="gzip, deflate")
    assert response["Content-Encoding"] == "gzip"
    assert response["Server-Timing"].startswith("query;dur=")
    header, arrays = decode(gzip.decompress(response.content))
    kinds = {t["id"]: t["type"] for t in header["tracks"]}
    assert kinds == dict(zip(tracks, ["counter", "counter", "aggregate", "aggregate"], strict=True))
    strip = header["strip"]["n_buckets"]
    assert strip <= 800
    assert len(arrays["ct_mean"]) == 2 * strip and len(arrays["ag_count"]) == 2 * strip
    node = next(t for t in header["tracks"] if t["id"] == "algo-2")
    counts = arrays["ag_count"][node["offset"] : node["offset"] + strip]
    assert int(counts.sum()) == raw_timeline(TWO_RANKS[1][2]).n_events  # everything of rank 1
    assert 0 < np.nanmax(arrays["ct_mean"][:strip]) <= 100


def test_it_refuses_bad_viewport_requests(api, job):
    body = tree_of(api, job)
    assert viewport(api, job, body, 0, ["algo-1"]).status_code == 400
    response = viewport(api, job, body, 100, ["algo-9"])
    assert response.status_code == 400
    assert "algo-9" in response.json()["tracks"][0]
    url = f"/api/jobs/{job.id}/timeline/viewport/"
    bad = api.get(url, {"start_ns": "10", "end_ns": "5", "width_px": 10, "tracks": "algo-1"})
    assert bad.status_code == 400 and "end_ns" in bad.json()
    assert (
        api.get(
            url, {"start_ns": "1e9", "end_ns": "5", "width_px": 10, "tracks": "algo-1"}
        ).status_code
        == 400
    )


def test_it_searches_and_details_an_event(api, job):
    raw = raw_timeline(TWO_RANKS[0][2])
    other = raw_timeline(TWO_RANKS[1][2])
    found = api.get(f"/api/jobs/{job.id}/timeline/search/", {"q": "nccl", "limit": 5}).json()
    want: Counter = Counter()
    for r in (raw, other):
        want.update({name: n for name, n in r.names.items() if "nccl" in name.lower()})
    assert found["count"] == sum(want.values())
    assert {n["name"]: n["count"] for n in found["names"]} == dict(want)
    assert len(found["results"]) == 5
    kernel = next(
        r
        for r in api.get(f"/api/jobs/{job.id}/timeline/search/", {"q": "ncclKernel"}).json()[
            "results"
        ]
    )
    details = api.get(f"/api/jobs/{job.id}/timeline/event/", {"id": kernel["id"]}).json()
    run, launch = details["run"], details["launch"]
    assert run["id"] == kernel["id"] and run["kind"] == "kernel"
    assert launch["kind"] == "cuda_runtime" and launch["correlation"] == run["correlation"]
    pairs = raw.pairs | other.pairs
    assert (int(launch["start_ns"]), launch["name"], int(run["start_ns"]), run["name"]) in pairs
    assert details["launch_latency_ns"] == int(run["start_ns"]) - int(launch["start_ns"])
    missing = api.get(f"/api/jobs/{job.id}/timeline/event/", {"id": "999999:1"})
    assert missing.status_code == 404


def test_it_exports_chrome_trace_json(api, job):
    body = tree_of(api, job)
    response = api.get(f"/api/jobs/{job.id}/timeline/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="sampled-2-ranks-timeline.json"'
    trace = json.loads(b"".join(response.streaming_content))
    phases = Counter(e["ph"] for e in trace["traceEvents"])
    raws = [raw_timeline(t) for _, _, t in TWO_RANKS]
    assert phases["X"] == sum(r.n_events for r in raws)
    assert phases["s"] == phases["f"] == sum(len(r.pairs) for r in raws)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert {"algo-1 HOST-0 PID-4037", "algo-2 HOST-1 PID-4045", "GPU-1 device stream 7"} <= names
    origin = int(trace["otherData"]["origin_ns"])
    assert origin == int(body["origin_ns"])
    # A range: every event overlapping [start, end), times still from the same origin.
    starts = sorted(ev[0] for _, _, t in TWO_RANKS for ev in expected(t).events)
    start, end = starts[len(starts) // 2], starts[len(starts) // 2] + 20_000_000
    part = api.get(
        f"/api/jobs/{job.id}/timeline/export/", {"start_ns": str(start), "end_ns": str(end)}
    )
    events = [
        e for e in json.loads(b"".join(part.streaming_content))["traceEvents"] if e["ph"] == "X"
    ]
    overlapping = [
        ev
        for r in TWO_RANKS
        for ev in expected(r[2]).events
        if ev[0] < end and (ev[0] + ev[1] > start or ev[0] >= start)
    ]
    assert len(events) == len(overlapping) > 100
    assert min(e["ts"] for e in events) * 1000 + origin < end


@pytest.mark.parametrize(
    ("name", "disposition"),
    [
        ('say "hi"', 'attachment; filename="say \\"hi\\"-timeline.json"'),
        ("two\nlines/ok", 'attachment; filename="two_lines_ok-timeline.json"'),
        ("café", "attachment; filename*=utf-8''caf%C3%A9-timeline.json"),
    ],
)
def test_it_exports_a_job_whatever_its_name(api, user, name, disposition):
    from profiler_app.core.models import TrainingJob

    job = TrainingJob.objects.create(name=name, owner=user)
    response = api.get(f"/api/jobs/{job.id}/timeline/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == disposition
    assert json.loads(b"".join(response.streaming_content))["traceEvents"] == []


def test_it_throttles_exports(api, user, settings):
    from profiler_app.core.models import TrainingJob

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "export": "2/hour",
        },
    }
    job = TrainingJob.objects.create(name="exported", owner=user)
    codes = [api.get(f"/api/jobs/{job.id}/timeline/export/").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert api.get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 200


def test_it_requires_sign_in_and_a_real_job(client_for, api, job):
    anonymous = client_for(None)
    for path in ("tracks/", "search/?q=x", "event/?id=1:1", "export/"):
        assert anonymous.get(f"/api/jobs/{job.id}/timeline/{path}").status_code == 401
    assert api.get("/api/jobs/9999/timeline/tracks/").status_code == 404


def test_it_shows_a_job_to_every_teammate(client_for, teammate, job):
    assert client_for(teammate).get(f"/api/jobs/{job.id}/timeline/tracks/").status_code == 200


def test_it_draws_nothing_for_a_job_without_parsed_parts(api, user):
    from profiler_app.core.models import TrainingJob

    empty = TrainingJob.objects.create(name="empty", owner=user)
    body = api.get(f"/api/jobs/{empty.id}/timeline/tracks/").json()
    assert body["tracks"] == [] and body["n_events"] == 0 and body["steps"] == []


def test_it_draws_the_memory_curve_as_a_counter_track(api, parsed_job):
    """A profile_memory trace: the CPU's allocated memory per process is a counter track whose
    highest point is the raw trace's peak (the down-sampled curve keeps each bucket's high)."""
    job = parsed_job("memory-track", [("algo-1", 0, "cpu_memory_profile.json.gz")])
    with gzip.open(DATA / "cpu_memory_profile.json.gz") as f:
        events = json.load(f)["traceEvents"]
    peak = max(e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]")
    body = tree_of(api, job)
    [track] = [n for n in nodes(body) if n["label"] == "CPU memory allocated (PyTorch), rank 0"]
    assert (track["data"], track["info"]["unit"]) == ("counter", "B")
    header, arrays = decode(viewport(api, job, body, 2000, [track["id"]]).content)
    strip = header["strip"]["n_buckets"]
    assert float(np.nanmax(arrays["ct_high"][:strip])) == pytest.approx(peak, rel=1e-6)
    assert peak == 1_723_440
