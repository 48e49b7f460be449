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

from tracefmt.kinds import LAUNCH_KINDS, EventKind, of_kinds

# Events drawn on a GPU's host lane; everything else a thread records goes to its thread lane.
HOST_LANE_KINDS = (int(EventKind.USER_ANNOTATION), int(EventKind.STEP), *LAUNCH_KINDS)
RUN_KINDS = (EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET)

STREAM, HOST, THREAD, OTHER = "stream", "host", "thread", "other"


@dataclass(frozen=True)
class Lanes:
    """``table``: one row per lane (lane, kind, device, stream, pid, tid, label);
    ``event_lane``: the lane of every input event."""

    table: pd.DataFrame
    event_lane: np.ndarray


def launch_devices(
    track: np.ndarray, kind: np.ndarray, launch: np.ndarray, device: np.ndarray
) -> dict[int, int]:
    """Store track → the GPU most of its launches run on (the device of each launch's first
    GPU op: the event model's ``launch``; all arrays in store order)."""
    launches = np.flatnonzero(of_kinds(kind, LAUNCH_KINDS) & (launch >= 0))
    run = launch[launches]
    found = of_kinds(kind[run], RUN_KINDS) & (device[run] >= 0)
    if not found.any():
        return {}
    pairs = pd.DataFrame(
        {"track": track[launches[found]], "device": device[run[found]].astype(np.int64)}
    )
    counts = pairs.groupby(["track", "device"]).size().reset_index(name="n")
    best = counts.sort_values(["track", "n", "device"], ascending=[True, False, True])
    return {int(t): int(d) for t, d in best.drop_duplicates("track")[["track", "device"]].values}


def assign_lanes(
    tracks: pd.DataFrame, track: np.ndarray, kind: np.ndarray, devices: dict[int, int]
) -> Lanes:
    """Lanes for the events of one part (``tracks`` is the store's tracks table), in track
    order; a thread that drives a GPU has its host lane before its thread lane."""
    info = tracks.sort_values("track")
    info = info[np.isin(info["track"].to_numpy(), np.unique(track))]
    t = info["track"].to_numpy().astype(np.int64)
    pid, tid = info["pid"].to_numpy().astype(np.int64), info["tid"].to_numpy().astype(np.int64)
    on_device = info["on_device"].to_numpy().astype(bool)
    other = ~on_device & (pid < 0) & (tid < 0)
    device = np.asarray([devices.get(x, -1) for x in t.tolist()], dtype=np.int64)
    drives = ~on_device & ~other & (device >= 0)
    device = np.where(drives, device, -1)
    # Per event: its track's position in ``info`` (-1: a track the table lacks), and whether
    # it goes to the second lane of its track (the thread lane of a thread that drives a GPU).
    at = np.minimum(np.searchsorted(t, track), len(t) - 1)
    at = np.where(t[at] == track, at, -1) if len(t) else np.full(len(track), -1)
    second = (at >= 0) & drives[at] & ~of_kinds(kind, HOST_LANE_KINDS)
    has_second = np.zeros(len(t), dtype=bool)
    has_second[at[second]] = True
    # Lane numbers: one per track, two for a driving thread with events off its host lane.
    widths = 1 + has_second.astype(np.int64)
    first_lane = np.cumsum(widths) - widths  # as many as tracks, none for a part without any
    event_lane = np.where(at >= 0, first_lane[np.maximum(at, 0)] + second, -1).astype(np.int32)
    kinds = np.where(on_device, STREAM, np.where(other, OTHER, np.where(drives, HOST, THREAD)))
    first = pd.DataFrame(
        {
            "lane": first_lane,
            "kind": kinds,
            "device": np.where(on_device, pid, device),
            "stream": np.where(on_device, tid, -1),
            "pid": np.where(on_device | other, -1, pid),
            "tid": np.where(on_device | other, -1, tid),
            "label": info["label"].astype(str).to_numpy(),
        }
    )
    threads = first[has_second].assign(lane=first_lane[has_second] + 1, kind=THREAD)
    table = pd.concat([first, threads]).sort_values("lane", kind="stable")
    return Lanes(table.reset_index(drop=True), event_lane)
