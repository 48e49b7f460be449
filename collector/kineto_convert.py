"""Kineto Chrome-trace JSON (what ``torch.profiler`` exports) -> chunk-format event columns.

Pure (stdlib + numpy). The collector converts its own Kineto windows with it, so the same code
that is tested against real A100/MI250 traces is the code that runs on a training node.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from tracefmt.categories import kind_of_event
from tracefmt.chunk import empty_events
from tracefmt.kinds import CHUNK_MAX_KIND, DEVICE_KINDS, EventKind
from tracefmt.names import memcpy_kind
from tracefmt.strings import StringTable


def load_trace(path: str | Path) -> dict[str, Any]:
    """Parse a ``.json`` or ``.json.gz`` Chrome trace.

    Float literals stay as their decimal text: ``ts`` is in microseconds and an absolute one
    (1.7e15) has more digits than a float holds, so nanoseconds are computed from the text.
    """
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = json.load(fh, parse_float=str)
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path.name}: not a PyTorch profiler trace (no 'traceEvents' list)")
    return data


def host_pid(trace: dict[str, Any]) -> int | None:
    """The training process's pid: the most common integer pid among host-side events."""
    pids = Counter(
        e["pid"]
        for e in trace["traceEvents"]
        if e.get("ph") == "X"
        and isinstance(e.get("pid"), int)
        and _chunk_kind(e) not in (None, *DEVICE_KINDS)
    )
    return pids.most_common(1)[0][0] if pids else None


def convert_events(
    trace: dict[str, Any], strings: StringTable, pid: int | None = None
) -> dict[str, np.ndarray]:
    """Columns for every complete ("X") event of a known category.

    Times become absolute unix-epoch nanoseconds (``baseTimeNanoseconds`` + ``ts`` in µs).
    Device rows take ``pid`` (default: the trace's host pid) so a GPU run belongs to the
    process that launched it; ``ev_tid`` is -1 for them and the stream is in ``ev_stream``.
    """
    base_ns = int(trace.get("baseTimeNanoseconds") or 0)
    proc_pid = pid if pid is not None else (host_pid(trace) or 0)
    rows = [(e, k) for e in trace["traceEvents"] if (k := _chunk_kind(e)) is not None]
    n = len(rows)
    cols = empty_events(n)
    if not n:
        return cols
    runtime_sizes = _runtime_copy_sizes(rows)
    kind = cols["ev_kind"]
    start = cols["ev_start_ns"]
    dur = cols["ev_dur_ns"]
    pids = cols["ev_pid"]
    tids = cols["ev_tid"]
    device = cols["ev_device"]
    stream = cols["ev_stream"]
    corr = cols["ev_correlation"]
    nbytes = cols["ev_bytes"]
    mkind = cols["ev_memcpy_kind"]
    grid = cols["ev_grid"]
    block = cols["ev_block"]
    regs = cols["ev_registers"]
    smem = cols["ev_shared_mem"]
    names: list[str] = []
    for i, (e, k) in enumerate(rows):
        args = e.get("args") or {}
        name = str(e.get("name", ""))
        names.append(name)
        kind[i] = k
        start[i] = base_ns + us_to_ns(e["ts"])
        dur[i] = max(0, us_to_ns(e.get("dur", 0)))
        correlation = _int(args.get("correlation"))
        if correlation is not None:
            corr[i] = correlation
        if k in DEVICE_KINDS:
            pids[i] = proc_pid
            tids[i] = -1
            dev = _int(args.get("device"))
            device[i] = dev if dev is not None else (_int(e.get("pid")) or 0)
            st = _int(args.get("stream"))
            stream[i] = st if st is not None else (_int(e.get("tid")) or 0)
        else:
            pids[i] = _int(e.get("pid")) or proc_pid
            tids[i] = _int(e.get("tid")) or 0
        if k == EventKind.GPU_MEMCPY or k == EventKind.GPU_MEMSET:
            size = _int(args.get("bytes"))
            if size is None and correlation is not None:
                size = runtime_sizes.get(correlation)
            nbytes[i] = -1 if size is None else size
            if k == EventKind.GPU_MEMCPY:
                mkind[i] = memcpy_kind(str(args.get("kind", ""))) or memcpy_kind(name)
        elif k == EventKind.KERNEL:
            grid[i] = _triple(args.get("grid"))
            block[i] = _triple(args.get("block"))
            regs[i] = _int(args.get("registers per thread"), -1)
            smem[i] = _int(args.get("shared memory"), -1)
    cols["ev_name"] = strings.intern_many(names, dtype=np.uint32)
    return cols


def _chunk_kind(event: dict[str, Any]) -> EventKind | None:
    """The kind of a complete event that a chunk can hold; None for any other event."""
    if event.get("ph") != "X":
        return None
    kind = kind_of_event(str(event.get("cat", "")), str(event.get("name", "")))
    return kind if kind <= CHUNK_MAX_KIND else None


def device_properties(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """``deviceProperties`` in the chunk meta's ``devices`` shape."""
    devices = []
    for dev in trace.get("deviceProperties") or []:
        if isinstance(dev, dict) and "id" in dev:
            devices.append(
                {
                    "index": int(dev["id"]),
                    "name": str(dev.get("name", "")),
                    "total_memory_bytes": int(dev.get("totalGlobalMem", 0)),
                }
            )
    return devices


def us_to_ns(value: Any) -> int:
    """Microseconds (int, float, or decimal text from ``load_trace``) to integer nanoseconds."""
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        whole = math.floor(value)
        return whole * 1000 + round((value - whole) * 1000)
    text = str(value).strip()
    if "e" in text or "E" in text:
        return round(Decimal(text) * 1000)
    negative = text.startswith("-")
    whole_text, _, frac = text.lstrip("+-").partition(".")
    ns = int(whole_text or "0") * 1000 + int((frac + "000")[:3])
    if len(frac) > 3 and frac[3] >= "5":
        ns += 1
    return -ns if negative else ns


def _runtime_copy_sizes(rows: list[tuple[dict[str, Any], EventKind]]) -> dict[int, int]:
    """ROCm traces carry a copy's size only on its runtime call (``hipMemcpy*`` ``size``)."""
    sizes = {}
    for e, k in rows:
        if k == EventKind.CUDA_RUNTIME:
            args = e.get("args") or {}
            size, correlation = _int(args.get("size")), _int(args.get("correlation"))
            if size is not None and correlation is not None:
                sizes[correlation] = size
    return sizes


def _int(value: Any, default: int | None = None) -> Any:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return default
    return default


def _triple(value: Any) -> tuple[int, int, int]:
    if isinstance(value, list) and len(value) == 3:
        return (_int(value[0], 0), _int(value[1], 0), _int(value[2], 0))
    return (0, 0, 0)
