"""The allocator's view of one part, from Kineto's ``[memory]`` events (``profile_memory=True``).

Each event is one allocation (positive bytes) or free (negative) on a device, with the
allocator's totals after it. From them, per device: the allocated/reserved curve down-sampled to
at most ``CURVE_POINTS`` points (each time bucket keeps its highest point, so the peak is always
drawn), the peak, the operators running at the peak and the allocations still held then, and
the operators that allocate most.

Older traces (PyTorch 1.9) carry no totals, only each event's bytes: a device whose events
have none gets allocated rebuilt as the running sum of its bytes from its first event (memory
held before profiling began is not counted), and reserved stays ``NOT_RECORDED``.

An allocation belongs to the innermost CPU operator enclosing it on the same thread
(``start <= time <= end``), as in the PyTorch profiler's memory view. The events themselves are
written to the store's ``memory.parquet``, in time order, with that operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.traces.arrays import run_starts
from profiler_app.traces.nesting import nearest
from profiler_app.traces.store_layout import MEMORY_FILE
from profiler_app.traces.timeline_read import TimelineReader
from tracefmt.kinds import EventKind
from tracefmt.strings import StringTable

CURVE_POINTS = 2000
TOP_OPERATORS = 50
# The name allocations made outside every CPU operator are listed under.
NO_OPERATOR = "(outside any operator)"
# A total the trace does not carry (Kineto's default, kept in the store and the database rows).
NOT_RECORDED = -1
MEMORY_SCHEMA = pa.schema(
    [
        ("time_ns", pa.int64()),
        ("track", pa.int32()),
        ("device_type", pa.int16()),
        ("device_id", pa.int16()),
        ("addr", pa.int64()),
        ("bytes", pa.int64()),
        ("total_allocated", pa.int64()),  # recorded, or the running sum of bytes
        ("total_reserved", pa.int64()),  # NOT_RECORDED in traces without totals
        ("operator", pa.int32()),  # the store's string id of the enclosing operator; -1: none
    ]
)
CURVE_COLUMNS = ["device_type", "device_id", "time_ns", "allocated", "reserved"]
PEAK_COLUMNS = [
    "device_type",
    "device_id",
    "time_ns",
    "allocated",
    "reserved",
    "events",
    "running",
]
OPERATOR_COLUMNS = [
    "device_type",
    "device_id",
    "name",
    "allocations",
    "allocated_bytes",
    "held_count",
    "held_bytes",
]


@dataclass(frozen=True)
class MemorySummary:
    curve: pd.DataFrame  # CURVE_COLUMNS
    peaks: pd.DataFrame  # PEAK_COLUMNS; running: operator names, outermost first
    operators: pd.DataFrame  # OPERATOR_COLUMNS

    @classmethod
    def empty(cls) -> MemorySummary:
        return cls(
            pd.DataFrame(columns=CURVE_COLUMNS),
            pd.DataFrame(columns=PEAK_COLUMNS),
            pd.DataFrame(columns=OPERATOR_COLUMNS),
        )


def device_label(device_type: int, device_id: int) -> str:
    """c10's DeviceType numbers: 0 CPU, 1 CUDA (ROCm reports as CUDA)."""
    if device_type == 0:
        return "CPU"
    if device_type == 1:
        return f"GPU {device_id}"
    return f"device type {device_type} #{device_id}"


def build_memory(
    store_dir: Path, batches: list[dict[str, np.ndarray]], offset_ns: int, strings: StringTable
) -> MemorySummary:
    """Writes ``memory.parquet`` into the finished store and returns the part's summary."""
    if not batches:
        pq.write_table(MEMORY_SCHEMA.empty_table(), store_dir / MEMORY_FILE)
        return MemorySummary.empty()
    cols = {c: np.concatenate([b[c] for b in batches]) for c in batches[0]}
    cols["time_ns"] = cols["time_ns"] + offset_ns
    order = np.argsort(cols["time_ns"], kind="stable")  # ties keep the file's order
    cols = {c: a[order] for c, a in cols.items()}
    device_key = cols["device_type"] * 65536 + cols["device_id"]
    cols["total_allocated"] = rebuilt_allocated(device_key, cols["bytes"], cols["total_allocated"])
    ops = _cpu_operators(store_dir, np.unique(cols["track"]))
    cols["operator"] = innermost_operator(ops, cols["track"], cols["time_ns"])
    # -1 (outside every operator) reads the appended -1: a thread may have no operators at all.
    operator_name = np.r_[ops["name"], -1][cols["operator"]].astype(np.int32)
    table = pa.Table.from_arrays(
        [
            pa.array(cols[f.name] if f.name != "operator" else operator_name, f.type)
            for f in MEMORY_SCHEMA
        ],
        schema=MEMORY_SCHEMA,
    )
    pq.write_table(table, store_dir / MEMORY_FILE, compression="lz4")
    names = np.asarray([*strings.strings, NO_OPERATOR], dtype=object)
    op_names = names[np.where(operator_name >= 0, operator_name, len(names) - 1)]
    curves, peaks, operators = [], [], []
    for key in np.unique(device_key).tolist():
        rows = np.flatnonzero(device_key == key)
        dev = {c: a[rows] for c, a in cols.items()}
        ident = {"device_type": int(dev["device_type"][0]), "device_id": int(dev["device_id"][0])}
        curves.append(
            downsample(dev["time_ns"], dev["total_allocated"], dev["total_reserved"]).assign(
                **ident
            )
        )
        peak = int(np.argmax(dev["total_allocated"]))
        running = operator_stack(ops, int(dev["operator"][peak]))
        peaks.append(
            {
                **ident,
                "time_ns": int(dev["time_ns"][peak]),
                "allocated": int(dev["total_allocated"][peak]),
                "reserved": int(dev["total_reserved"][peak]),
                "events": len(rows),
                "running": [str(names[n]) for n in running],
            }
        )
        operators.append(_operators(dev, op_names[rows], peak).assign(**ident))
    return MemorySummary(
        pd.concat(curves, ignore_index=True)[CURVE_COLUMNS],
        pd.DataFrame(peaks, columns=PEAK_COLUMNS),
        pd.concat(operators, ignore_index=True)[OPERATOR_COLUMNS],
    )


def rebuilt_allocated(
    device_key: np.ndarray, nbytes: np.ndarray, total_allocated: np.ndarray
) -> np.ndarray:
    """The allocator's totals; for a device whose events (in time order) carry none, the
    running sum of their bytes."""
    out = total_allocated.copy()
    for key in np.unique(device_key).tolist():
        rows = np.flatnonzero(device_key == key)
        if (total_allocated[rows] == NOT_RECORDED).all():
            out[rows] = np.cumsum(nbytes[rows])
    return out


def _cpu_operators(store_dir: Path, tracks: np.ndarray) -> dict[str, np.ndarray]:
    """CPU operators of ``tracks`` sorted by (track, start, longest first), each with its
    closest enclosing operator (``parent``, a row here) by the store's event model."""
    columns = ["kind", "track", "start_ns", "dur_ns", "name", "parent", "depth"]
    reader = TimelineReader(store_dir)
    info = reader.tracks.set_index("track")
    parts = []
    for track in sorted(set(tracks.tolist()) & set(info.index.tolist())):
        first, n = int(info.at[track, "first_row"]), int(info.at[track, "n_rows"])
        table = reader.rows(first, first + n, columns)
        c = {name: table.column(name).to_numpy() for name in columns}
        is_op = c["kind"] == EventKind.CPU_OP
        # The parent column holds store rows; here they are rows of this track's slice.
        parent = np.where(c["parent"] >= 0, c["parent"] - first, -1)
        owner = nearest(is_op, parent, c["depth"])
        up = np.where(parent >= 0, owner[np.maximum(parent, 0)], -1)
        rows = np.flatnonzero(is_op)
        parts.append(
            {
                **{name: c[name][rows] for name in columns[1:5]},
                "row": rows + first,
                "op_parent": np.where(up[rows] >= 0, up[rows] + first, -1),
            }
        )
    if not parts:
        empty = np.empty(0, np.int64)
        return {
            "track": empty,
            "start_ns": empty,
            "dur_ns": empty,
            "name": empty,
            "end_ns": empty,
            "parent": empty,
        }
    ops = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    ops["end_ns"] = ops["start_ns"] + ops["dur_ns"]
    order = np.lexsort((-ops["end_ns"], ops["start_ns"], ops["track"]))
    ops = {name: a[order] for name, a in ops.items()}
    at = np.searchsorted(np.sort(ops["row"]), ops["op_parent"])
    position = np.argsort(ops["row"])  # store row order -> position in ``ops``
    ops["parent"] = np.where(ops["op_parent"] >= 0, position[np.minimum(at, len(at) - 1)], -1)
    return ops


def innermost_operator(
    ops: dict[str, np.ndarray], track: np.ndarray, time_ns: np.ndarray
) -> np.ndarray:
    """Row in ``ops`` of the innermost operator on ``track`` with start <= time <= end; -1."""
    if not len(ops["track"]):
        return np.full(len(track), -1, dtype=np.int64)
    # The last operator starting at or before the time on the same track, then up its parents
    # until one is still open (nested operators: each step goes one level up).
    key_ops = np.stack([ops["track"].astype(np.int64), ops["start_ns"]], axis=1)
    lo = np.searchsorted(ops["track"], track, side="left")
    hi = np.searchsorted(ops["track"], track, side="right")
    found = np.full(len(track), -1, dtype=np.int64)
    for t in np.unique(track).tolist():
        rows = np.flatnonzero(track == t)
        a, b = int(lo[rows[0]]), int(hi[rows[0]])
        found[rows] = a + np.searchsorted(key_ops[a:b, 1], time_ns[rows], side="right") - 1
        found[rows[found[rows] < a]] = -1
    open_ = np.zeros(len(track), dtype=bool)
    while True:
        have = found >= 0
        open_[have] = ops["end_ns"][found[have]] >= time_ns[have]
        todo = have & ~open_
        if not todo.any():
            return found
        found[todo] = ops["parent"][found[todo]]


def operator_stack(ops: dict[str, np.ndarray], row: int) -> list[int]:
    """String ids of the operator at ``row`` and its parents, outermost first."""
    out = []
    while row >= 0:
        out.append(int(ops["name"][row]))
        row = int(ops["parent"][row])
    return out[::-1]


def downsample(
    time_ns: np.ndarray, allocated: np.ndarray, reserved: np.ndarray, points: int = CURVE_POINTS
) -> pd.DataFrame:
    """At most ``points`` points: in each of ``points`` equal time buckets, the event with the
    most allocated (the first of equals), with the bucket's highest reserved."""
    if len(time_ns) > points:
        span = int(time_ns[-1] - time_ns[0]) + 1
        bucket = ((time_ns - time_ns[0]).astype(np.float64) * points / span).astype(np.int64)
        order = np.lexsort((np.arange(len(bucket)), -allocated, bucket))
        firsts = order[run_starts(bucket[order])]
        starts = run_starts(bucket)
        time_ns, allocated = time_ns[firsts], allocated[firsts]
        reserved = np.maximum.reduceat(reserved, starts)
    return pd.DataFrame({"time_ns": time_ns, "allocated": allocated, "reserved": reserved})


def _operators(dev: dict[str, np.ndarray], names: np.ndarray, peak: int) -> pd.DataFrame:
    """Per operator: allocations and their bytes, and what it still held at the peak."""
    n = len(names)
    index = np.arange(n)
    # An allocation is freed by the next event at its address, when that is a free.
    by_addr = np.lexsort((index, dev["addr"]))
    nxt = np.full(n, n, dtype=np.int64)
    same = dev["addr"][by_addr][1:] == dev["addr"][by_addr][:-1]
    freed = same & (dev["bytes"][by_addr][1:] < 0)
    nxt[by_addr[:-1][freed]] = by_addr[1:][freed]
    alloc = dev["bytes"] > 0
    held = alloc & (index <= peak) & (nxt > peak)
    frame = pd.DataFrame(
        {
            "name": names[alloc],
            "allocations": 1,
            "allocated_bytes": dev["bytes"][alloc],
            "held_count": held[alloc].astype(np.int64),
            "held_bytes": np.where(held, dev["bytes"], 0)[alloc],
        }
    )
    sums = frame.groupby("name", sort=False).sum().reset_index()
    top = sums.nlargest(TOP_OPERATORS, "allocated_bytes").index.union(
        sums[sums["held_bytes"] > 0].nlargest(TOP_OPERATORS, "held_bytes").index
    )
    return sums.loc[top].sort_values("allocated_bytes", ascending=False, kind="stable")


@dataclass(frozen=True)
class EventFilter:
    min_bytes: int = 0  # by size: |bytes| at least this (frees count by what they free)
    start_ns: int | None = None
    end_ns: int | None = None
    device: tuple[int, int] | None = None  # (device_type, device_id)


def read_memory_events(
    store_dir: Path, where: EventFilter, offset: int, limit: int
) -> tuple[int, pd.DataFrame]:
    """How many of a store's memory events match, and rows [offset, offset + limit) of them
    in time order, with the operator's name and the thread's label. A store written before
    memory events were kept has none."""
    path = store_dir / MEMORY_FILE
    if not path.exists():
        return 0, pd.DataFrame(columns=[*MEMORY_SCHEMA.names, "thread"])
    table = pq.read_table(path, filters=_filters(where) or None)
    count = table.num_rows
    frame = table.slice(offset, limit).to_pandas()
    reader = TimelineReader(store_dir)
    names = np.asarray([*reader.strings, NO_OPERATOR], dtype=object)
    ids = frame["operator"].to_numpy()
    frame["operator"] = names[np.where(ids >= 0, ids, len(names) - 1)]
    labels = dict(zip(reader.tracks["track"], reader.tracks["label"], strict=True))
    frame["thread"] = [labels.get(t, "") for t in frame["track"].tolist()]
    return count, frame


def _filters(where: EventFilter) -> list:
    """Parquet filters: a list of conditions (all must hold), or a list of such lists."""
    out: list[tuple] = []
    if where.min_bytes > 0:
        # |bytes| >= min: two ranges, as Parquet filters in disjunctive normal form.
        return [
            [*conj, size]
            for conj in [_filters(EventFilter(0, where.start_ns, where.end_ns, where.device))]
            for size in (("bytes", ">=", where.min_bytes), ("bytes", "<=", -where.min_bytes))
        ]
    if where.start_ns is not None:
        out.append(("time_ns", ">=", where.start_ns))
    if where.end_ns is not None:
        out.append(("time_ns", "<=", where.end_ns))
    if where.device is not None:
        out += [("device_type", "=", where.device[0]), ("device_id", "=", where.device[1])]
    return out


def parse_device(label: str) -> tuple[int, int] | None:
    """(device_type, device_id) of a ``device_label``; None if it is not one."""
    if label == "CPU":
        return 0, -1
    parts = label.split(" ")
    if len(parts) == 2 and parts[0] == "GPU" and parts[1].isdigit():
        return 1, int(parts[1])
    return None
