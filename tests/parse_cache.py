"""A file the tests parse again in one run gets the first parse's store and results, copied.

Tests build their jobs from a few shared traces, and a transactional test's rows go with it,
so the same trace is parsed by test after test. The two costly steps of a parse depend on their
input alone: ``ingest_trace`` on the file's bytes, its kind and the limits, ``build_products``
on the store's files. ``same_input_parsed_once`` makes each of them run once per input in a run
(each xdist process keeps its own copies); everything else of the parse (the claim, the
analyses, the rows saved) runs every time.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from profiler_app.ingest import logic
from profiler_app.traces import IngestResult

_FOLDER = Path(tempfile.mkdtemp(prefix="parse-cache-"))
atexit.register(shutil.rmtree, _FOLDER, True)
_results: dict[str, IngestResult] = {}


def _file_digest(path: Path, digest=None):
    digest = digest or hashlib.sha256()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        _file_digest(path, digest)
    return digest.hexdigest()


def _copy_over(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)


def _ingest_trace(original):
    def parse(path, kind, store_dir, limits, progress=None, executor=None, workers=0):
        key = hashlib.sha256(
            f"{_file_digest(Path(path)).hexdigest()} {kind} {limits!r}".encode()
        ).hexdigest()
        kept = _FOLDER / f"parse-{key}"
        if key not in _results:
            result = original(path, kind, store_dir, limits, progress, executor, workers)
            shutil.copytree(store_dir, kept)
            _results[key] = copy.deepcopy(result)
        else:
            _copy_over(kept, Path(store_dir))
        result = copy.deepcopy(_results[key])
        return replace(result, store=replace(result.store, directory=Path(store_dir)))

    return parse


def _build_products(original):
    def build(store_dir: Path) -> None:
        kept = _FOLDER / f"products-{_folder_digest(store_dir)}"
        if kept.exists():
            _copy_over(kept, store_dir)
            return
        original(store_dir)
        shutil.copytree(store_dir, kept)

    return build


@contextmanager
def same_input_parsed_once() -> Iterator[None]:
    """While it lasts, the ingest's two costly steps answer an input they met before with
    their first answer (the test's own thread only: a worker process is untouched)."""
    ingest_trace, build_products = logic.ingest_trace, logic.build_products
    logic.ingest_trace = _ingest_trace(ingest_trace)
    logic.build_products = _build_products(build_products)
    try:
        yield
    finally:
        logic.ingest_trace, logic.build_products = ingest_trace, build_products
