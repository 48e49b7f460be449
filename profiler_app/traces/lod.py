"""Level-of-detail summaries of a track, built while its events stream by in start order.

For each level (bucket width 1 ms … 10 s) and each non-empty bucket: how many events start in
it, the earliest start and latest end among them, the time they newly cover (``busy_ns``: the
part of their intervals not already covered by earlier events of the track, so nested CPU
operators are not counted twice and the buckets' busy times add up to the track's busy time),
and the longest one's duration and name. A zoomed-out timeline draws these instead of millions
of events.

Rows leave through ``emit(level, columns)`` in (track, bucket) order, in batches, so a level can be
written to its own file as it grows and memory stays bounded for traces of any length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

LEVEL_WIDTHS_NS = (1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 10_000_000_000)
FLUSH_ROWS = 65536
LOD_COLUMNS = (
    "track",
    "level",
    "bucket_start_ns",
    "count",
    "first_start_ns",
    "last_end_ns",
    "busy_ns",
    "longest_ns",
    "longest_name",
)
_FIELDS = ("bucket", "count", "first_start", "last_end", "busy", "longest", "longest_name")


def _summaries(
    width: int,
    start: np.ndarray,
    end: np.ndarray,
    dur: np.ndarray,
    name: np.ndarray,
    reach_before: int,
) -> dict[str, np.ndarray]:
    """One row per bucket of a start-sorted window; ``reach_before`` is the track's coverage."""
    bucket = start // width
    first = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    counts = np.diff(np.r_[first, len(start)])
    reach = np.maximum.accumulate(np.r_[reach_before, end])
    added = np.clip(end - np.maximum(start, reach[:-1]), 0, None)
    longest = np.maximum.reduceat(dur, first)
    # The first event of each bucket whose duration is the bucket's longest.
    is_longest = np.flatnonzero(dur == np.repeat(longest, counts))
    group_of = np.repeat(np.arange(len(first)), counts)[is_longest]
    longest_at = is_longest[np.r_[True, group_of[1:] != group_of[:-1]]]
    return {
        "bucket": bucket[first],
        "count": counts,
        "first_start": start[first],
        "last_end": np.maximum.reduceat(end, first),
        "busy": np.add.reduceat(added, first),
        "longest": longest,
        "longest_name": name[longest_at],
    }


@dataclass
class LodBuilder:
    emit: Callable[[int, dict[str, np.ndarray]], None]
    _pending: dict[int, list[dict[str, np.ndarray]]] = field(default_factory=dict)
    _pending_rows: dict[int, int] = field(default_factory=dict)
    _open: dict[int, dict[str, int]] = field(default_factory=dict)  # last bucket per level
    _reach: int = np.iinfo(np.int64).min
    _track: int = -1

    def feed(self, track: int, start: np.ndarray, dur: np.ndarray, name: np.ndarray) -> None:
        """Events of ``track`` in start order, continuing any previous window of the track."""
        if track != self._track:
            self.finish_track()
            self._track = track
        if not len(start):
            return
        end = start + dur
        for level, width in enumerate(LEVEL_WIDTHS_NS):
            rows = _summaries(width, start, end, dur, name, self._reach)
            carried = self._open.pop(level, None)
            if carried is not None:
                if carried["bucket"] == rows["bucket"][0]:
                    _fold(carried, rows)
                else:
                    self._add(level, {k: np.asarray([v]) for k, v in carried.items()})
            last = {k: int(v[-1]) for k, v in rows.items()}
            if len(rows["bucket"]) > 1:
                self._add(level, {k: v[:-1] for k, v in rows.items()})
            self._open[level] = last
        self._reach = max(self._reach, int(end.max()))

    def _add(self, level: int, rows: dict[str, np.ndarray]) -> None:
        self._pending.setdefault(level, []).append(
            {"track": np.full(len(rows["bucket"]), self._track, dtype=np.int32), **rows}
        )
        self._pending_rows[level] = self._pending_rows.get(level, 0) + len(rows["bucket"])
        if self._pending_rows[level] >= FLUSH_ROWS:
            self._flush(level)

    def _flush(self, level: int) -> None:
        parts = self._pending.pop(level, [])
        self._pending_rows[level] = 0
        if not parts:
            return
        cols = {k: np.concatenate([p[k] for p in parts]) for k in ("track", *_FIELDS)}
        self.emit(
            level,
            {
                "track": cols["track"],
                "level": np.full(len(cols["track"]), level, dtype=np.int8),
                "bucket_start_ns": cols["bucket"].astype(np.int64) * LEVEL_WIDTHS_NS[level],
                "count": cols["count"].astype(np.int64),
                "first_start_ns": cols["first_start"].astype(np.int64),
                "last_end_ns": cols["last_end"].astype(np.int64),
                "busy_ns": cols["busy"].astype(np.int64),
                "longest_ns": cols["longest"].astype(np.int64),
                "longest_name": cols["longest_name"].astype(np.int32),
            },
        )

    def finish_track(self) -> None:
        for level, carried in sorted(self._open.items()):
            self._add(level, {k: np.asarray([v]) for k, v in carried.items()})
        self._open.clear()
        self._reach = np.iinfo(np.int64).min

    def close(self) -> None:
        self.finish_track()
        for level in list(self._pending):
            self._flush(level)


def _fold(carried: dict[str, int], rows: dict[str, np.ndarray]) -> None:
    """Merge the bucket left open by the previous window into this window's first row."""
    rows["count"][0] += carried["count"]
    rows["first_start"][0] = carried["first_start"]
    rows["last_end"][0] = max(int(rows["last_end"][0]), carried["last_end"])
    rows["busy"][0] += carried["busy"]
    if carried["longest"] >= rows["longest"][0]:
        rows["longest"][0] = carried["longest"]
        rows["longest_name"][0] = carried["longest_name"]
