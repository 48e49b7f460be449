"""Down-sampling of the analyses' series keeps every bin's peak, in time order, exactly."""

import pandas as pd

from profiler_app.insights.summaries import peak_series

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
