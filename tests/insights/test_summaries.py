"""Down-sampling of the analyses' series keeps every bin's peak, in time order, exactly, and a
chart's many lines share one budget of points."""

import numpy as np
import pandas as pd

from profiler_app.insights.summaries import (
    LINE_POINTS_MIN,
    MAX_POINTS,
    SERIES_POINTS_TOTAL,
    SeriesLines,
    peak_series,
)

T0 = 1_712_195_495_505_543_140  # epoch ns: beyond float precision


def test_it_keeps_each_bins_peak_in_time_order():
    frame = pd.DataFrame(
        {
            "rank": 0,
            "stream": 7,
            "time_ns": [T0 + i for i in range(10)],
            "queue_length": [1, 5, 2, 2, 9, 3, 0, 0, 4, 1],
        }
    )
    [line] = peak_series(frame, ["rank", "stream"], "queue_length", max_points=5)
    assert line["rank"] == 0 and line["stream"] == 7
    assert line["points"] == [[T0, 5.0], [T0 + 2, 2.0], [T0 + 4, 9.0], [T0 + 6, 0.0], [T0 + 8, 4.0]]


def test_a_short_series_goes_whole():
    frame = pd.DataFrame(
        {"rank": 1, "kind": "Memset", "time_ns": [T0, T0 + 3], "bandwidth_gbps": [0.5, 2.0]}
    )
    [line] = peak_series(frame, ["rank", "kind"], "bandwidth_gbps")
    assert line["points"] == [[T0, 0.5], [T0 + 3, 2.0]]


def lines_frame(lines: int, points: int) -> pd.DataFrame:
    """``lines`` ranks' queue lengths, ``points`` samples each, rising by one a sample."""
    return pd.DataFrame(
        {
            "rank": np.repeat(np.arange(lines), points),
            "stream": 7,
            "time_ns": np.tile(T0 + np.arange(points) * 1000, lines),
            "queue_length": np.tile(np.arange(points), lines),
        }
    )


def test_many_lines_share_one_budget_of_points():
    few = peak_series(lines_frame(8, 1000), ["rank", "stream"], "queue_length")
    assert [len(line["points"]) for line in few] == [MAX_POINTS] * 8

    lines = 2048  # a 1,024-rank job's two streams a rank
    many = peak_series(lines_frame(lines, 1000), ["rank", "stream"], "queue_length")
    assert [line["rank"] for line in many] == list(range(lines))
    per_line = max(LINE_POINTS_MIN, SERIES_POINTS_TOTAL // lines)
    assert all(len(line["points"]) == per_line for line in many)
    # Equal time bins over the line's 999 µs; each keeps its last (largest) value.
    width_ns = 999_000 // per_line + 1
    bins = [(i * 1000) // width_ns for i in range(1000)]
    peaks = [float(max(i for i in range(1000) if bins[i] == b)) for b in range(per_line)]
    assert [v for _, v in many[5]["points"]] == peaks


def folded(pieces: list[pd.DataFrame], keys: list[str], value: str) -> list[dict]:
    lines = SeriesLines(keys, value)
    for piece in pieces:
        lines.add(piece)
    return lines.peaks()


def test_the_ranks_series_line_by_line_are_the_job_s():
    """A job's series folded from each rank's own rows (what a run keeps) equal those made from
    all rows at once, in the same order; where two pieces share a line (not a rank's own
    rows), their rows make it together, ties in time in the pieces' order."""
    frame = lines_frame(300, 500)  # past 100 lines: the budget per line depends on them all
    frame["stream"] = np.where(frame["rank"] % 3 == 0, 7, 13)
    whole = peak_series(frame, ["rank", "stream"], "queue_length")
    pieces = [frame[frame["rank"] == rank] for rank in reversed(range(300))]
    assert folded(pieces, ["rank", "stream"], "queue_length") == whole

    halves = [frame.iloc[: len(frame) // 2 + 250], frame.iloc[len(frame) // 2 + 250 :]]
    assert folded(halves, ["rank", "stream"], "queue_length") == whole

    # Shuffled rows, times repeated, every point kept: ties keep the rows' order.
    rng = np.random.default_rng(7)
    shuffled = frame.sample(frac=1, random_state=3).reset_index(drop=True)
    shuffled["time_ns"] = shuffled["time_ns"] // 4000 * 4000
    shuffled["queue_length"] = rng.integers(0, 50, len(shuffled))
    whole = peak_series(shuffled, ["rank", "stream"], "queue_length", max_points=1000)
    lines = SeriesLines(["rank", "stream"], "queue_length")
    third = len(shuffled) // 3
    for start in range(0, len(shuffled), third):
        lines.add(shuffled.iloc[start : start + third])
    assert lines.peaks(max_points=1000) == whole


def test_a_trace_without_the_series_has_no_lines():
    """A CPU-only trace's queue lengths: no row, no line (as pandas' groups would say)."""
    empty = lines_frame(0, 0)
    assert peak_series(empty, ["rank", "stream"], "queue_length") == []
    assert folded([empty, empty], ["rank", "stream"], "queue_length") == []
