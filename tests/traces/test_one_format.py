"""The collector and the server read a capture through one Kineto parser: a real
torch.profiler capture put into a chunk by the collector gives the same events as the same
capture uploaded as a Kineto trace, less torch.profiler's copies of the collector's steps."""

import importlib
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from profiler_app.traces import TimelineReader, ingest_trace
from tests.traces.expected import DATA
from tests.traces.synthetic import chunk_meta
from tracefmt.categories import CATEGORY_KINDS
from tracefmt.chunk import (
    KinetoWindow,
    empty_events,
    empty_samples,
    read_chunk,
    read_chunk_meta,
    write_chunk,
)
from tracefmt.kinds import EventKind

CAPTURE = DATA / "h100_cnn_kineto.json.gz"  # recorded on an H100 with torch.profiler
META = chunk_meta(job="same-capture", hostname="h100", pid=1, sources={"kineto": "torch"})
COMPARED = [
    "kind",
    "start_ns",
    "dur_ns",
    "device",
    "stream",
    "correlation",
    "bytes",
    "memcpy_kind",
    "input_dims",
    "collective",
    "in_nelems",
]


def events_of(store: Path) -> list[tuple]:
    reader = TimelineReader(store)
    table = reader.read_all(["name", *COMPARED]).to_pydict()
    for col in ("input_dims", "collective"):  # ids into each store's own strings
        table[col] = [reader.strings[i] if i >= 0 else None for i in table[col]]
    names = [reader.strings[i] for i in table.pop("name")]
    return sorted(zip(names, *(table[c] for c in COMPARED), strict=True))


def test_collector_and_server_paths_give_identical_events(tmp_path):
    chunk = tmp_path / "chunk.pcol"
    window = KinetoWindow(CAPTURE.read_bytes())
    write_chunk(chunk, META, [""], empty_events(), empty_samples(), [window])

    via_collector = ingest_trace(chunk, "collector", tmp_path / "collector")
    via_server = ingest_trace(CAPTURE, "kineto", tmp_path / "kineto")

    collector_events = events_of(tmp_path / "collector")
    server_events = events_of(tmp_path / "kineto")
    # This capture has no ProfilerStep#n (tests/collector/test_kineto_windows.py drops some).
    profiler_steps = [e for e in server_events if re.match(r"^ProfilerStep#\d+$", e[0])]
    assert collector_events == [e for e in server_events if e not in profiler_steps]
    assert len(collector_events) == len(server_events) - len(profiler_steps)
    counts = dict(via_server.aggregates.event_counts)
    counts["user_annotation"] -= len(profiler_steps)
    assert via_collector.aggregates.event_counts == counts


def loaded_modules(*packages: str) -> list:
    """Every module of the packages, imported (the server's apps with Django set up by pytest)."""
    found = []
    for name in packages:
        package = importlib.import_module(name)
        found.append(package)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if ".migrations" not in info.name:
                found.append(importlib.import_module(info.name))
    return found


def test_no_second_category_map_or_chunk_reader():
    """One home for the format: among every module of the server and the collector, the only
    category→kind map and the only chunk readers are tracefmt's own objects (names imported
    from it are the same objects; a copy, or a reader of its own, is a different one)."""
    modules = loaded_modules("profiler_app", "collector")
    assert len(modules) > 100
    category_maps, readers = [], []
    for module in modules:
        for name, value in vars(module).items():
            kinds = isinstance(value, dict) and any(
                isinstance(v, EventKind) for v in value.values()
            )
            if kinds and set(value) & {"cpu_op", "kernel", "gpu_memcpy"}:
                category_maps.append((module.__name__, name, value))
            if callable(value) and getattr(value, "__name__", "").startswith("read_chunk"):
                readers.append((module.__name__, name, value))
    assert all(v is CATEGORY_KINDS for *_, v in category_maps), category_maps
    assert readers and all(v in (read_chunk, read_chunk_meta) for *_, v in readers), readers
    # The server holds nothing of the collector: no module of it, nothing defined in it.
    server = [m for m in modules if m.__name__.startswith("profiler_app")]
    from_collector = [
        (m.__name__, name)
        for m in server
        for name, v in vars(m).items()
        if (
            v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None) or ""
        ).split(".")[0]
        == "collector"
    ]
    assert from_collector == []


@pytest.mark.parametrize("module", ["tracefmt.chunk", "tracefmt.categories", "tracefmt.columns"])
def test_the_format_package_needs_numpy_only(module):
    code = (
        "import sys\n"
        "for name in ('django', 'torch', 'pandas', 'pyarrow', 'msgspec', 'celery'):\n"
        "    sys.modules[name] = None\n"
        f"import {module}\n"
        "print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
