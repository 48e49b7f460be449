"""The normalised event model every input format is turned into, as column schemas.

Times are integer nanoseconds on the unix epoch; names and tracks are interned into small
integers (``tracefmt.strings``). Kinds are ``tracefmt.kinds``.
"""

from __future__ import annotations

import numpy as np

# Column -> (dtype, value meaning "absent"). Every batch carries all of them, in this order.
EVENT_COLUMNS: dict[str, tuple[type, int | float]] = {
    "kind": (np.uint8, 0),
    "track": (np.int32, 0),
    "name": (np.int32, 0),
    "start_ns": (np.int64, 0),
    "dur_ns": (np.int64, 0),
    "correlation": (np.int64, -1),
    "external_id": (np.int64, -1),
    "device": (np.int16, -1),
    "stream": (np.int32, -1),
    "bytes": (np.int64, -1),
    "memcpy_kind": (np.uint8, 0),
    "bandwidth_gbps": (np.float64, float("nan")),
    "grid_x": (np.int32, 0),
    "grid_y": (np.int32, 0),
    "grid_z": (np.int32, 0),
    "block_x": (np.int32, 0),
    "block_y": (np.int32, 0),
    "block_z": (np.int32, 0),
    "registers": (np.int32, -1),
    "shared_mem": (np.int32, -1),
    "occupancy_pct": (np.float32, float("nan")),
    "input_types": (np.int32, -1),
    "input_dims": (np.int32, -1),
    "collective": (np.int32, -1),
    "dtype": (np.int32, -1),
    "in_nelems": (np.int64, -1),
    "out_nelems": (np.int64, -1),
    "group_size": (np.int32, -1),
    "process_group": (np.int32, -1),
}

SAMPLE_COLUMNS: dict[str, type] = {
    "kind": np.uint8,
    "device": np.int16,
    "name": np.int32,
    "time_ns": np.int64,
    "value": np.float64,
}

FLOW_COLUMNS: dict[str, type] = {
    "flow_id": np.int64,
    "phase": np.uint8,  # 0 start, 1 step, 2 end
    "time_ns": np.int64,
    "track": np.int32,
    "category": np.int32,
}


def empty_columns(n: int) -> dict[str, np.ndarray]:
    """``n`` events with every column at its "absent" value."""
    return {col: np.full(n, absent, dtype=dtype) for col, (dtype, absent) in EVENT_COLUMNS.items()}
