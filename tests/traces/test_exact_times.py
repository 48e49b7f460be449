"""Microseconds in JSON text become integer nanoseconds exactly, in one step."""

from decimal import Decimal

import msgspec
import numpy as np
import pytest

from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.exact import durations_to_ns, texts_to_ns


def raws(*texts: str) -> list:
    return msgspec.json.decode(("[" + ",".join(texts) + "]").encode(), type=list[msgspec.Raw])


def test_it_keeps_nanoseconds_a_float_would_lose():
    assert float("1712195495519689.047") * 1000 != 1712195495519689047
    got = texts_to_ns(
        raws("1712195495519689.047", "4458676522690.655", "1682725898236567"), "ts", np.arange(3)
    )
    assert got.tolist() == [1712195495519689047, 4458676522690655, 1682725898236567000]


def test_it_rounds_sub_nanosecond_digits_half_to_even():
    got = texts_to_ns(raws("1.0005", "1.0015", "-2.5", "1e3", "0.25e-1"), "ts", np.arange(5))
    assert got.tolist() == [1000, 1002, -2500, 1_000_000, 25]


def test_it_names_the_event_with_a_non_numeric_time():
    with pytest.raises(TraceFormatError, match="event #12: 'ts' must be a number"):
        texts_to_ns(raws("1", '"soon"'), "ts", np.array([11, 12]))


def test_it_refuses_times_beyond_int64():
    with pytest.raises(TraceFormatError, match="out of range"):
        texts_to_ns(raws("9300000000000000.5"), "ts", np.array([0]))


@pytest.mark.parametrize("text", ["0.001", "63.813", "53.09", "4294967.295", "999999999.999"])
def test_it_converts_three_decimal_durations_exactly(text):
    want = int(Decimal(text) * 1000)
    assert durations_to_ns(np.array([float(text)]), np.array([0])).tolist() == [want]
