"""Names interned into dense integer ids; id 0 is always the empty string."""

from __future__ import annotations

import numpy as np


class StringTable:
    def __init__(self) -> None:
        self.strings: list[str] = [""]
        self._ids: dict[str, int] = {"": 0}

    def intern(self, value: str) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.strings)
            self.strings.append(value)
        return found

    def intern_many(self, values: list[str] | tuple[str, ...], dtype=np.int32) -> np.ndarray:
        """Ids of ``values`` (e.g. a chunk's local string list, so callers remap with one take)."""
        return np.fromiter(map(self.intern, values), dtype=dtype, count=len(values))

    def __len__(self) -> int:
        return len(self.strings)


def present_ids(ids: np.ndarray) -> np.ndarray:
    """The distinct non-negative string ids in ``ids``, ascending, in ``ids``' dtype:
    ``np.unique`` without its sort (a trace's names are a few thousand ids among millions of
    events)."""
    seen = np.bincount(ids[ids >= 0]) if len(ids) else np.zeros(0, dtype=np.int64)
    return np.flatnonzero(seen).astype(ids.dtype, copy=False)
