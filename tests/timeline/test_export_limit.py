"""The export's size bound (EXPORT_MAX_MB): a range whose events alone pass it is refused with
413 before a byte is streamed; one that reaches it unforeseen ends early as valid JSON that
says so; the floor the refusal rests on is never above what is sent."""

import json

import pytest

from profiler_app.timeline.pure.export import chrome_trace, least_bytes

pytestmark = pytest.mark.django_db

TRACE = "nccl_rank0.json.gz"  # 26,935 stored events


@pytest.fixture
def job(parsed_job):
    return parsed_job("exported", [("algo-1", 0, TRACE)])


def body_of(response) -> bytes:
    return b"".join(response.streaming_content)


def test_the_floor_is_below_the_export_and_close_to_it(timeline_of):
    timeline = timeline_of(TRACE)
    events, least = least_bytes(timeline)
    sent = b"".join(chrome_trace(timeline))
    exported = json.loads(sent)
    assert events == sum(1 for e in exported["traceEvents"] if e["ph"] == "X")
    assert least <= len(sent) < 4 * least


def test_it_refuses_an_export_over_the_limit_before_streaming(api, job, settings):
    settings.EXPORT_MAX_BYTES = 100_000
    response = api.get(f"/api/jobs/{job.id}/timeline/export/")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == "answer_too_large"
    assert body["detail"].startswith("This export holds ")
    assert body["detail"].endswith(
        "over this server's limit of 100,000 bytes (EXPORT_MAX_MB). Export a shorter range "
        "(start_ns and end_ns)."
    )

    whole = json.loads(body_of(api.get(f"/api/jobs/{job.id}/timeline/export/", {"end_ns": 0})))
    start = int(whole["otherData"]["start_ns"])
    short = api.get(
        f"/api/jobs/{job.id}/timeline/export/",
        {"start_ns": str(start), "end_ns": str(start + 1_000_000)},  # its first millisecond
    )
    assert short.status_code == 200
    assert len(body_of(short)) <= 100_000


def test_an_export_that_reaches_the_limit_ends_as_json_saying_so(api, job, settings):
    full = body_of(api.get(f"/api/jobs/{job.id}/timeline/export/"))
    assert "truncated" not in json.loads(full)
    settings.EXPORT_MAX_BYTES = len(full) - 1  # over the floor, under the export

    response = api.get(f"/api/jobs/{job.id}/timeline/export/")

    assert response.status_code == 200
    sent = body_of(response)
    assert len(sent) <= settings.EXPORT_MAX_BYTES
    cut = json.loads(sent)
    assert cut["truncated"] is True
    assert cut["note"].startswith("The export stopped at ")
    assert cut["note"].endswith(
        f"the next events would pass this server's limit of {len(full) - 1:,} bytes "
        "(EXPORT_MAX_MB). Export a shorter range (start_ns, end_ns) for the rest."
    )
    assert 0 < len(cut["traceEvents"]) < len(json.loads(full)["traceEvents"])
