"""The timeline index of one part, memory-mapped.

Events are ordered by row, then start; a row is one nesting depth of one lane. Per event:
``start``, ``dur``, ``name`` (the store's string id), ``kind``, ``store_row`` (its row in the
store's ``events.parquet``, for details and export) and ``partner`` (its launch or run). ``cum``
is the running sum of durations, so the summed duration of any index range is one subtraction.

``ckey``/``cidx`` order each row's events by (duration class, start): the events of a row that
last at least ``2**k`` ns and overlap a window are a handful of contiguous slices. ``level_*``
hold the rows' summary levels (see ``levels``); ``act_*`` and ``util_*`` the activity
pyramids (see ``activity``) of each lane and of each GPU's kernels; ``name_order``/``name_off``
the events of each name, for search.
"""

from __future__ import annotations

import fcntl
import json
import mmap
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from profiler_app.timeline.activity import ActivityLevel
from profiler_app.timeline.index_build import INDEX_VERSION, build_index, store_signature
from profiler_app.traces.timeline_read import TimelineReader

INDEX_DIR_NAME = "timeline-index"
_PYRAMID = ("table", "bucket", "count", "busy", "span_off", "span_start", "span_end")
_ARRAYS = (
    "start",
    "dur",
    "name",
    "kind",
    "store_row",
    "cum",
    "partner",
    "row_lane",
    "row_depth",
    "row_off",
    "ckey",
    "cidx",
    "level_table",
    "level_bucket",
    "level_count",
    "level_busy",
    "level_name",
    "name_order",
    "name_off",
    "util_device",
    *(f"{p}_{a}" for p in ("act", "util") for a in _PYRAMID),
)


@dataclass(frozen=True)
class LevelSlice:
    offset: int
    length: int
    k: int


class PartIndex:
    def __init__(self, store_dir: Path, index_dir: Path) -> None:
        self.store_dir = store_dir
        self.meta = json.loads((index_dir / "meta.json").read_text())
        self.origin_ns: int = self.meta["origin_ns"]
        self.lanes: list[dict] = self.meta["lanes"]
        self._maps: list[mmap.mmap] = []
        for name in _ARRAYS:
            mapped = np.load(index_dir / f"{name}.npy", mmap_mode="r")
            if mapped._mmap is not None:  # an empty array maps nothing
                self._maps.append(mapped._mmap)
            # Plain views of the maps: slicing a np.memmap costs ten times more.
            setattr(self, name, np.asarray(mapped))
        table = np.asarray(self.level_table)
        self._levels = {
            (int(r), int(k)): LevelSlice(int(o), int(n), int(k)) for r, k, o, n, _ in table
        }
        self._terminal = {
            int(r): LevelSlice(int(o), int(n), int(k)) for r, k, o, n, t in table if t
        }
        self._activity = {
            prefix: {
                (int(s), int(k)): (int(o), int(n))
                for s, k, o, n in getattr(self, f"{prefix}_table")
            }
            for prefix in ("act", "util")
        }

    start: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    kind: np.ndarray
    store_row: np.ndarray
    cum: np.ndarray
    partner: np.ndarray
    row_lane: np.ndarray
    row_depth: np.ndarray
    row_off: np.ndarray
    ckey: np.ndarray
    cidx: np.ndarray
    level_table: np.ndarray
    level_bucket: np.ndarray
    level_count: np.ndarray
    level_busy: np.ndarray
    level_name: np.ndarray
    name_order: np.ndarray
    name_off: np.ndarray
    util_device: np.ndarray
    act_table: np.ndarray
    act_bucket: np.ndarray
    act_count: np.ndarray
    act_busy: np.ndarray
    act_span_off: np.ndarray
    act_span_start: np.ndarray
    act_span_end: np.ndarray
    util_table: np.ndarray
    util_bucket: np.ndarray
    util_count: np.ndarray
    util_busy: np.ndarray
    util_span_off: np.ndarray
    util_span_start: np.ndarray
    util_span_end: np.ndarray

    @property
    def n_events(self) -> int:
        return int(self.meta["n_events"])

    def level(self, row: int, k: int) -> LevelSlice | None:
        """The summary of ``row`` at bucket width 2**k, when one was kept."""
        found = self._levels.get((row, k))
        if found is None:
            terminal = self._terminal.get(row)
            if terminal is not None and terminal.k < k:
                return terminal  # a single bucket at a finer level stays single
        return found

    def activity(self, prefix: str, subject: int, k: int) -> ActivityLevel | None:
        """Stored activity level ``k`` of a lane (``act``) or GPU (``util``), if kept."""
        found = self._activity[prefix].get((subject, k))
        if found is None:
            return None
        o, n = found
        sl = slice(o, o + n)
        arrays = (getattr(self, f"{prefix}_{a}")[sl] for a in ("bucket", "count", "busy"))
        return ActivityLevel(k, *arrays)

    def spans(self, prefix: str, subject: int) -> tuple[np.ndarray, np.ndarray]:
        """The merged intervals of a lane or GPU, in start order."""
        off = getattr(self, f"{prefix}_span_off")
        sl = slice(int(off[subject]), int(off[subject + 1]))
        return getattr(self, f"{prefix}_span_start")[sl], getattr(self, f"{prefix}_span_end")[sl]

    def release_pages(self) -> None:
        """Let go of the pages of the index this process has read (they stay in the page cache,
        and come back on the next read): a whole-job pass, like an export, then leaves the
        process's resident size where it was."""
        for mapped in self._maps:
            mapped.madvise(mmap.MADV_DONTNEED)

    @cached_property
    def reader(self) -> TimelineReader:
        return TimelineReader(self.store_dir)

    @cached_property
    def strings(self) -> list[str]:
        return self.reader.strings

    @cached_property
    def group_starts(self) -> np.ndarray:
        """First store row of each Parquet row group (one more at the end)."""
        meta = self.reader.events.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        return np.r_[0, np.cumsum(sizes)].astype(np.int64)

    @cached_property
    def lowered_strings(self) -> list[str]:
        return [s.lower() for s in self.strings]


def open_index(store_dir: str | Path, index_dir: str | Path | None = None) -> PartIndex:
    """The index of a store, built first when missing or older than the store."""
    store_dir = Path(store_dir)
    index_dir = Path(index_dir) if index_dir else store_dir / INDEX_DIR_NAME
    ensure_index(store_dir, index_dir)
    return PartIndex(store_dir, index_dir)


def open_built_index(store_dir: str | Path) -> PartIndex:
    """The index the worker built; IndexNotBuilt when it is missing or older than the store."""
    store_dir = Path(store_dir)
    index_dir = store_dir / INDEX_DIR_NAME
    if not _fresh(store_dir, index_dir):
        raise IndexNotBuilt(store_dir)
    return PartIndex(store_dir, index_dir)


class IndexNotBuilt(Exception):
    """A store from before indexes were built at ingest (or before this index version)."""


def ensure_index(store_dir: str | Path, index_dir: str | Path | None = None) -> bool:
    """Builds the store's index unless a fresh one exists; True when it built one."""
    store_dir = Path(store_dir)
    index_dir = Path(index_dir) if index_dir else store_dir / INDEX_DIR_NAME
    if _fresh(store_dir, index_dir):  # the sweep's usual answer: no lock taken
        return False
    # Two workers may index one store at once (a reprocess, a sweep): one builds it, under a
    # lock the other waits on, because swapping in a second build would take the files from
    # under a process opening the first.
    lock_path = index_dir.with_name(f".{index_dir.name}.lock")
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fresh(store_dir, index_dir):
            return False
        build_index(store_dir, index_dir)
        return True


def _fresh(store_dir: Path, index_dir: Path) -> bool:
    meta_path = index_dir / "meta.json"
    if not meta_path.exists():
        return False
    meta = json.loads(meta_path.read_text())
    return meta.get("version") == INDEX_VERSION and meta.get("signature") == store_signature(
        store_dir
    )
