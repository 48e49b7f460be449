"""A job's timeline: its parts' indexes arranged as a track tree, and the viewport query over it.

A viewport asks for tree node ids. An event lane answers with its rows (wide events and merged
blocks, see ``viewport``); a counter with min/max/mean per bucket; any other group with an
aggregate of everything below it (events starting per bucket and time covered), which is what a
collapsed group draws. Launch→run pairs of the wide events come along for the arrows.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure import viewport as vp
from profiler_app.timeline.pure.lanes import RUN_KINDS
from profiler_app.timeline.pure.series import Series, per_bucket
from profiler_app.timeline.pure.tree import Part, TreeNode, build_tree, nodes_made_at_once
from profiler_app.timeline.pure.viewport import RowView, Window
from profiler_app.traces.process_memory import collector_paused

MAX_FLOWS = 2000
_RUN_KIND_TABLE = np.zeros(256, dtype=bool)
_RUN_KIND_TABLE[[int(k) for k in RUN_KINDS]] = True


class UnknownTrack(KeyError):
    pass


@dataclass(frozen=True)
class LaneRows:
    node: TreeNode
    rows: list[tuple[Part, RowView]]


@dataclass(frozen=True)
class Counter:
    node: TreeNode
    mean: np.ndarray  # per bucket, NaN where there is no data
    low: np.ndarray
    high: np.ndarray


@dataclass(frozen=True)
class Aggregate:
    node: TreeNode
    lanes: int  # lanes or whole parts summed: ``busy_ns`` / lanes is their mean occupancy
    count: np.ndarray
    busy_ns: np.ndarray


@dataclass(frozen=True)
class Flows:
    """Launch→run pairs as event indexes of their part; ``total`` counts those not sent too."""

    part: np.ndarray
    launch: np.ndarray
    run: np.ndarray
    total: int


@dataclass(frozen=True)
class Viewport:
    window: Window  # of the event rows
    strip: Window  # of counters and aggregates: buckets of at least a pixel
    tracks: list[LaneRows | Counter | Aggregate]
    flows: Flows


# The tree of a job of 200,000 processes is 600,000 nodes and a few million lists and dicts,
# none of them garbage: the cyclic collector's passes over them as they were made took two thirds
# of its building time, and kept open for the job's readers they would be walked again by the
# next passes (7 s of the next request on a loaded machine), so a large tree is built with the
# collector paused and kept frozen (``collector_paused``; freed by their count of references as
# any object, once no cache holds them). Trees of fewer nodes are built with the collector
# running: its full pass before the pause costs more (0.05 s quiet, 0.3 s in a process that had
# just parsed) than they spare.
_PAUSE_OVER_NODES = 50_000


class JobTimeline:
    def __init__(self, parts: list[Part], series: Sequence[Series] = ()) -> None:
        self.parts = {p.id: p for p in parts}
        large = nodes_made_at_once(parts) > _PAUSE_OVER_NODES
        with collector_paused(keep=True) if large else nullcontext():
            self.roots = build_tree(parts, series)
            # The nodes kept: a large group's children are made when read (``node``).
            self.nodes = {n.id: n for root in self.roots for n in root.walk_made()}
            self.lane_node = {
                (p.id, lane): n.id
                for n in self.nodes.values()
                if n.data == "events"
                for p, lane in n.members
            }
        self._lazy_groups = [n.lazy for n in self.nodes.values() if n.lazy is not None]
        spans = [p.index.lane_columns for p in parts if p.index.lanes]
        self.start_ns = min((int(s.start_ns.min()) for s in spans), default=0)
        self.end_ns = max((int(s.end_ns.max()) for s in spans), default=0)
        self.origin_ns = self.start_ns

    @property
    def n_events(self) -> int:
        return sum(p.index.n_events for p in self.parts.values())

    def tree(self) -> list[dict]:
        """The tree, its large groups collapsed (see ``TreeNode.as_dict``)."""
        return [root.as_dict() for root in self.roots]

    def node(self, track_id: str) -> TreeNode:
        """The tree node of the id; one below a large group is made for the asking."""
        found = self.nodes.get(track_id)
        for group in self._lazy_groups if found is None else ():
            found = group.find(track_id)
            if found is not None:
                break
        if found is None:
            raise UnknownTrack(track_id)
        return found

    def children(self, group_id: str, offset: int, limit: int) -> tuple[int, list[dict]]:
        """(how many children the group has, ``limit`` of them from ``offset``, in tree order)."""
        node = self.node(group_id)
        page = node.child_nodes()[offset : offset + limit]
        return node.child_count(), [c.as_dict() for c in page]

    def viewport(self, window: Window, ids: list[str], width_px: int) -> Viewport:
        strip = window.coarser(width_px)
        tracks: list[LaneRows | Counter | Aggregate] = []
        for track_id in ids:
            node = self.node(track_id)
            if node.data == "events":
                rows = [
                    (part, vp.row_view(part.index, row, window))
                    for part, lane in node.members
                    for row in vp.lane_rows(part.index, lane)
                ]
                tracks.append(LaneRows(node, rows))
            elif node.data == "counter":
                tracks.append(self._counter(node, strip))
            else:
                tracks.append(self._aggregate(node, strip))
        return Viewport(window, strip, tracks, self._flows(tracks))

    def _aggregate(self, node: TreeNode, window: Window) -> Aggregate:
        """Sum of the activity below ``node``: whole parts where it holds every lane of them."""
        count = np.zeros(window.n_buckets, dtype=np.int64)
        busy = np.zeros(window.n_buckets, dtype=np.int64)
        members: dict[int, set[int]] = {}
        for part, lane in node.event_members():
            members.setdefault(part.id, set()).add(lane)
        subjects = 0
        for part_id, lanes in members.items():
            ix = self.parts[part_id].index
            whole = len(lanes) == len(ix.lanes)
            for subject in [None] if whole else sorted(lanes):
                c, b = vp.activity(ix, subject, window)
                count += c
                busy += b
                subjects += 1
        return Aggregate(node, subjects, count, busy)

    def _counter(self, node: TreeNode, window: Window) -> Counter:
        if node.series is not None:
            return Counter(
                node, *per_bucket(node.series, window.start_ns, window.k, window.n_buckets)
            )
        if node.kind == "gpu_util":
            return self._gpu_util(node, window)
        series = [self._counter(n, window) for n in node.walk() if n.kind == "gpu_util"]
        with warnings.catch_warnings():
            # A bucket where no GPU has data stays NaN; numpy warns about exactly that.
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean([s.mean for s in series], axis=0)
            low = np.nanmin([s.low for s in series], axis=0)
            high = np.nanmax([s.high for s in series], axis=0)
        return Counter(node, mean, low, high)

    def _gpu_util(self, node: TreeNode, window: Window) -> Counter:
        """Share of each bucket during which a kernel ran (NVML's definition of utilisation)."""
        device = node.info["device"]
        busy = np.zeros(window.n_buckets, dtype=np.int64)
        covered = np.zeros(window.n_buckets, dtype=bool)
        edges = window.start_ns + (np.arange(window.n_buckets + 1, dtype=np.int64) << window.k)
        # The GPU has data wherever its process recorded anything on one of its streams.
        for part in {p.id: p for p, _ in node.members}.values():
            found = vp.device_busy(part.index, device, window)
            if found is not None:
                busy += found
            lanes = [part.index.lanes[lane] for p, lane in node.members if p.id == part.id]
            lo = min(lane.start_ns for lane in lanes)
            hi = max(lane.end_ns for lane in lanes)
            covered |= (edges[1:] > lo) & (edges[:-1] < hi)
        width = float(window.bucket_ns)
        mean = np.minimum(busy / width * 100.0, 100.0)
        low = np.where(busy >= window.bucket_ns, 100.0, 0.0)
        high = np.where(busy > 0, 100.0, 0.0)
        nan = np.where(covered, 1.0, np.nan)
        return Counter(node, mean * nan, low * nan, high * nan)

    def _flows(self, tracks: list[LaneRows | Counter | Aggregate]) -> Flows:
        parts, launches, runs = [], [], []
        for track in tracks:
            if not isinstance(track, LaneRows):
                continue
            for part, row in track.rows:
                partner = np.asarray(part.index.partner[row.events])
                linked = partner >= 0
                idx, partner = row.events[linked], partner[linked]
                is_run = _RUN_KIND_TABLE[part.index.kind[idx]]
                launches.append(np.where(is_run, partner, idx))
                runs.append(np.where(is_run, idx, partner))
                parts.append(np.full(len(idx), part.id, dtype=np.int64))
        if not parts:
            empty = np.empty(0, np.int64)
            return Flows(empty, empty, empty, 0)
        pairs = np.unique(
            np.stack([np.concatenate(parts), np.concatenate(launches), np.concatenate(runs)]),
            axis=1,
        )
        total = pairs.shape[1]
        if total > MAX_FLOWS:
            run_start = np.empty(total, dtype=np.int64)
            for part_id in np.unique(pairs[0]).tolist():
                mine = pairs[0] == part_id
                run_start[mine] = self.parts[part_id].index.start[pairs[2][mine]]
            pairs = pairs[:, np.sort(np.argsort(run_start, kind="stable")[:MAX_FLOWS])]
        return Flows(pairs[0], pairs[1], pairs[2], total)

    def locate(self, part: Part, idx: np.ndarray) -> tuple[list[str], np.ndarray]:
        """(tree lane id, row depth) of each event ("" for a lane the tree does not show)."""
        ix = part.index
        row = np.searchsorted(ix.row_off, idx, side="right") - 1
        lanes = np.asarray(ix.row_lane[row])
        ids = {lane: self._lane_track(part, lane) for lane in np.unique(lanes).tolist()}
        return [ids[lane] for lane in lanes.tolist()], np.asarray(ix.row_depth[row])

    def _lane_track(self, part: Part, lane: int) -> str:
        found = self.lane_node.get((part.id, lane))
        for group in self._lazy_groups if found is None else ():
            found = group.track_of(part.id, lane)
            if found is not None:
                break
        return found or ""
