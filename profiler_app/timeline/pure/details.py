"""Everything known about one event, read back from the part's store: what the selection pane
shows, with the connected launch or run and the launch latency."""

from __future__ import annotations

import numpy as np

from profiler_app.timeline.pure.lanes import RUN_KINDS
from profiler_app.timeline.pure.query import JobTimeline
from profiler_app.timeline.pure.tree import Part
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import KIND_NAMES, MEMCPY_KIND_NAMES

# Columns holding ids into the store's strings.
_STRING_COLUMNS = ("input_types", "input_dims", "collective", "dtype", "process_group")
_INTEGER_FIELDS = (
    "device",
    "stream",
    "correlation",
    "external_id",
    "bytes",
    "registers",
    "shared_mem",
    "in_nelems",
    "out_nelems",
    "group_size",
)


class UnknownEvent(KeyError):
    pass


def parse_event_id(text: str) -> tuple[int, int]:
    """Event ids read "<part id>:<index>"."""
    part, sep, idx = text.partition(":")
    if not sep or not part.isdigit() or not idx.isdigit():
        raise UnknownEvent(text)
    return int(part), int(idx)


def index_of_store_row(part: Part, row: int) -> int:
    """The timeline index of the event at ``row`` of the part's store."""
    found = np.flatnonzero(part.index.store_row == row)
    if not len(found):
        raise UnknownEvent(f"{part.id}:@{row}")
    return int(found[0])


def _store_row(part: Part, idx: int) -> dict:
    ix = part.index
    row = int(ix.store_row[idx])
    group_starts = ix.group_starts
    group = int(np.searchsorted(group_starts, row, side="right")) - 1
    table = ix.reader.events.read_row_group(group, columns=list(EVENT_COLUMNS))
    return {c: v[0] for c, v in table.slice(row - int(group_starts[group]), 1).to_pydict().items()}


def event_fields(job: JobTimeline, part: Part, idx: int) -> dict:
    raw = _store_row(part, idx)
    strings = part.index.strings
    track, depth = job.locate(part, np.asarray([idx]))
    kind = int(raw["kind"])
    fields: dict = {
        "id": f"{part.id}:{idx}",
        "track": track[0],
        "depth": int(depth[0]),
        "part": part.id,
        "name": strings[raw["name"]] if 0 <= raw["name"] < len(strings) else "",
        "kind": KIND_NAMES.get(kind, "other"),
        "start_ns": str(raw["start_ns"]),
        "dur_ns": int(raw["dur_ns"]),
    }
    for col in _INTEGER_FIELDS:
        if raw[col] is not None and raw[col] >= 0:
            fields[col] = int(raw[col])
    if raw["memcpy_kind"]:
        fields["memcpy_kind"] = MEMCPY_KIND_NAMES.get(int(raw["memcpy_kind"]), "")
    if raw["grid_x"]:
        fields["grid"] = [int(raw[f"grid_{a}"]) for a in "xyz"]
        fields["block"] = [int(raw[f"block_{a}"]) for a in "xyz"]
    occupancy = raw["occupancy_pct"]
    if occupancy is not None and not np.isnan(occupancy):
        fields["occupancy_pct"] = float(occupancy)
    for col in _STRING_COLUMNS:
        if raw[col] is not None and 0 <= raw[col] < len(strings):
            fields[col] = strings[raw[col]]
    return fields


def event_details(job: JobTimeline, event_id: str) -> dict:
    """The event, its connected launch or run, and the launch latency between them.

    ``event_id`` is the timeline's "<part id>:<index>", or "<part id>:@<row>" with the event's
    row in the part's store (how insights findings name an event); the answer's ids are the
    timeline's."""
    part_id, sep, rest = event_id.partition(":@")
    if sep and part_id.isdigit() and rest.isdigit():
        part = job.parts.get(int(part_id))
        if part is None:
            raise UnknownEvent(event_id)
        idx = index_of_store_row(part, int(rest))
    else:
        part_id_number, idx = parse_event_id(event_id)
        part = job.parts.get(part_id_number)
    if part is None or idx >= part.index.n_events:
        raise UnknownEvent(event_id)
    event = event_fields(job, part, idx)
    partner = int(part.index.partner[idx])
    out: dict = {"event": event, "launch": None, "run": None}
    if partner < 0:
        return out
    other = event_fields(job, part, partner)
    is_run = int(part.index.kind[idx]) in {int(k) for k in RUN_KINDS}
    launch, run = (other, event) if is_run else (event, other)
    out.update(launch=launch, run=run)
    launch_start, run_start = int(launch["start_ns"]), int(run["start_ns"])
    # From the call that queued the kernel to the kernel starting, and the part of it spent
    # after the call returned (waiting in the stream's queue).
    out["launch_latency_ns"] = run_start - launch_start
    out["queue_ns"] = run_start - (launch_start + launch["dur_ns"])
    return out
