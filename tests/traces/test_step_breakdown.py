"""A part's step breakdown (``traces.step_breakdown.store_breakdown``) is read from its store a
row group at a time, each part's intervals merged as they come: on real traces whose stores
hold several row groups it equals the breakdown of all their events at once, in both windows,
without a whole column read. (``tests/dashboard/test_headline.py`` checks the figures against
the raw events.)"""

import numpy as np
import pytest

from profiler_app.traces import ingest_trace
from profiler_app.traces.step_breakdown import (
    event_intervals,
    name_flags,
    step_breakdown,
    store_breakdown,
)
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.window import IN_COMPLETE_STEPS, IN_WHOLE_TRACE
from tests.traces.expected import DATA

TRACES = [
    "nccl_rank0.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
]


def _bounds(steps) -> tuple[np.ndarray, np.ndarray]:
    steps = steps.sort_values("start_ns", kind="stable")
    starts = steps["start_ns"].to_numpy(np.int64)
    return starts, starts + steps["dur_ns"].to_numpy(np.int64)


def _no_whole_column(reader, name):
    raise AssertionError(f"the whole {name} column was read")


@pytest.mark.parametrize("trace", TRACES)
def test_the_breakdown_read_group_by_group_is_that_of_all_events_at_once(
    trace, tmp_path, monkeypatch
):
    result = ingest_trace(DATA / trace, "kineto", tmp_path)
    reader = TimelineReader(tmp_path)
    assert reader.events.metadata.num_row_groups > 1
    steps = result.aggregates.steps
    assert result.cut is not None and steps["captured"].all()
    # Every captured event but the steps, at once.
    keep = reader.column("captured") & ~reader.column("is_step")
    columns = reader.columns(["kind", "name", "start_ns", "dur_ns"], keep)
    events = event_intervals(**columns, flags=name_flags(reader.strings))
    in_complete = steps[steps["start_ns"] < result.cut.last_step_start_ns]
    expected = {
        IN_WHOLE_TRACE: step_breakdown(_bounds(steps), events),
        IN_COMPLETE_STEPS: step_breakdown(_bounds(in_complete), events),
    }
    assert expected[IN_WHOLE_TRACE] != expected[IN_COMPLETE_STEPS]
    assert expected[IN_WHOLE_TRACE]["kernels"] > 0

    monkeypatch.setattr(TimelineReader, "column", _no_whole_column)
    assert store_breakdown(tmp_path, steps, result.cut.last_step_start_ns) == expected
