"""What a viewport answer draws, added up."""

import numpy as np

from profiler_app.timeline.pure.payload import decode


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


def viewport_totals(http, url: str, job_id: int) -> tuple[int, int]:
    """Events and busy time of a whole-job view of every lane, as the timeline page draws
    them, read over HTTP from the server at ``url``."""
    tree = http.get(f"{url}/api/jobs/{job_id}/timeline/tracks/").json()
    lanes = []

    def walk(node):
        if node["data"] == "events":
            lanes.append(node["id"])
        for child in node.get("children", []):
            walk(child)

    for root in tree["tracks"]:
        walk(root)
    params = {
        "start_ns": tree["start_ns"],
        "end_ns": str(int(tree["end_ns"]) + 1),
        "width_px": 2000,
        "tracks": ",".join(lanes),
    }
    response = http.get(f"{url}/api/jobs/{job_id}/timeline/viewport/", params=params)
    assert response.status_code == 200, response.text
    return drawn_totals(*decode(response.content))
