"""The timeline index of one part, memory-mapped.

Events are ordered by row, then start; a row is one nesting depth of one lane. Per event:
``start``, ``dur``, ``name`` (the store's string id), ``kind``, ``store_row`` (its row in the
store's ``events.parquet``, for details and export), ``partner`` (its launch or run), and the
event model's ``parent`` (its position here; ``child_order``/``child_parent`` the other way)
and ``self_ns``. ``cum``
is the running sum of durations, so the summed duration of any index range is one subtraction.

``ckey``/``cidx`` order each row's events by (duration class, start): the events of a row that
last at least ``2**k`` ns and overlap a window are a handful of contiguous slices. ``level_*``
hold the rows' summary levels (see ``levels``); ``act_*`` and ``util_*`` the activity
pyramids (see ``activity``) of each lane and of each GPU's kernels; ``name_order``/``name_off``
the events of each name, for search; ``blk_*`` each block of ``BLOCK_EVENTS`` events' sums per
name, and ``sup_*`` each super-block's of ``SUPER_BLOCKS`` blocks, for range totals (see
``ranges``).

One module on purpose (near 500 lines): the reader of every array ``index_build`` writes, with
the layout above; the queries over it (``viewport``, ``ranges``, ``query``) live apart.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from pathlib import Path

import msgspec
import numpy as np
import pyarrow.parquet as pq

from profiler_app.timeline.pure.activity import ActivityLevel
from profiler_app.timeline.pure.index_build import INDEX_VERSION, build_index, signature_matches
from profiler_app.timeline.pure.lanes import HOST, OTHER, STREAM, THREAD
from profiler_app.traces.store_files import StoreFiles
from profiler_app.traces.store_layout import INDEX_FOLDER_PREFIX, STRINGS_FILE, index_folder
from profiler_app.traces.timeline_read import TimelineReader

INDEX_DIR_NAME = index_folder(INDEX_VERSION)
# Where indexes of this version were built before the folder carried it (data directory).
LEGACY_INDEX_DIR_NAME = INDEX_FOLDER_PREFIX
# Fetched together (from a bucket) when the index is opened: what every view of the part reads,
# its rows' activity and its GPUs' utilisation.
_ON_OPEN = (
    "level_table",
    "act_table",
    "util_table",
    "row_off",
    "util_device",
    "act_bucket",
    "act_count",
    "act_busy",
    "util_bucket",
    "util_count",
    "util_busy",
)
# Fetched together when a view first draws the part's events (an expanded row).
_EVENTS = (
    "start",
    "dur",
    "name",
    "kind",
    "cum",
    "partner",
    "row_lane",
    "row_depth",
    "ckey",
    "cidx",
    "level_bucket",
    "level_count",
    "level_busy",
    "level_name",
)
# Read at scattered places by a view or a range's totals (binary searches, the events at a
# range's edges, the nested events of those cut by it): on a cold page cache each place costs a
# disk read of its own, 2-3 ms each here. Read ahead whole when a job's timeline opens, the
# arrays every view reads first (``read_ahead``).
READ_AHEAD = (
    "start",
    "ckey",
    "cidx",
    "dur",
    "name",
    "self_ns",
    "child_parent",
    "child_order",
    "parent",
    "level_bucket",
    "level_count",
    "level_busy",
    "level_name",
)
# Read ahead a chunk at a time: the kernel reads up to 8 MB ahead per request here.
_READ_AHEAD_CHUNK = 2 << 20
_PYRAMID = ("table", "bucket", "count", "busy", "span_off", "span_start", "span_end")
# The columns of a level of block sums (``blk_*``, ``sup_*``; ``BlockSums``).
_SUM_COLUMNS = ("end", "off", "name", "count", "total", "self", "min", "max")
_ARRAYS = (
    "start",
    "dur",
    "name",
    "kind",
    "store_row",
    "parent",
    "child_order",
    "child_parent",
    "self_ns",
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
    "blk_end",
    "blk_off",
    "blk_name",
    "blk_count",
    "blk_total",
    "blk_self",
    "blk_min",
    "blk_max",
    *(f"sup_{a}" for a in _SUM_COLUMNS),
    "util_device",
    *(f"{p}_{a}" for p in ("act", "util") for a in _PYRAMID),
)


@dataclass(frozen=True)
class BlockSums:
    """Per block of ``events`` events (in index order) and name: count, summed duration and
    self time, shortest and longest; each block's names at ``off``, its latest end at ``end``."""

    events: int
    end: np.ndarray
    off: np.ndarray
    name: np.ndarray
    count: np.ndarray
    total: np.ndarray
    self_ns: np.ndarray
    min_ns: np.ndarray
    max_ns: np.ndarray


class Lane(msgspec.Struct, gc=False):
    """One lane of the part (``index_build._lane_meta``). Decoded into a struct, not a dict: a
    trace of 200,000 threads has as many, which as dicts took 166 MB and 2.3 s to read, as
    structs 100 MB and 0.6 s."""

    lane: int
    kind: str
    device: int
    stream: int
    pid: int
    tid: int
    label: str
    rows: list[int]
    n_events: int
    start_ns: int
    end_ns: int


class IndexMeta(msgspec.Struct):
    """``meta.json``: what the index holds, and its lanes."""

    version: int
    origin_ns: int
    n_events: int
    block_events: int
    super_events: int | None = None  # an index built before super-blocks has none
    signature: str | None = None
    lanes: list[Lane] = []


class _MetaHead(msgspec.Struct):
    """What tells whether an index is fresh; its lanes are skipped, not decoded."""

    version: int | None = None
    signature: str | None = None


def _key(subject, k):
    """One integer for (row or lane, level k): k is below 64."""
    return (np.asarray(subject, dtype=np.int64) << 6) | k


class _Keyed:
    """The rows of an index table found by key with a binary search. As dicts, the activity
    table of a 200,000-thread part took 65 MB and 0.25 s to build at each opening."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = np.asarray(keys)[order]
        self.rows = rows[order]

    def get(self, key: int) -> list[int] | None:
        at = int(np.searchsorted(self.keys, key))
        if at < len(self.keys) and self.keys[at] == key:
            return self.rows[at].tolist()
        return None


_LANE_KINDS = (STREAM, HOST, THREAD, OTHER)


@dataclass(frozen=True)
class LaneColumns:
    """The part's lanes as columns (one entry per lane, in lane order): what the track tree
    groups lanes by, without a Python step per lane."""

    kind: np.ndarray  # the kind's position in ``_LANE_KINDS``: ``of_kind`` reads it
    pid: np.ndarray
    tid: np.ndarray
    n_events: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray

    def of_kind(self, *kinds: str) -> np.ndarray:
        """Whether each lane is of one of ``kinds`` (``lanes.STREAM``, ``HOST``, ...)."""
        return np.isin(self.kind, [_LANE_KINDS.index(kind) for kind in kinds])


@dataclass(frozen=True)
class LevelSlice:
    offset: int
    length: int
    k: int


class PartIndex:
    def __init__(self, store: StoreFiles, folder: str = INDEX_DIR_NAME) -> None:
        self.store = store
        self.folder = folder
        self.meta = msgspec.json.decode(
            store.file(f"{folder}/meta.json").read_bytes(), type=IndexMeta
        )
        store.fetch([STRINGS_FILE, *(self._path(name) for name in _ON_OPEN)])
        self.origin_ns: int = self.meta.origin_ns
        self.lanes: list[Lane] = self.meta.lanes
        self._maps: list[mmap.mmap] = []
        levels = np.asarray(self.level_table, dtype=np.int64).reshape(-1, 5)
        self._levels = _Keyed(_key(levels[:, 0], levels[:, 1]), levels)
        terminal = levels[levels[:, 4] != 0]
        self._terminal = _Keyed(terminal[:, 0], terminal)
        self._activity = {}
        for prefix in ("act", "util"):
            table = np.asarray(getattr(self, f"{prefix}_table"), dtype=np.int64).reshape(-1, 4)
            self._activity[prefix] = _Keyed(_key(table[:, 0], table[:, 1]), table)

    def __getattr__(self, name: str) -> np.ndarray:
        """An index array, memory-mapped when first used (fetched first from a bucket)."""
        if name not in _ARRAYS:
            raise AttributeError(name)
        if name in _EVENTS:
            self.store.fetch([self._path(n) for n in _EVENTS])
        # A str, not a Path: np.memmap resolves a Path (symlinks, one stat per component),
        # a third of the time a job's first view spends mapping its index's arrays.
        mapped = np.load(os.fspath(self.store.file(self._path(name))), mmap_mode="r")
        if mapped._mmap is not None:  # an empty array maps nothing
            self._maps.append(mapped._mmap)
        # A plain view of the map: slicing a np.memmap costs ten times more.
        array = np.asarray(mapped)
        setattr(self, name, array)
        return array

    def _path(self, name: str) -> str:
        return f"{self.folder}/{name}.npy"

    start: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    kind: np.ndarray
    store_row: np.ndarray
    parent: np.ndarray
    child_order: np.ndarray
    child_parent: np.ndarray
    self_ns: np.ndarray
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
    blk_end: np.ndarray
    blk_off: np.ndarray
    blk_name: np.ndarray
    blk_count: np.ndarray
    blk_total: np.ndarray
    blk_self: np.ndarray
    blk_min: np.ndarray
    blk_max: np.ndarray
    sup_end: np.ndarray
    sup_off: np.ndarray
    sup_name: np.ndarray
    sup_count: np.ndarray
    sup_total: np.ndarray
    sup_self: np.ndarray
    sup_min: np.ndarray
    sup_max: np.ndarray
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
    def block_events(self) -> int:
        """Events a block of ``blk_*`` sums covers (``index_build.BLOCK_EVENTS`` when built)."""
        return self.meta.block_events

    def block_sums(self) -> list[BlockSums]:
        """The per-name sums of blocks of events, the largest blocks first: super-blocks
        (``sup_*``; an index built before them has none), then blocks (``blk_*``)."""
        levels = [("sup", self.meta.super_events), ("blk", self.block_events)]
        return [
            BlockSums(events, *(getattr(self, f"{prefix}_{a}") for a in _SUM_COLUMNS))
            for prefix, events in levels
            if events
        ]

    @property
    def n_events(self) -> int:
        return int(self.meta.n_events)

    def level(self, row: int, k: int) -> LevelSlice | None:
        """The summary of ``row`` at bucket width 2**k, when one was kept."""
        found = self._levels.get(int(_key(row, k)))
        if found is None:
            found = self._terminal.get(row)
            if found is None or found[1] >= k:
                return None
            # a single bucket at a finer level stays single
        _, level_k, o, n, _ = found
        return LevelSlice(o, n, level_k)

    def activity(self, prefix: str, subject: int, k: int) -> ActivityLevel | None:
        """Stored activity level ``k`` of a lane (``act``) or GPU (``util``), if kept."""
        found = self._activity[prefix].get(int(_key(subject, k)))
        if found is None:
            return None
        _, _, o, n = found
        sl = slice(o, o + n)
        arrays = (getattr(self, f"{prefix}_{a}")[sl] for a in ("bucket", "count", "busy"))
        return ActivityLevel(k, *arrays)

    def spans(self, prefix: str, subject: int) -> tuple[np.ndarray, np.ndarray]:
        """The merged intervals of a lane or GPU, in start order."""
        off = getattr(self, f"{prefix}_span_off")
        sl = slice(int(off[subject]), int(off[subject + 1]))
        return getattr(self, f"{prefix}_span_start")[sl], getattr(self, f"{prefix}_span_end")[sl]

    def read_ahead(self, names: tuple[str, ...] = READ_AHEAD) -> int:
        """Brings ``names`` into the page cache: a few large sequential reads instead of a
        small one at each place a view looks. A chunk at a time, each waited for (its last
        byte read): the views' own reads meanwhile queue behind one chunk, not behind the
        whole job, as when it is all asked at once (viewports took 65 ms, not 41). Nothing is
        copied, and a file already cached costs nothing. Only the files on this machine (from
        a bucket, a view fetches what it reads). Returns the bytes asked for."""
        asked = 0
        for name in names:
            path = self.store.on_disk(self._path(name))
            if path is None:
                continue
            with contextlib.suppress(OSError), open(path, "rb", buffering=0) as f:
                fd = f.fileno()
                size = os.fstat(fd).st_size
                for offset in range(0, size, _READ_AHEAD_CHUNK):
                    os.posix_fadvise(fd, offset, _READ_AHEAD_CHUNK, os.POSIX_FADV_WILLNEED)
                    os.pread(fd, 1, min(offset + _READ_AHEAD_CHUNK, size) - 1)
                asked += size
        return asked

    def release_pages(self) -> None:
        """Let go of the pages of the index this process has read (they stay in the page cache,
        and come back on the next read): a whole-job pass, like an export, then leaves the
        process's resident size where it was."""
        for mapped in self._maps:
            mapped.madvise(mmap.MADV_DONTNEED)

    @cached_property
    def lane_columns(self) -> LaneColumns:
        lanes = self.lanes

        def column(field: str, dtype=np.int64) -> np.ndarray:
            return np.fromiter(map(attrgetter(field), lanes), dtype=dtype, count=len(lanes))

        kinds = {kind: code for code, kind in enumerate(_LANE_KINDS)}
        return LaneColumns(
            kind=np.fromiter(
                map(kinds.__getitem__, map(attrgetter("kind"), lanes)), np.int8, len(lanes)
            ),
            pid=column("pid"),
            tid=column("tid"),
            n_events=column("n_events"),
            start_ns=column("start_ns"),
            end_ns=column("end_ns"),
        )

    @cached_property
    def reader(self) -> TimelineReader:
        return TimelineReader(self.store.folder())

    @cached_property
    def strings(self) -> list[str]:
        return pq.read_table(self.store.file(STRINGS_FILE)).column("value").to_pylist()

    @cached_property
    def group_starts(self) -> np.ndarray:
        """First store row of each Parquet row group (one more at the end)."""
        meta = self.reader.events.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        return np.r_[0, np.cumsum(sizes)].astype(np.int64)

    @cached_property
    def lowered_strings(self) -> list[str]:
        return [s.lower() for s in self.strings]


def open_index(store: StoreFiles | str | Path) -> PartIndex:
    """The index of a store, built first when missing or older than the store."""
    store = store if isinstance(store, StoreFiles) else StoreFiles(store)
    ensure_index(store.folder())
    return open_built_index(store)


def open_built_index(store: StoreFiles) -> PartIndex:
    """The index the worker built; IndexNotBuilt when it is missing or older than the store."""
    folder = _built_folder(store)
    if folder is None:
        raise IndexNotBuilt(store)
    return PartIndex(store, folder)


class IndexNotBuilt(Exception):
    """A store from before indexes were built at ingest (or before this index version)."""


def ensure_index(store_dir: str | Path) -> bool:
    """Builds the index of the store in the folder ``store_dir`` unless a fresh one exists;
    True when it built one."""
    store = StoreFiles(store_dir)
    index_dir = store.local / INDEX_DIR_NAME
    if _built_folder(store):  # the sweep's usual answer: no lock taken
        return False
    # Two workers may index one store at once (a reprocess, a sweep): one builds it, under a
    # lock the other waits on, because swapping in a second build would take the files from
    # under a process opening the first.
    lock_path = index_dir.with_name(f".{index_dir.name}.lock")
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fresh(store, INDEX_DIR_NAME):
            return False
        build_index(store.local, index_dir)
        shutil.rmtree(store.local / LEGACY_INDEX_DIR_NAME, ignore_errors=True)
        return True


def index_built(store: StoreFiles) -> bool:
    return _built_folder(store) is not None


def _built_folder(store: StoreFiles) -> str | None:
    """The store's folder holding a fresh index, if any."""
    for folder in (INDEX_DIR_NAME, LEGACY_INDEX_DIR_NAME):
        if _fresh(store, folder):
            return folder
    return None


def _fresh(store: StoreFiles, folder: str) -> bool:
    try:
        head = msgspec.json.decode(store.file(f"{folder}/meta.json").read_bytes(), type=_MetaHead)
    except FileNotFoundError:
        return False
    if head.version != INDEX_VERSION:
        return False
    # A store kept in a bucket never changes once its index is built beside it.
    return store.key is not None or signature_matches(head.signature, store.local)
