"""What a viewport answer draws, added up."""

import numpy as np


def drawn_totals(header: dict, arrays: dict[str, np.ndarray]) -> tuple[int, int]:
    """Events and busy ns of a viewport: its single events that start in the window (one that
    began earlier is another view's) and its summary blocks' counts."""
    window_start = int(header["start_ns"]) - int(header["origin_ns"])
    count = busy = 0
    for track in header["tracks"]:
        for row in track["rows"]:
            lo, n = row["events"]
            own = arrays["ev_start"][lo : lo + n] >= window_start
            count += int(own.sum())
            busy += int(arrays["ev_dur"][lo : lo + n][own].sum())
            lo, n = row["blocks"]
            count += int(arrays["bl_count"][lo : lo + n].sum())
            busy += int(arrays["bl_busy"][lo : lo + n].sum())
    return count, busy
