"""A valid Chrome trace that no PyTorch profiler wrote (a browser's, a game engine's, one with
arbitrary categories or odd fields) gets insights, or a clear message, never a Python
exception: every rule is judged or says why not, and the pages and report read."""

import json

import pytest

from profiler_app.insights.models import InsightsStatus
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_paths
from tests.traces.synthetic import complete_event

x = complete_event  # short: the traces below are tables of events

pytestmark = [pytest.mark.django_db(transaction=True)]


OTHER_TOOLS = {
    "browser": [x("blink", "Paint", 10, 5, tid=2), x("v8", "V8.Compile", 20, 7, tid=2)],
    "text_ids": [x("render,gpu", "Frame", 1.123456, 2.5, pid="GPU Process", tid="Compositor")],
    "kernel_without_launch": [x("kernel", "k", 1, 2, pid=0, tid=7)],
    "step_only": [x("user_annotation", "ProfilerStep#1", 0, 5)],
    "steps_without_work": [
        x("user_annotation", "ProfilerStep#1", 0, 5),
        x("user_annotation", "ProfilerStep#2", 5, 5),
    ],
    "gpu_work_before_the_steps": [
        x("user_annotation", "ProfilerStep#1", 10, 5),
        x("user_annotation", "ProfilerStep#2", 15, 5),
        x("kernel", "k", 1, 2, pid=0, tid=7, device=0, stream=7),
    ],
    "a_step_as_a_kernel": [x("kernel", "ProfilerStep#1", 0, 5, pid=0, tid=7)],
    "one_sync": [x("cuda_runtime", "cudaDeviceSynchronize", 1, 2)],
    "twin_events": [x("cpu_op", "a", 1, 2), x("cpu_op", "a", 1, 2)],
    "two_devices_one_stream": [
        x("kernel", "k", 1, 2, pid=0, tid=7, device=0, stream=7),
        x("kernel", "k", 1, 2, pid=0, tid=7, device=1, stream=7),
    ],
}


def insights_of(user, tmp_path, events: list[dict]):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    job = parse_paths(user, "other-tool", [("algo-1", 0, path)])
    return job, compute_here(job)


@pytest.mark.parametrize("events", OTHER_TOOLS.values(), ids=OTHER_TOOLS.keys())
def test_a_trace_from_another_tool_gets_insights_or_a_clear_message(api, user, tmp_path, events):
    job, row = insights_of(user, tmp_path, events)
    assert row.status == InsightsStatus.DONE, row.error
    for rule in [*row.report["rules"], *row.report["recommendations"]]:
        reason = rule["not_evaluated_reason"] or ""
        assert "Error" not in reason and "Traceback" not in reason, (rule["rule"], reason)
        assert rule["status"] != "not_evaluated" or reason.startswith("not evaluated: ")
    for url in ("insights/", "analyses/", "insights/report.html"):
        response = api.get(f"/api/jobs/{job.id}/{url}")
        assert response.status_code == 200, url
        assert "Traceback" not in response.content.decode()
