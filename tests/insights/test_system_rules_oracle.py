"""The system rules on real shared traces, against figures computed from the raw JSON: an
imported trace's GPU utilisation is the share of each 1 ms bucket in which a kernel ran
(``kernel_busy_percentiles``), and OverallSystemUsage and LowGPUUtilization give percentiles of
those points, not of one mean."""

import gzip
import json
from decimal import Decimal

import numpy as np
import pytest

from profiler_app.insights.models import InsightsStatus
from profiler_app.traces.window import COMPLETE_STEPS
from tests.conftest import DATA_DIR
from tests.insights.helpers import compute_here
from tests.insights.test_insights_api import kernel_busy_percentiles
from tests.timeline.jobs import parse_job
from tests.traces.expected import ns

pytestmark = [pytest.mark.django_db(transaction=True)]

TRACES = ["gpu_training_rank0.pt.trace.json.gz", "nccl_rank0.json.gz", "h100_cnn_kineto.json.gz"]


def raw_busy(trace: str) -> dict[int, float]:
    with gzip.open(DATA_DIR / trace) as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    steps = sorted(
        ns(e["ts"])
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    # The complete steps: buckets before the last step's start (all of them without steps).
    before = steps[-1] if len(steps) >= 2 else 2**62
    return kernel_busy_percentiles(events, before)


@pytest.mark.parametrize("trace", TRACES)
def test_gpu_percentiles_are_those_of_the_kernel_busy_points(user, trace):
    job = parse_job(user, "oracle", [("algo-1", 0, trace)], window=COMPLETE_STEPS)
    row = compute_here(job)
    assert row.status == InsightsStatus.DONE, row.error
    rules = {r["rule"]: r for r in row.report["rules"]}
    expected = raw_busy(trace)
    usage = rules["OverallSystemUsage"]["evidence"]
    node = usage["nodes"]["algo-1"]["gpu_util_pct"]  # one GPU: the node's value is its value
    gpu = usage["gpus"]["algo-1 GPU 0"]
    for q in (50, 95):
        assert node[f"p{q}"] == pytest.approx(expected[q], abs=1e-6)
        assert gpu[f"p{q}"] == pytest.approx(expected[q], abs=1e-6)
    advice = rules["OverallSystemUsage"]["recommendation"]
    assert ("lightly used" in advice) is (expected[95] < 70)
    low = rules["LowGPUUtilization"]
    figures = low["evidence"]["nodes"]["algo-1"]["0"]
    assert figures["p50"] == pytest.approx(expected[50], abs=1e-6)
    assert figures["p95"] == pytest.approx(expected[95], abs=1e-6)
    under = figures["window_p95"] < 70
    fluctuating = figures["window_p95"] > 70 and figures["window_p5"] < 10
    assert low["triggered"] is (under or fluctuating)
    assert not np.isnan(figures["window_p95"])
