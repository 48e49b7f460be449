"""The allocator's numbers computed straight from a trace's raw JSON, independently of the
parser: the [memory] events walked in time order, each allocation given to the innermost
cpu_op enclosing it on its thread by a brute-force search."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from tests.traces.expected import DATA, ns

MEMORY_TRACE = "cpu_memory_profile.json.gz"
OUTSIDE = "(outside any operator)"


@dataclass
class MemoryExpected:
    events: list = field(default_factory=list)  # (time_ns, bytes, total_allocated, operator)
    peak_time_ns: int = 0
    peak_allocated: int = 0
    peak_reserved: int = 0
    running: list = field(default_factory=list)
    allocated_bytes: Counter = field(default_factory=Counter)
    allocations: Counter = field(default_factory=Counter)
    held_bytes: Counter = field(default_factory=Counter)


def memory_expected(trace: str = MEMORY_TRACE) -> MemoryExpected:
    with gzip.open(DATA / trace) as f:
        doc = json.load(f, parse_float=Decimal)
    base = int(doc["baseTimeNanoseconds"])
    ops = [
        (e["pid"], e["tid"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"])
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "cpu_op"
    ]
    memory = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("name") == "[memory]"]
    memory.sort(key=lambda e: ns(e["ts"]))  # stable: equal times keep the file's order

    def enclosing(e) -> list:
        t = ns(e["ts"])
        found = [o for o in ops if (o[0], o[1]) == (e["pid"], e["tid"]) and o[2] <= t <= o[3]]
        # Outermost first: earliest start, longest first.
        return sorted(found, key=lambda o: (o[2], -o[3]))

    out = MemoryExpected()
    for e in memory:
        stack = enclosing(e)
        args = e["args"]
        name = stack[-1][4] if stack else OUTSIDE
        out.events.append((ns(e["ts"]) + base, args["Bytes"], args["Total Allocated"], name))
    peak = max(range(len(memory)), key=lambda i: (memory[i]["args"]["Total Allocated"], -i))
    out.peak_time_ns = ns(memory[peak]["ts"]) + base
    out.peak_allocated = memory[peak]["args"]["Total Allocated"]
    out.peak_reserved = memory[peak]["args"]["Total Reserved"]
    out.running = [o[4] for o in enclosing(memory[peak])]
    live: dict[int, tuple[str, int]] = {}
    for i, (e, (_, nbytes, _, name)) in enumerate(zip(memory, out.events, strict=True)):
        if nbytes > 0:
            out.allocated_bytes[name] += nbytes
            out.allocations[name] += 1
        if i <= peak:
            if nbytes > 0:
                live[e["args"]["Addr"]] = (name, nbytes)
            else:
                live.pop(e["args"]["Addr"], None)
    for name, nbytes in live.values():
        out.held_bytes[name] += nbytes
    return out


def write_without_totals(path: Path, trace: str = MEMORY_TRACE) -> Path:
    """The trace as PyTorch 1.9 wrote it: its [memory] events without "Total Allocated" and
    "Total Reserved", only each allocation's "Bytes"."""
    with gzip.open(DATA / trace) as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if e.get("ph") == "i" and e.get("name") == "[memory]":
            e["args"].pop("Total Allocated")
            e["args"].pop("Total Reserved")
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


@dataclass
class RunningSum:
    sums: dict = field(default_factory=dict)  # (device type, id) -> [(time_ns, bytes so far)]
    peaks: dict = field(
        default_factory=dict
    )  # (device type, id) -> (time_ns, bytes), first of equals


def running_sum(path: Path) -> RunningSum:
    """Allocated bytes per device as the running sum of the [memory] events' Bytes, in time order."""
    with gzip.open(path) as f:
        doc = json.load(f, parse_float=Decimal)
    base = int(doc["baseTimeNanoseconds"])
    memory = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("name") == "[memory]"]
    memory.sort(key=lambda e: ns(e["ts"]))
    out = RunningSum()
    for e in memory:
        device = (e["args"]["Device Type"], e["args"]["Device Id"])
        points = out.sums.setdefault(device, [])
        points.append((ns(e["ts"]) + base, (points[-1][1] if points else 0) + e["args"]["Bytes"]))
    for device, points in out.sums.items():
        out.peaks[device] = max(points, key=lambda p: p[1])  # max keeps the first of equals
    return out
