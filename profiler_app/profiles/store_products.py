"""The products of a part's timeline store (``traces.store_layout.PRODUCTS``: the timeline
index, the SQL totals) and the one sweep that brings stores of an older format up to date.

Each product belongs to the app that reads it, which says here how to build it and how to
tell that a store has it (``register``, from its ``ready``): the ingest and the pages never
import each other. The ingest builds every product of a fresh store once, in the list's order,
then writes the manifest (``build_products``). A store of an older format, or one lacking a
product, is upgraded by ``upgrade_stores`` alone (beat and each worker at start run it, as does
``manage.py upgrade_stores``); a reader never writes a store.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
from django.db import transaction

from profiler_app.core import storage
from profiler_app.core.models import PartState
from profiler_app.profiles.models import PartSummary
from profiler_app.traces.event_model import MODEL_COLUMNS
from profiler_app.traces.store_files import StoreFiles
from profiler_app.traces.store_layout import (
    EVENTS_FILE,
    MANIFEST_FILE,
    PRODUCTS,
    STRINGS_FILE,
    Manifest,
    read_manifest,
    write_manifest,
)
from profiler_app.traces.timeline_store import add_event_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Product:
    build: Callable[[Path], object]  # writes the product into the store's folder
    built: Callable[[StoreFiles], bool]  # the store has it, current (asks the bucket little)
    output: str  # the file or folder it writes, relative to the store


_products: dict[str, Product] = {}


def register(name: str, product: Product) -> None:
    if name not in PRODUCTS:
        raise ValueError(f"{name!r} is not a product of the store (store_layout.PRODUCTS)")
    _products[name] = product


def build_products(store_dir: Path) -> None:
    """Builds every product of a store the ingest just wrote, in the list's order, then its
    manifest: the part is done only once this returns."""
    for name in PRODUCTS:
        _products[name].build(store_dir)
    write_manifest(store_dir)


def manifest_of(store: StoreFiles) -> Manifest | None:
    try:
        return read_manifest(store.file(MANIFEST_FILE))
    except FileNotFoundError:  # a store from before manifests (or not in the bucket)
        return None


def needs_upgrade(store: StoreFiles) -> bool:
    """Of an older format, or lacking a product (an index of an older version, say). Reads
    the manifest and what each product's check reads, never the events."""
    manifest = manifest_of(store)
    if manifest is None or not manifest.current:
        return True
    return not all(_products[name].built(store) for name in PRODUCTS)


def upgrade_stores() -> list[int]:
    """Brings every parsed part's store to the current format: the parts upgraded."""
    upgraded = []
    for summary in PartSummary.objects.filter(part__state=PartState.DONE).order_by("part_id"):
        store = summary.store
        if not needs_upgrade(store):
            continue
        if store.key is None:
            upgrade_folder(store.folder())
        else:
            _upgrade_in_bucket(summary, store)
        upgraded.append(summary.part_id)
    return upgraded


def upgrade_folder(directory: Path) -> list[str]:
    """Upgrades the store in ``directory`` in place: the event model's columns it lacks, the
    products it lacks, then the manifest. What it built (relative paths)."""
    made = []
    if (directory / EVENTS_FILE).exists():
        if _lacks_model(directory):
            strings = pq.read_table(directory / STRINGS_FILE).column("value").to_pylist()
            add_event_model(directory, strings)  # every column ``event_model`` computes
            made.append(EVENTS_FILE)
        local = StoreFiles(directory)
        for name in PRODUCTS:
            product = _products[name]
            if not product.built(local):
                product.build(directory)
                made.append(product.output)
    write_manifest(directory)
    return [*made, MANIFEST_FILE]


def _lacks_model(directory: Path) -> bool:
    manifest = read_manifest(directory / MANIFEST_FILE)
    if manifest is not None and manifest.current:
        return False
    # Reads the footer only; ``add_event_model`` adds exactly the columns missing.
    names = pq.read_schema(directory / EVENTS_FILE).names
    return not set(MODEL_COLUMNS) <= set(names)


def _upgrade_in_bucket(summary: PartSummary, store: StoreFiles) -> None:
    """A store in a bucket never changes: new products go beside its files under new names;
    events that lack model columns make a new store under a new key, which the part's row
    then names (readers of the old one keep their cached files until it is removed)."""
    directory = store.folder()
    if not _lacks_model(directory):
        for made in upgrade_folder(directory):
            storage.stage_beside_store(directory / made, f"{store.key}/{made}")
        return
    parse_id = f"upgrade-{uuid.uuid4().hex[:12]}"
    key = storage.store_key(summary.job_id, summary.part_id, parse_id)
    incoming = storage.new_store_folder(summary.job_id, summary.part_id, parse_id)
    incoming.mkdir(parents=True)
    try:
        for path in directory.iterdir():
            if path.is_file() and not path.name.startswith("."):
                shutil.copy2(path, incoming / path.name)
        upgrade_folder(incoming)
        storage.stage_store(incoming, key)
        with transaction.atomic():
            moved = PartSummary.objects.filter(pk=summary.pk, store_path=store.key).update(
                store_path=key
            )
            if moved:
                storage.place_store(incoming, key)
    except BaseException:
        storage.discard_store(incoming, key)
        raise
    if moved:
        storage.remove_older_stores(summary.job_id, summary.part_id, keep=key)
    else:  # parsed again meanwhile: the new parse's store stands
        storage.discard_store(incoming, key)
    log.info("Part %s: store upgraded to %s", summary.part_id, key)
