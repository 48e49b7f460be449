"""The viewport's wire format: a JSON header and little-endian column arrays.

    b"TLV1" | u32 header length | header (UTF-8 JSON) | padding | arrays, each 8-byte aligned

The browser wraps every array in a typed array without copying. Times are float64 nanoseconds
relative to ``origin_ns`` (exact for 104 days); absolute nanoseconds are written as strings,
since JSON numbers lose precision past 2**53. Names are sent once per payload and referred to
by position.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from profiler_app.timeline.pure.query import Aggregate, Counter, JobTimeline, LaneRows, Viewport

MAGIC = b"TLV1"
_ALIGN = 8


class _Columns:
    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {}
        self.dtypes: dict[str, str] = {}
        self._sizes: dict[str, int] = {}  # kept, not summed: a job has hundreds of rows

    def add(self, name: str, values, dtype: str) -> None:
        array = np.asarray(values).astype(dtype, copy=False)
        self.parts.setdefault(name, []).append(array)
        self.dtypes[name] = dtype
        self._sizes[name] = self._sizes.get(name, 0) + len(array)

    def size(self, name: str) -> int:
        return self._sizes.get(name, 0)


class _Names:
    """Payload-local ids for (part, string id) pairs."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._ids: dict[tuple[int, int], int] = {}

    def ids(self, job: JobTimeline, part_id: int, name_ids: np.ndarray) -> np.ndarray:
        uniq, inverse = np.unique(np.asarray(name_ids), return_inverse=True)
        strings = job.parts[part_id].index.strings
        local = np.empty(len(uniq), dtype=np.uint32)
        for i, name_id in enumerate(uniq.tolist()):
            key = (part_id, name_id)
            if key not in self._ids:
                self._ids[key] = len(self.texts)
                self.texts.append(strings[name_id] if 0 <= name_id < len(strings) else "")
            local[i] = self._ids[key]
        return local[inverse.reshape(-1)]


def encode(job: JobTimeline, view: Viewport) -> bytes:
    cols, names = _Columns(), _Names()
    origin = job.origin_ns
    tracks: list[dict[str, Any]] = []
    for track in view.tracks:
        if isinstance(track, LaneRows):
            rows = _add_rows(job, track, cols, names)
            tracks.append({"id": track.node.id, "type": "events", "rows": rows})
        elif isinstance(track, Counter):
            tracks.append({"id": track.node.id, "type": "counter", "offset": cols.size("ct_mean")})
            cols.add("ct_mean", track.mean, "<f4")
            cols.add("ct_low", track.low, "<f4")
            cols.add("ct_high", track.high, "<f4")
        elif isinstance(track, Aggregate):
            tracks.append(
                {
                    "id": track.node.id,
                    "type": "aggregate",
                    "lanes": track.lanes,
                    "offset": cols.size("ag_count"),
                }
            )
            cols.add("ag_count", track.count, "<u4")
            cols.add("ag_busy", track.busy_ns, "<f4")
    flow_lanes = _add_flows(job, view, cols, names)
    window = view.window
    header = {
        "origin_ns": str(origin),
        "start_ns": str(window.start_ns),
        "end_ns": str(window.end_ns),
        "k": window.k,
        "n_buckets": window.n_buckets,
        "strip": {
            "start_ns": str(view.strip.start_ns),
            "k": view.strip.k,
            "n_buckets": view.strip.n_buckets,
        },
        "names": names.texts,
        "tracks": tracks,
        "flows": {"count": len(view.flows.part), "total": view.flows.total, "lanes": flow_lanes},
    }
    return _pack(header, cols)


def _add_rows(job: JobTimeline, track: LaneRows, cols: _Columns, names: _Names) -> list[dict]:
    """The lane's rows: each one's events and summary blocks into the columns, and where in
    them the browser finds its own."""
    origin = job.origin_ns
    rows = []
    for part, row in track.rows:
        ix = part.index
        ev = row.events
        rows.append(
            {
                "depth": row.depth,
                "part": part.id,
                "events": [cols.size("ev_idx"), len(ev)],
                "blocks": [cols.size("bl_start"), len(row.block_count)],
            }
        )
        cols.add("ev_idx", ev, "<u4")
        cols.add("ev_start", ix.start[ev] - origin, "<f8")
        cols.add("ev_dur", ix.dur[ev], "<f8")
        cols.add("ev_name", names.ids(job, part.id, ix.name[ev]), "<u4")
        cols.add("ev_kind", ix.kind[ev], "u1")
        cols.add("bl_start", row.block_start_ns - origin, "<f8")
        cols.add("bl_end", row.block_end_ns - origin, "<f8")
        cols.add("bl_count", row.block_count, "<u4")
        cols.add("bl_busy", row.block_busy_ns, "<f8")
        cols.add("bl_name", names.ids(job, part.id, row.block_name), "<u4")
    return rows


def _add_flows(job: JobTimeline, view: Viewport, cols: _Columns, names: _Names) -> list[str]:
    """Both ends of each pair, with the lane and row where the browser finds them."""
    lanes: dict[str, int] = {}
    flows = view.flows
    order = np.argsort(flows.part, kind="stable")
    part_ids, first = np.unique(flows.part[order], return_index=True)
    stops = np.r_[first[1:], len(order)].astype(np.int64) if len(first) else first
    for part_id, lo, hi in zip(part_ids.tolist(), first, stops, strict=True):
        part = job.parts[part_id]
        pick = order[lo:hi]
        cols.add("fl_part", np.full(len(pick), part_id), "<u4")
        for end, idx in (("launch", flows.launch[pick]), ("run", flows.run[pick])):
            lane_ids, depth = job.locate(part, idx)
            cols.add(f"fl_{end}", idx, "<u4")
            cols.add(f"fl_{end}_start", part.index.start[idx] - job.origin_ns, "<f8")
            cols.add(f"fl_{end}_dur", part.index.dur[idx], "<f8")
            cols.add(f"fl_{end}_name", names.ids(job, part_id, part.index.name[idx]), "<u4")
            cols.add(f"fl_{end}_lane", [lanes.setdefault(i, len(lanes)) for i in lane_ids], "<i4")
            cols.add(f"fl_{end}_depth", depth, "u1")
    return list(lanes)


def _pack(header: dict, cols: _Columns) -> bytes:
    blobs, offset = [], 0
    arrays = {}
    for name, parts in cols.parts.items():
        data = np.concatenate(parts).astype(cols.dtypes[name], copy=False).tobytes()
        arrays[name] = [
            offset,
            len(data) // np.dtype(cols.dtypes[name]).itemsize,
            cols.dtypes[name],
        ]
        pad = -len(data) % _ALIGN
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    header["arrays"] = arrays
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(len(MAGIC) + 4 + len(text)) % _ALIGN)
    return MAGIC + struct.pack("<I", len(text)) + text + b"".join(blobs)


def decode(payload: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, arrays by name): what the browser reads, for tests and the benchmark."""
    if payload[:4] != MAGIC:
        raise ValueError("not a timeline viewport payload")
    (length,) = struct.unpack_from("<I", payload, 4)
    header = json.loads(payload[8 : 8 + length])
    base = 8 + length
    arrays = {
        name: np.frombuffer(payload, dtype=dtype, count=n, offset=base + offset)
        for name, (offset, n, dtype) in header["arrays"].items()
    }
    return header, arrays
