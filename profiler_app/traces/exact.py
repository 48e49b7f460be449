"""Microsecond numbers from JSON text to integer nanoseconds, exactly, in one step.

Kineto writes timestamps as microseconds with three decimals (``1712195495519689.047``). A
float64 cannot hold that value (its spacing there is 0.25 µs), so timestamps are taken from the
JSON *text*: the texts are joined into one Arrow string array and cast to ``decimal128(22, 3)``,
whose integer representation is the value in nanoseconds. Anything the fast cast refuses (more
than three decimals, a minus sign, exponent forms it cannot rescale, non-numbers) goes through
Python's ``Decimal`` with round-half-even, or is reported as a format error.

Durations are small (well below 2**42 µs), where ``round(float * 1000)`` is provably exact for
three-decimal inputs, so they stay on the cheap float path.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profiler_app.traces.errors import TraceFormatError

_DECIMAL_NS = pa.decimal128(22, 3)
_INT64_MAX = 2**63 - 1
# Largest duration accepted: ~50 days. Below it, float -> ns rounding is exact; above it the
# value is corrupt rather than a real operation.
MAX_DUR_US = float(2**42)


def texts_to_ns(texts: Sequence, what: str, event_numbers: np.ndarray) -> np.ndarray:
    """Exact nanoseconds for JSON number texts (``msgspec.Raw`` or ``bytes``) in microseconds.

    ``event_numbers`` holds each text's event index in the file, for error messages.
    """
    n = len(texts)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    # Joining with b"0" makes every item but the first start with a harmless leading zero, so
    # the offsets are plain cumulative lengths and no separator has to be cut out.
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=offsets[1:])
    offsets[1:] -= 1
    joined = b"0".join(texts)
    if offsets[-1] < 2**31:
        strings = pa.StringArray.from_buffers(
            n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(joined)
        )
    else:
        strings = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(joined))
    try:
        decimals = pc.cast(strings, _DECIMAL_NS)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _slow_ns(texts, what, event_numbers)
    words = np.frombuffer(decimals.buffers()[1], dtype=np.int64).reshape(-1, 2)
    low, high = words[:, 0], words[:, 1]
    # Values in int64 range have a high word that only sign-extends the low one.
    if not np.array_equal(high, low >> 63):
        bad = int(np.flatnonzero(high != (low >> 63))[0])
        raise TraceFormatError(
            f"event #{event_numbers[bad]}: '{what}' {bytes(texts[bad]).decode(errors='replace')} "
            "is out of range"
        )
    return low.copy()


def _slow_ns(texts: Sequence, what: str, event_numbers: np.ndarray) -> np.ndarray:
    out = np.empty(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        raw = bytes(text).decode("utf-8", errors="replace")
        try:
            value = Decimal(raw)
        except InvalidOperation:
            value = Decimal("nan")
        if not value.is_finite() or raw[:1] not in "-0123456789":
            raise TraceFormatError(
                f"event #{event_numbers[i]}: '{what}' must be a number of microseconds, "
                f"got {raw[:60]}"
            )
        ns = int((value * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
        if abs(ns) > _INT64_MAX:
            raise TraceFormatError(
                f"event #{event_numbers[i]}: '{what}' {raw[:60]} is out of range"
            )
        out[i] = ns
    return out


def durations_to_ns(dur_us: np.ndarray, event_numbers: np.ndarray) -> np.ndarray:
    """Nanoseconds for float microsecond durations; refuses negative, NaN and absurd values."""
    bad = ~((dur_us >= 0) & (dur_us < MAX_DUR_US))  # NaN fails both comparisons
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TraceFormatError(
            f"event #{event_numbers[i]} has an invalid duration ({float(dur_us[i]):g} µs): durations "
            "must be finite, not negative, and shorter than 50 days"
        )
    return np.rint(dur_us * 1000.0).astype(np.int64)
