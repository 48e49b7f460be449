"""What a part's timeline store is: every file in its folder, the format version it was written
in, and where it is kept. Every writer and reader names a store's files through here.

A store's folder::

    events.parquet          every event with the event model's columns (``traces.timeline_store``)
    tracks.parquet          one row per track
    strings.parquet         the part's interned strings
    flows.parquet           the trace's flow arrows (the parse writes them: ``traces.part_sink``)
    memory.parquet          the allocator's events (the parse writes them: ``traces.memory``)
    timeline-index-v<N>/    the timeline's index (a product: ``timeline.pure.index``)
    totals.parquet          the SQL console's event totals (a product: ``sql.pure.totals``)
    store.json              the manifest: the format version and the event model's columns

The parse writes the first five; the products (``PRODUCTS``) are derived from them, once, by
the ingest before the part is done (``profiles.store_products``). The manifest comes last, so a
store that has one is whole. A store without one, or of an older format, is brought up to date
by one sweep (``profiles.store_products.upgrade_stores``); a reader never writes a store, it
reads what the store has or says it awaits the upgrade (``StoreAwaitsUpgrade``).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from profiler_app.traces.event_model import MODEL_COLUMNS

# 1: no manifest (event model columns, totals, memory or flows may be missing).
# 2: the manifest, every product built, the event model's columns named in it.
# 3: the event model's ``launch`` and ``in_complete_steps`` columns (the sweep adds them).
FORMAT_VERSION = 3

EVENTS_FILE = "events.parquet"
TRACKS_FILE = "tracks.parquet"
STRINGS_FILE = "strings.parquet"
FLOWS_FILE = "flows.parquet"
MEMORY_FILE = "memory.parquet"
TOTALS_FILE = "totals.parquet"
MANIFEST_FILE = "store.json"
# Where the writer spills sorted runs while the part is read (gone once the store is written).
SPILL_FOLDER = "runs"
# The timeline index's folder carries its version: a store in a bucket never changes, so a
# newer index goes beside the older one (whose files other machines may have cached).
INDEX_FOLDER_PREFIX = "timeline-index"

# Derived from the parse's files, in this order, by the ingest and by the sweep.
TIMELINE_INDEX = "timeline index"
SQL_TOTALS = "SQL totals"
PRODUCTS = (TIMELINE_INDEX, SQL_TOTALS)


def index_folder(version: int) -> str:
    return f"{INDEX_FOLDER_PREFIX}-v{version}"


STORES_FOLDER = "timeline"


def store_key(job_id: int, part_id: int, parse_id: str, in_bucket: bool) -> str:
    """Where a parse's store is kept: in the data directory in the part's place (a new parse
    replaces it), in a bucket under a key of its own (a store there is never rewritten)."""
    if in_bucket:
        return f"{STORES_FOLDER}/{job_id}/{part_id}/{parse_id}"
    return f"{STORES_FOLDER}/{job_id}/{part_id}"


class StoreAwaitsUpgrade(Exception):
    """The store is of an older format and lacks what was asked (the sweep will add it)."""

    def __init__(self, directory: str | Path, missing: list[str]) -> None:
        super().__init__(
            f"This part's store was written by an older version and lacks {', '.join(missing)}; "
            "it is being upgraded, try again in a few minutes."
        )
        self.directory = Path(directory)
        self.missing = missing


@dataclass(frozen=True)
class Manifest:
    format: int
    model_columns: tuple[str, ...]

    @property
    def current(self) -> bool:
        """Written in this format, with every column the event model has now."""
        return self.format >= FORMAT_VERSION and set(MODEL_COLUMNS) <= set(self.model_columns)


def read_manifest(manifest: Path) -> Manifest | None:
    """The manifest at ``manifest`` (a store's ``MANIFEST_FILE``); None for a store without one."""
    try:
        data = json.loads(manifest.read_text())
    except FileNotFoundError:
        return None
    return Manifest(int(data["format"]), tuple(data["model_columns"]))


def write_manifest(directory: Path) -> None:
    """Marks the store whole in this format (written last, whole or not at all)."""
    path = directory / MANIFEST_FILE
    staging = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    staging.write_text(json.dumps({"format": FORMAT_VERSION, "model_columns": list(MODEL_COLUMNS)}))
    os.replace(staging, path)
