"""Insights of a job whose traces hold names Postgres refuses in text (NUL) are stored."""

import io
import json

import pytest

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import TrainingJob
from profiler_app.ingest.tasks import ingest_part
from profiler_app.insights.models import InsightsStatus
from tests.insights.helpers import compute_here
from tests.traces.synthetic import complete_event

EVENT = complete_event("kernel", "k", 1.5, 2.0, pid=0, tid=7, device=0, stream=7)


@pytest.mark.django_db
def test_it_stores_insights_of_names_with_nul(user):
    job = TrainingJob.objects.create(name="nul-names", owner=user)
    annotation = {**EVENT, "cat": "user_annotation", "tid": 1, "args": {}}
    doc = {
        "traceEvents": [
            {**EVENT, "name": "nul\u0000k"},
            {**EVENT, "ts": 10, "cat": "c\u0000t"},
            {**annotation, "name": "a\u0000", "dur": 20},
            {**EVENT, "ts": 30, "args": {"device": 0, "stream": 7, "k\u0000": "v\u0000"}},
        ],
        "traceName": "t\u0000",
    }
    data = io.BytesIO(json.dumps(doc).encode())
    part, _ = store_part(job, PartSource("algo-1", 0, "kineto", "t.json"), data)
    ingest_part.apply(args=[part.id])
    row = compute_here(job)
    assert row.status == InsightsStatus.DONE, row.error
