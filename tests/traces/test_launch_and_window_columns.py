"""The event model's ``launch`` and ``in_complete_steps`` columns against the raw trace, on every
shared trace (each Kineto file, the H200 job's torch.profiler trace and its collector chunks),
and what the launch pairs and the complete-steps window read of them.

The expected values are worked out here from the raw JSON (or a chunk's own columns): which host
call each GPU op shares its correlation id with, and which events come before the host's last
ProfilerStep (GPU ops: whose call does)."""

from __future__ import annotations

import re
import tarfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from profiler_app.analysis.events import BLOCKING_CALL, RankTrace
from profiler_app.traces import ingest_trace
from profiler_app.traces.model import EventBatch
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.timeline_store import TimelineWriter
from tests.traces.expected import DATA, LEGACY_CATEGORIES, TRACES, expected, ns, raw_trace
from tracefmt.chunk import read_chunk
from tracefmt.columns import EVENT_COLUMNS
from tracefmt.kinds import EventKind

H200 = "h200_resnet50_collector_2026-11-26.tar.gz"
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")
# Kineto's categories as the store's kinds.
KINDS = {
    "cpu_op": EventKind.CPU_OP,
    "user_annotation": EventKind.USER_ANNOTATION,
    "gpu_user_annotation": EventKind.GPU_USER_ANNOTATION,
    "cuda_runtime": EventKind.CUDA_RUNTIME,
    "cuda_driver": EventKind.CUDA_DRIVER,
    "kernel": EventKind.KERNEL,
    "gpu_memcpy": EventKind.GPU_MEMCPY,
    "gpu_memset": EventKind.GPU_MEMSET,
}
GPU_OPS = {EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET, EventKind.CUDA_SYNC}
CALLS = {EventKind.CUDA_RUNTIME, EventKind.CUDA_DRIVER}
ON_DEVICE = GPU_OPS | {EventKind.GPU_USER_ANNOTATION}


@dataclass(frozen=True)
class Raw:
    """One event of the raw trace, on the store's clock."""

    kind: int
    name: str
    start_ns: int
    dur_ns: int
    correlation: int

    @property
    def key(self) -> tuple[int, str, int, int]:
        return (self.kind, self.name, self.start_ns, self.dur_ns)


def kineto_events(path: Path) -> list[Raw]:
    """The X events of a Kineto trace whose category has a kind here."""
    offset = expected(str(path)).offset_ns
    found = []
    for e in raw_trace(path)["traceEvents"]:
        category = LEGACY_CATEGORIES.get(e.get("cat", ""), e.get("cat", ""))
        if category == "cpu_op" and e.get("name", "").startswith("ProfilerStep#"):
            category = "user_annotation"  # PyTorch 1.8 recorded steps as operators
        if e.get("ph") != "X" or category not in KINDS:
            continue
        correlation = int(e.get("args", {}).get("correlation", -1))
        start = ns(e["ts"]) + offset
        found.append(Raw(int(KINDS[category]), e["name"], start, ns(e["dur"]), correlation))
    return found


def chunk_events(path: Path) -> list[Raw]:
    """A collector chunk's events, from its own columns."""
    chunk = read_chunk(path)
    c = chunk.events
    names = chunk.event_names()
    return [
        Raw(int(k), str(n), int(s), int(d), int(r))
        for k, n, s, d, r in zip(
            c["ev_kind"], names, c["ev_start_ns"], c["ev_dur_ns"], c["ev_correlation"], strict=True
        )
    ]


def in_complete_steps(events: list[Raw]) -> list[Raw]:
    """The events of the complete steps: with two or more ProfilerSteps, the host's events
    before the start of its last one and the GPU ops whose call (same correlation id) started
    before it; otherwise all of them."""
    if len({e.name for e in events if PROFILER_STEP.match(e.name)}) < 2:
        return events
    last = max(
        e.start_ns for e in events if PROFILER_STEP.match(e.name) and e.kind not in ON_DEVICE
    )
    launched_before = {
        e.correlation
        for e in events
        if e.kind not in ON_DEVICE and e.correlation >= 0 and e.start_ns < last
    }
    return [
        e
        for e in events
        if (
            e.correlation in launched_before
            if e.kind in GPU_OPS and e.correlation >= 0
            else e.start_ns < last
        )
    ]


def first_ops(events: list[Raw]) -> dict[int, Raw]:
    """Each correlation id's first GPU op (by start)."""
    found: dict[int, Raw] = {}
    for e in sorted((e for e in events if e.kind in GPU_OPS), key=lambda e: e.start_ns):
        if e.correlation >= 0:
            found.setdefault(e.correlation, e)
    return found


def expected_pairs(events: list[Raw]) -> Counter:
    """(call, its first GPU op) of each runtime or driver call that launched one (not a
    blocking copy)."""
    ops = first_ops(events)
    return Counter(
        (e.name, e.start_ns, e.dur_ns, ops[e.correlation].name, ops[e.correlation].start_ns)
        for e in events
        if e.kind in CALLS and e.correlation in ops and not BLOCKING_CALL.match(e.name)
    )


def got_pairs(trace: RankTrace) -> Counter:
    pairs = trace.launch_pairs
    return Counter(
        zip(
            trace.names[pairs["call_name"]].tolist(),
            pairs["call_start_ns"].tolist(),
            pairs["call_dur_ns"].tolist(),
            trace.names[pairs["op_name"]].tolist(),
            pairs["op_start_ns"].tolist(),
            strict=True,
        )
    )


def h200_sources(folder: Path) -> list[tuple[str, Path, str]]:
    with tarfile.open(DATA / H200) as archive:
        archive.extractall(folder, filter="data")
    tb = [(f"h200 tb/{p.name}", p, "kineto") for p in sorted((folder / "tb").glob("*.json.gz"))]
    spool = sorted((folder / "spool").glob("*/*/*.pcol"))
    return tb + [(f"h200 spool/{p.name}", p, "collector") for p in spool]


SOURCES = [*TRACES, *(f"h200:{i}" for i in range(9))]


@pytest.fixture(scope="module")
def h200(tmp_path_factory) -> list[tuple[str, Path, str]]:
    sources = h200_sources(tmp_path_factory.mktemp("h200"))
    assert len(sources) == 9  # the torch.profiler trace and the spool's eight chunks
    return sources


@pytest.fixture
def part(request, ingested, h200, tmp_path_factory):
    """(raw events, store directory) of one source."""
    source = request.param
    if not source.startswith("h200:"):
        return kineto_events(DATA / source), ingested(source).store.directory
    _, path, kind = h200[int(source.split(":")[1])]
    store = tmp_path_factory.mktemp("store") / "store"
    ingest_trace(path, kind, store)
    raw = kineto_events(path) if kind == "kineto" else chunk_events(path)
    return raw, store


def store_events(store: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    reader = TimelineReader(store)
    columns = ["kind", "name", "start_ns", "dur_ns", "launch", "in_complete_steps"]
    table = reader.read_all(columns)
    c = {name: table.column(name).to_numpy() for name in columns}
    return c, np.asarray(reader.strings, dtype=object)[c["name"]]


def keys(c: dict[str, np.ndarray], names: np.ndarray, rows: np.ndarray) -> list[tuple]:
    return list(
        zip(
            c["kind"][rows].tolist(),
            names[rows].tolist(),
            c["start_ns"][rows].tolist(),
            c["dur_ns"][rows].tolist(),
            strict=True,
        )
    )


@pytest.mark.parametrize("part", SOURCES, indirect=True)
def test_the_window_column_holds_the_complete_steps_of_the_raw_trace(part):
    raw, store = part
    c, names = store_events(store)
    kinds = {e.kind for e in raw}
    known = np.flatnonzero(np.isin(c["kind"], list(kinds)))
    # Both windows: the whole trace is every event; the complete steps those the rule keeps.
    assert Counter(keys(c, names, known)) == Counter(e.key for e in raw)
    kept = known[c["in_complete_steps"][known]]
    want = in_complete_steps(raw)
    assert Counter(keys(c, names, kept)) == Counter(e.key for e in want)


@pytest.mark.parametrize("part", SOURCES, indirect=True)
def test_the_launch_column_links_each_gpu_op_and_its_call(part):
    raw, store = part
    c, names = store_events(store)
    event = keys(c, names, np.arange(len(c["kind"])))
    calls = {}
    for e in raw:
        if e.kind not in ON_DEVICE and e.correlation >= 0:
            calls.setdefault(e.correlation, e)
    ops = first_ops(raw)
    want_op_call = Counter(
        (e.key, calls[e.correlation].key)
        for e in raw
        if e.kind in GPU_OPS and e.correlation in calls
    )
    want_call_op = Counter(
        (e.key, ops[e.correlation].key)
        for e in raw
        if e.kind not in ON_DEVICE and e.correlation in ops
    )
    launch = c["launch"]
    linked = np.flatnonzero(launch >= 0)
    is_op = np.isin(c["kind"][linked], [int(k) for k in GPU_OPS])
    got = [(event[i], event[j]) for i, j in zip(linked, launch[linked], strict=True)]
    assert Counter(g for g, op in zip(got, is_op, strict=True) if op) == want_op_call
    assert Counter(g for g, op in zip(got, is_op, strict=True) if not op) == want_call_op
    # A GPU op whose call the trace does not hold (PyTorch 1.8 lost some) links nowhere.
    unlaunched = np.isin(c["kind"], [int(k) for k in GPU_OPS]) & (launch < 0)
    assert Counter(keys(c, names, np.flatnonzero(unlaunched))) == Counter(
        e.key for e in raw if e.kind in GPU_OPS and e.correlation not in calls
    )


@pytest.mark.parametrize("part", SOURCES, indirect=True)
def test_the_launch_pairs_in_both_windows_are_the_raw_traces(part):
    raw, store = part
    trace = RankTrace.from_store(0, store)
    assert got_pairs(trace) == expected_pairs(raw)
    assert got_pairs(trace.complete_steps()) == expected_pairs(in_complete_steps(raw))


def test_a_store_merged_from_spilled_runs_links_the_same_rows(ingested, tmp_path):
    """The facts the columns need are gathered from the runs merged in store order: a store
    written from many small runs, its events given in reverse, has the same columns."""
    source = ingested("gpu_training_rank0.pt.trace.json.gz").store.directory
    reader = TimelineReader(source)
    table = reader.read_all(list(EVENT_COLUMNS))
    columns = {name: table.column(name).to_numpy()[::-1].copy() for name in EVENT_COLUMNS}
    writer = TimelineWriter(tmp_path / "store", run_rows=4096)
    for first in range(0, len(columns["kind"]), 1000):
        writer.add(EventBatch({k: v[first : first + 1000] for k, v in columns.items()}))
    labels = reader.tracks.drop(columns=["first_row", "n_rows", "start_ns", "end_ns", "max_dur_ns"])
    summary = writer.finish(0, reader.strings, labels)
    assert len(writer._runs) >= 10
    again = TimelineReader(summary.directory)
    for name in ("launch", "in_complete_steps", "start_ns", "parent"):
        assert (again.column(name) == reader.column(name)).all(), name
    assert (
        summary.complete_steps_end_ns
        == ingested("gpu_training_rank0.pt.trace.json.gz").store.complete_steps_end_ns
    )
    assert (reader.column("launch") >= 0).sum() > 10_000
