"""Building blocks of the Kineto decoder's columns: strings dictionary-encoded in C, integers
from mixed values, events picked by position (no Python object per event where avoidable)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

import numpy as np
import pyarrow as pa

_NONE = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class StringColumn:
    """Per-event codes into ``values`` (this chunk's own dictionary); -1 where absent."""

    codes: np.ndarray
    values: list[str]


def pick(seq: list | tuple, positions: np.ndarray) -> list | tuple:
    if len(positions) == 0:
        return []
    if len(positions) == len(seq):
        return seq
    picked = itemgetter(*positions.tolist())(seq)
    return picked if len(positions) > 1 else [picked]


def ints(values: list | tuple, absent: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """int64 array for mostly-int values; strings holding numbers ("0x0", "7") are parsed.

    Returns the array and the positions whose value was not a number at all.
    """
    n = len(values)
    try:
        return np.fromiter(values, dtype=np.int64, count=n), _NONE
    except (TypeError, ValueError, OverflowError):
        pass
    is_int = np.fromiter(map(isinstance, values, repeat(int)), dtype=bool, count=n)
    fixed = list(values)
    bad: list[int] = []
    for i in np.flatnonzero(~is_int).tolist():
        try:
            fixed[i] = int(str(values[i]), 0)
        except ValueError:
            fixed[i] = absent
            bad.append(i)
        if not -(2**63) <= fixed[i] < 2**63:
            fixed[i] = absent
            bad.append(i)
    return np.fromiter(fixed, dtype=np.int64, count=n), np.asarray(bad, dtype=np.int64)


def dictionary(values: list | tuple) -> StringColumn:
    """Dictionary-encode strings in C (Arrow's hash kernel)."""
    encoded = pa.array(values, type=pa.string()).dictionary_encode()
    return StringColumn(
        encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
        encoded.dictionary.to_pylist(),
    )


def dictionary_raw(raws: list | tuple) -> StringColumn:
    """``dictionary`` for ``msgspec.Raw`` JSON texts, without a Python object per item."""
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    offsets = np.zeros(len(raws) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    texts = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        len(raws),
        [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))],
    )
    encoded = texts.dictionary_encode()
    return StringColumn(
        encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32),
        [v.decode("utf-8", errors="replace") for v in encoded.dictionary.to_pylist()],
    )


def scatter(
    strings: dict[str, StringColumn], col: str, n: int, positions: np.ndarray, part: StringColumn
) -> None:
    """Put ``part`` (codes for ``positions``) into column ``col``, keeping earlier entries."""
    existing = strings.get(col)
    if existing is None:
        codes = np.full(n, -1, dtype=np.int32)
        codes[positions] = part.codes
        strings[col] = StringColumn(codes, part.values)
    else:
        existing.codes[positions] = part.codes + len(existing.values)
        strings[col] = StringColumn(existing.codes, existing.values + part.values)
