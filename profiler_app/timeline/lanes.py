"""Which timeline lane each stored event is drawn in.

The store keeps one track per CPU thread and per GPU stream. The timeline shows, per process,
``GPU-<i> device`` (one lane per stream), ``GPU-<i> host`` (the kernel launches and the user's
annotations of the threads that drive GPU ``i``) and ``CPU threads`` (operators and Python
functions). A thread that launches GPU work is therefore split in two lanes; a thread that
launches nothing keeps all its events in one. Kineto's named tracks ("Spans") go to ``other``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tracefmt.kinds import EventKind

# Events drawn on a GPU's host lane; everything else a thread records goes to its thread lane.
HOST_KINDS = (
    EventKind.USER_ANNOTATION,
    EventKind.STEP,
    EventKind.CUDA_RUNTIME,
    EventKind.CUDA_DRIVER,
)
LAUNCH_KINDS = (EventKind.CUDA_RUNTIME, EventKind.CUDA_DRIVER)
RUN_KINDS = (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)

STREAM, HOST, THREAD, OTHER = "stream", "host", "thread", "other"


@dataclass(frozen=True)
class Lanes:
    """``table``: one row per lane (lane, kind, device, stream, pid, tid, label);
    ``event_lane``: the lane of every input event."""

    table: pd.DataFrame
    event_lane: np.ndarray


def _kind_mask(kind: np.ndarray, kinds: tuple[EventKind, ...]) -> np.ndarray:
    return np.isin(kind, np.asarray([int(k) for k in kinds], dtype=kind.dtype))


def launch_devices(
    track: np.ndarray, kind: np.ndarray, correlation: np.ndarray, device: np.ndarray
) -> dict[int, int]:
    """Store track → the GPU most of its launches run on (by correlation id)."""
    runs = _kind_mask(kind, RUN_KINDS) & (correlation >= 0) & (device >= 0)
    launches = np.flatnonzero(_kind_mask(kind, LAUNCH_KINDS) & (correlation >= 0))
    if not runs.any() or not len(launches):
        return {}
    run_corr = correlation[runs]
    order = np.argsort(run_corr, kind="stable")
    run_corr, run_device = run_corr[order], device[runs][order]
    at = np.searchsorted(run_corr, correlation[launches])
    found = at < len(run_corr)
    found[found] = run_corr[at[found]] == correlation[launches][found]
    pairs = pd.DataFrame(
        {"track": track[launches][found], "device": run_device[at[found]].astype(np.int64)}
    )
    counts = pairs.groupby(["track", "device"]).size().reset_index(name="n")
    best = counts.sort_values(["track", "n", "device"], ascending=[True, False, True])
    return {int(t): int(d) for t, d in best.drop_duplicates("track")[["track", "device"]].values}


def assign_lanes(
    tracks: pd.DataFrame, track: np.ndarray, kind: np.ndarray, devices: dict[int, int]
) -> Lanes:
    """Lanes for the events of one part (``tracks`` is the store's tracks table)."""
    rows: list[dict] = []
    lane_of: dict[tuple[int, str], int] = {}

    def lane(store_track: int, lane_kind: str, **fields) -> int:
        key = (store_track, lane_kind)
        if key not in lane_of:
            lane_of[key] = len(rows)
            rows.append({"lane": len(rows), "kind": lane_kind, **fields})
        return lane_of[key]

    host = _kind_mask(kind, HOST_KINDS)
    event_lane = np.full(len(track), -1, dtype=np.int32)
    present = set(np.unique(track).tolist())
    for info in tracks.sort_values("track").itertuples():
        t = int(info.track)
        if t not in present:
            continue
        mine = track == t
        pid, tid, label = int(info.pid), int(info.tid), str(info.label)
        if info.on_device:
            event_lane[mine] = lane(t, STREAM, device=pid, stream=tid, pid=-1, tid=-1, label=label)
        elif pid < 0 and tid < 0:
            event_lane[mine] = lane(t, OTHER, device=-1, stream=-1, pid=-1, tid=-1, label=label)
        elif t in devices:
            fields = {"device": devices[t], "stream": -1, "pid": pid, "tid": tid, "label": label}
            on_host = mine & host
            event_lane[on_host] = lane(t, HOST, **fields)
            rest = mine & ~host
            if rest.any():
                event_lane[rest] = lane(t, THREAD, **fields)
        else:
            event_lane[mine] = lane(t, THREAD, device=-1, stream=-1, pid=pid, tid=tid, label=label)
    columns = ["lane", "kind", "device", "stream", "pid", "tid", "label"]
    return Lanes(pd.DataFrame(rows, columns=columns), event_lane)
