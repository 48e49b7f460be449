"""The pure cluster analyses: slow-rank rule, bandwidth factors, names, and a 64-rank job built
by replicating a real rank's events."""

import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import pytest

from profiler_app.analysis import cluster as analysis
from profiler_app.analysis.events import RankTrace
from profiler_app.traces import ingest_trace
from profiler_app.traces.timeline_read import TimelineReader
from tests.traces.expected import DATA

REAL = "multirank_sampled/rank-0.json.gz"


PURITY = """
import sys

class NoDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith(("django.", "rest_framework")):
            raise ImportError("Django is blocked in this test")

sys.meta_path.insert(0, NoDjango())
from profiler_app.analysis import cluster as analysis
print("pure")
"""


def test_it_imports_without_django():
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PURITY], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pure"


def test_it_flags_a_rank_30_percent_slower_and_no_other():
    values = np.full(8, 100.0)
    values[5] = 130.0
    found = analysis.slow_outliers(values)
    assert found.mad == 0
    assert np.flatnonzero(found.flagged).tolist() == [5]


def test_it_uses_the_robust_z_score_when_ranks_vary():
    values = np.array([100.0, 101, 99, 100.5, 99.5, 100.2, 130, 100.1])
    found = analysis.slow_outliers(values)
    assert found.mad > 0
    assert np.flatnonzero(found.flagged).tolist() == [6]
    assert found.robust_z[6] > analysis.ROBUST_Z_THRESHOLD
    # A rank just under the MAD = 0 ratio, or barely above the median, is not flagged.
    assert not analysis.slow_outliers(np.array([100.0] * 7 + [119])).flagged.any()
    assert not analysis.slow_outliers(np.array([100.0, 100, 100.001, 100.002, 103])).flagged.any()
    assert not analysis.slow_outliers(np.array([100.0, 200])).flagged.any()


def test_it_names_collectives_and_their_bus_factors():
    assert analysis.canonical_collective("allreduce") == "all_reduce"
    assert analysis.canonical_collective("_allgather_base") == "all_gather"
    assert analysis.canonical_collective("reduce_scatter_tensor_coalesced") == "reduce_scatter"
    assert analysis.canonical_collective("ncclDevKernel_AllGather_RING_LL(x)") == "all_gather"
    assert (
        analysis.canonical_collective("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t") == "send_recv"
    )
    assert analysis.bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert analysis.bus_factor("all_gather", 4) == pytest.approx(3 / 4)
    assert analysis.bus_factor("broadcast", 4) == 1.0
    assert analysis.bus_factor("all_reduce", -1) is None


def test_it_diffs_named_rows_by_impact():
    a = pd.DataFrame(
        {"name": ["gemm", "relu", "old"], "count": [10, 5, 1], "total_ns": [100, 50, 7]}
    )
    b = pd.DataFrame(
        {"name": ["gemm", "relu", "new"], "count": [10, 6, 2], "total_ns": [160, 50, 30]}
    )
    table = analysis.diff(a, b)
    assert table[["name", "status", "delta_ns"]].values.tolist() == [
        ["gemm", "changed", 60],
        ["new", "added", 30],
        ["old", "removed", -7],
        ["relu", "changed", 0],
    ]


@pytest.fixture(scope="module")
def real_rank():
    with tempfile.TemporaryDirectory() as tmp:
        result = ingest_trace(DATA / REAL, "kineto", f"{tmp}/store")
        reader = TimelineReader(f"{tmp}/store")
        events = reader.read_all(analysis.STORE_COLUMNS).to_pandas()
        yield events, reader.strings, result.aggregates.steps


def scaled(frame: pd.DataFrame, origin: int, factor: float, shift: int) -> pd.DataFrame:
    """Times scaled by ``factor`` from ``origin`` and moved by ``shift``."""
    start = origin + ((frame["start_ns"] - origin) * factor).round().astype(np.int64) + shift
    return frame.assign(start_ns=start, dur_ns=(frame["dur_ns"] * factor).round().astype(np.int64))


def test_it_flags_the_slow_rank_of_a_synthetic_64_rank_job(real_rank):
    events, strings, steps = real_rank
    origin = int(events["start_ns"].min())
    slow = 41
    rows = []
    for rank in range(64):
        # Every rank slightly different (up to 0.5%), one 30% slower.
        factor = 1.3 if rank == slow else 1 + 0.005 * (rank % 8) / 8
        trace = RankTrace(rank, scaled(events, origin, factor, rank * 1000), strings)
        frames = analysis.rank_frames(trace, scaled(steps, origin, factor, rank * 1000))
        assert len(frames.steps) == 2 and not frames.steps["inferred"].any()
        rows.append(frames.steps["compute_ns"].mean())
    found = analysis.slow_outliers(np.array(rows))
    assert np.flatnonzero(found.flagged).tolist() == [slow]
    assert rows[slow] == pytest.approx(1.3 * rows[0], rel=1e-6)


def test_it_infers_one_step_without_step_annotations(real_rank):
    events, strings, steps = real_rank
    frames = analysis.rank_frames(RankTrace(0, events, strings), steps.iloc[0:0])
    [row] = frames.steps.to_dict("records")
    assert row["inferred"] and row["step"] == 0
    assert row["gap_ns"] + row["compute_ns"] + row["tail_ns"] == row["dur_ns"] > 0


def test_a_rank_that_arrives_late_makes_the_others_wait(real_rank):
    events, strings, _ = real_rank
    late_ns = 250_000
    late = events.assign(start_ns=events["start_ns"] + late_ns)  # every call 250 µs later
    traces = [
        RankTrace(0, events, strings),
        RankTrace(1, late, strings),
        RankTrace(2, events, strings),
    ]
    waits = analysis.collective_waits(traces).set_index("rank")
    calls = int(waits.loc[1, "calls"])
    assert calls == 10 and waits["collective"].tolist() == ["send_recv"] * 3
    assert waits["wait_ns"].tolist() == [calls * late_ns, 0, calls * late_ns]
    assert waits["max_wait_ns"].tolist() == [late_ns, 0, late_ns]

    # A rank that missed a call: the calls cannot be matched, so no wait is claimed.
    ops = events.index[events["kind"].isin(sorted(analysis.GPU_OP_KINDS))]
    comm_names = [i for i, s in enumerate(strings) if s.startswith("ncclKernel")]
    first_comm = events.loc[ops][events.loc[ops, "name"].isin(comm_names)].index[0]
    missing = events.drop(index=first_comm)
    short = analysis.collective_waits(
        [RankTrace(0, events, strings), RankTrace(1, missing, strings)]
    )
    assert short.empty
