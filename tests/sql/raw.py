"""Complete and instant events of a trace straight from its raw JSON (standard library only)."""

import gzip
import json
from decimal import Decimal

from tests.traces.expected import DATA, expected, ns


def raw_events(trace: str) -> list[dict]:
    """(cat, name, start_ns, dur_ns) of every X/i event, on the store's clock."""
    with gzip.open(DATA / trace) as f:
        doc = json.load(f, parse_float=Decimal)
    offset = expected(trace).offset_ns
    return [
        {
            "cat": e.get("cat", ""),
            "name": e.get("name", ""),
            "start_ns": ns(e["ts"]) + offset,
            "dur_ns": ns(e.get("dur", 0)) if e["ph"] == "X" else 0,
        }
        for e in doc["traceEvents"]
        if e.get("ph") in ("X", "i", "I")
    ]
