"""The uploads of ``bench/soak.py`` beyond the shared traces: hostile ones (variants of every
family of broken or malicious input that ``tests/traces/test_hostile_input.py`` and
``tests/ingest/test_robustness.py`` feed the parser, over 200 in all), valid large traces (a real
one repeated with shifted timestamps) and the many-track traces of issue 31."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import random
import string
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT))
from tests.traces.synthetic import many_tracks  # noqa: E402
from tests.traces.test_hostile_input import (  # noqa: E402
    EVENT,
    npy_bomb,
    repeated_key_in_nested_objects,
    repeated_key_in_values,
    trace_bytes,
)

TRACES = [
    "cpu_only_rank34.pt.trace.json.gz",
    "amd_mi250_small.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "multirank_sampled/rank-1.json.gz",
    "h100_cnn_kineto.json.gz",
    "nccl_rank0.json.gz",
    "resnet50_pt18_workers4.pt.trace.json.gz",
    "gpu_training_rank0.pt.trace.json.gz",
]
COLLECTOR_CHUNKS = sorted((DATA / "h100_collector").glob("chunk-*.pcol"))
LARGE_SOURCE = "gpu_training_rank0.pt.trace.json.gz"


def large_trace(work: Path, copies: int) -> Path:
    """The largest shared trace ``copies`` times over, each copy a second later with its own
    ids (``bench/ingest.py``'s synthetic trace): valid, and as large as asked."""
    from ingest import synthesize

    return synthesize(DATA / LARGE_SOURCE, copies, work / f"large-x{copies}.pt.trace.json.gz")


def many_track_traces(work: Path, n: int) -> list[Path]:
    """``n`` operators each on its own thread, and each in its own process (1.1 MB gzip at
    200,000): the traces that exhausted a worker's memory."""
    return [many_tracks(work / f"{by}-{n}.json.gz", n, by) for by in ("tid", "pid")]


@dataclass
class Hostile:
    name: str
    data: bytes
    kind: str = "kineto"
    filename: str = "trace.json"
    # A resumable upload instead (POST /api/jobs/{id}/uploads/ declaring ``size_bytes``): each
    # step a PUT of (Content-Range header or None, body), or None for POST .../complete/.
    resumable: bool = False
    steps: tuple[tuple[str | None, bytes] | None, ...] = ()
    size_bytes: int = 0


def long_name(n: int, seed: int) -> str:
    return "".join(random.Random(seed).choices(string.ascii_letters, k=n))  # incompressible


def deep(depth: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    text = trace_bytes([EVENT, {**EVENT, "args": {"x": "DEEP"}}])
    return text.replace(b'"DEEP"', opener * depth + closer * depth)


def event_bomb(decompressed_mb: int) -> bytes:
    """Valid events repeated in gzip members: ~1000x smaller than what they inflate to."""
    events = (json.dumps(EVENT) + ", ").encode() * 20_000  # ~2.6 MB
    member = gzip.compress(events)
    return gzip.compress(b'{"traceEvents": [') + member * max(1, decompressed_mb * 10 // 26)


def zeros_bomb(gib: float) -> bytes:
    return zlib.compress(b"\0" * (1 << 20), wbits=31) * int(gib * 1024)


def hostile_cases(work: Path) -> Iterator[Hostile]:
    """≥ 200 cases: each family of the tests, in variants."""
    real = {name: (DATA / name).read_bytes() for name in TRACES[:6]}
    for (name, data), cut in itertools.product(
        real.items(), (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999)
    ):
        yield Hostile(f"truncated {name} at {cut:.1%}", data[: int(len(data) * cut)], filename=name)
    for (name, data), at in itertools.product(real.items(), (0.05, 0.3, 0.7)):
        broken = bytearray(data)
        start = max(20, int(len(data) * at))
        broken[start : start + 100] = b"\xff" * 100
        yield Hostile(f"corrupt gzip {name} at {at:.0%}", bytes(broken), filename=name)
    for i, text in enumerate(
        [
            b'{"traceEvents": [{"ph": "X", "ts": 1,, "dur": 1}]}',
            b'{"traceEvents": [{"ph": "X",, }]}',
            b'{"traceEvents": [',
            b'{"traceEvents": [{"ph": "X"}',
            b'{"traceEvents": }',
            b'{"traceEvents": [1, 2, 3',
            b"{",
            b"[",
            b'{"traceEvents": [], "x": }',
            trace_bytes([EVENT])[:-1] + b', "x": }',
            trace_bytes([EVENT])[:-2],
            trace_bytes([EVENT]).replace(b'"ts"', b"ts"),
            b'{"traceEvents": ["\xff\xfe"]}',
            b'{"traceEvents": [{"name": "\\ud800"}]}',
        ]
    ):
        yield Hostile(f"invalid JSON #{i}", text)
    for i, doc in enumerate(
        [
            {"lr": 0.1, "epochs": 3},
            {"model": "resnet", "epochs": [1, 2]},
            [],
            42,
            "trace",
            None,
            {"traceEvents": 7},
            {"traceEvents": "many"},
            {"traceEvents": {}},
            {"TraceEvents": []},
        ]
    ):
        yield Hostile(f"not a trace #{i}", json.dumps(doc).encode())
    for i, text in enumerate(
        [
            b"epoch 1 loss 0.3\n",
            b"\x00" * 1000,
            os.urandom(4096),
            b"PK\x03\x04garbage",
            b"\x1f\x8bnot gzip",
            b"\xef\xbb\xbf",
            b" " * 10_000,
        ]
    ):
        yield Hostile(f"not JSON #{i}", text)
    yield Hostile("empty file", b"")
    yield Hostile("empty gzip", gzip.compress(b""), filename="t.json.gz")
    yield Hostile("no events", trace_bytes([]))
    changes = [
        {"ts": "yesterday"},
        {"ts": None},
        {"ts": [1]},
        {"dur": "long"},
        {"dur": {}},
        {"name": 12},
        {"name": None},
        {"args": [1, 2]},
        {"args": {"stream": [7]}},
        {"args": {"device": "gpu"}},
        {"pid": "x"},
        {"tid": 1.5e300},
        {"ph": 5},
        {"cat": []},
    ]
    for change in changes:
        yield Hostile(f"wrong type {change}", trace_bytes([EVENT, {**EVENT, **change}]))
    for i, bad in enumerate([42, "x", None, [EVENT], True]):
        yield Hostile(f"event not an object #{i}", trace_bytes([EVENT, bad]))
    for dur in ("-5", "-1e300", "NaN", "Infinity", "1e999", "-0.5"):
        text = trace_bytes([EVENT, {**EVENT, "dur": 123456789}])
        yield Hostile(f"duration {dur}", text.replace(b"123456789", dur.encode()))
    for ts in ("1e999", "-1e300", "9223372036854775808", "NaN"):
        text = trace_bytes([EVENT, {**EVENT, "ts": 123456789}])
        yield Hostile(f"timestamp {ts}", text.replace(b"123456789", ts.encode()))
    for depth, (opener, closer) in itertools.product(
        (600, 2_000, 10_000, 100_000), ((b"[", b"]"), (b'{"a":', b"}"))
    ):
        yield Hostile(f"nesting {depth} {opener!r}", deep(depth, opener, closer))
    yield Hostile("nesting 100000 gzip", gzip.compress(deep(100_000)), filename="t.json.gz")
    for gib in (0.5, 1, 2, 4):
        yield Hostile(f"gzip of {gib} GiB zeros", zeros_bomb(gib), filename="zeros.json.gz")
    for mb in (300, 600):
        yield Hostile(f"gzip bomb of {mb} MB events", event_bomb(mb), filename="bomb.json.gz")
    for n in (10_000, 40_000, 160_000, 320_000):
        yield Hostile(
            f"repeated header x{n}", gzip.compress(repeated_key_in_values(n)), filename="h.json.gz"
        )
    for n in (10_000, 40_000):
        yield Hostile(
            f"nested repeated header x{n}",
            gzip.compress(repeated_key_in_nested_objects(n)),
            filename="h.json.gz",
        )
    annotation = {**EVENT, "cat": "user_annotation", "tid": 1}
    for where, (i, name) in itertools.product(
        ("kernel", "annotation", "traceName", "cat", "args"),
        enumerate(["nul\u0000k", "\u0000", "a\u0000" * 50]),
    ):
        if where == "kernel":
            doc = {"traceEvents": [{**EVENT, "name": name}]}
        elif where == "annotation":
            doc = {"traceEvents": [EVENT, {**annotation, "name": name}]}
        elif where == "traceName":
            doc = {"traceEvents": [EVENT], "traceName": name}
        elif where == "cat":
            doc = {"traceEvents": [EVENT, {**EVENT, "cat": name}]}
        else:
            doc = {"traceEvents": [{**EVENT, "args": {name: name, "stream": 7}}]}
        yield Hostile(f"NUL in {where} #{i}", json.dumps(doc).encode())
    for where, n in itertools.product(
        ("kernel", "annotation", "traceName"), (2_800, 8_000, 200_000)
    ):
        name = long_name(n, n)
        if where == "kernel":
            doc = {"traceEvents": [{**EVENT, "name": name}]}
        elif where == "annotation":
            doc = {"traceEvents": [EVENT, {**annotation, "name": name}]}
        else:
            doc = {"traceEvents": [EVENT], "traceName": name}
        yield Hostile(f"{n}-character name in {where}", json.dumps(doc).encode())
    for base in (2**63 - 1, 2**63, -(2**63), -1, 2**64, 4102444800 * 10**9, 1.5e300, "soon", None):
        yield Hostile(
            f"baseTimeNanoseconds {base}",
            json.dumps({"traceEvents": [EVENT], "baseTimeNanoseconds": base}).encode(),
        )
    for declared_mb, stored_mb in ((300, 300), (1024, 1024), (1024, 0), (4096, 0), (2**20, 0)):
        path = npy_bomb(
            work / f"bomb-{declared_mb}-{stored_mb}.pcol", declared_mb << 20, stored_mb << 20
        )
        yield Hostile(
            f"npy bomb {declared_mb} MB declared, {stored_mb} MB stored",
            path.read_bytes(),
            "collector",
            path.name,
        )
    chunk = COLLECTOR_CHUNKS[0].read_bytes()
    for cut in (0.1, 0.5, 0.9):
        yield Hostile(
            f"truncated chunk at {cut:.0%}",
            chunk[: int(len(chunk) * cut)],
            "collector",
            "chunk.pcol",
        )
    for name in TRACES[:3]:
        yield Hostile(f"{name} as a collector chunk", real[name], "collector", "x.pcol")
    for chunk_path in COLLECTOR_CHUNKS[:3]:
        yield Hostile(
            f"{chunk_path.name} as a kineto trace",
            chunk_path.read_bytes(),
            "kineto",
            chunk_path.name,
        )
    # Each with other bytes: the same bytes again in one job would be matched to the first part.
    for i, kind in enumerate(("", "KINETO", "nsys", "kineto\u0000", "../kineto")):
        yield Hostile(f"kind {kind!r}", trace_bytes([{**EVENT, "ts": 100 + i}]), kind)
    for i, filename in enumerate(
        [
            "a\\b.json",
            "../../etc/passwd",
            "x" * 300 + ".json",
            "new\nline.json",
            'quote".json',
            "nul\u0000.json",
            "résumé ✓.json.gz",
            ".json",
            "-",
        ]
    ):
        data = trace_bytes([{**EVENT, "ts": 200 + i}])
        yield Hostile(f"file name {filename[:20]!r}", data, filename=filename)
    yield Hostile("npz of random arrays", npz_of_random(work), "collector", "r.npz")
    yield from resumable_cases()


def resumable_cases() -> Iterator[Hostile]:
    """Odd ranges, headers and names on the resumable path; each file has other bytes."""
    files = iter(trace_bytes([{**EVENT, "ts": 300 + i}]) for i in itertools.count())

    def case(name: str, steps, filename="t.json", size: int | None = None) -> Hostile:
        data = next(files)
        plan = tuple(step(data) if callable(step) else step for step in steps)
        return Hostile(
            f"resumable: {name}",
            data,
            filename=filename,
            resumable=True,
            steps=plan,
            size_bytes=len(data) if size is None else size,
        )

    def put(start: int, stop: int | None = None, total: int | None = None, body=None):
        def step(data: bytes):
            end = len(data) if stop is None else stop
            header = f"bytes {start}-{end - 1}/{len(data) if total is None else total}"
            return header, data[start:end] if body is None else body

        return step

    whole, complete = put(0), None
    yield case("backslash file name", [whole, complete], filename="a\\b.json")
    yield case("255-character file name", [whole, complete], filename="x" * 250 + ".json")
    yield case("NUL in the file name", [whole, complete], filename="n\u0000.json")
    yield case("two halves", [put(0, 40), put(40), complete])
    yield case("one range twice", [put(0, 40), put(0, 40), put(40), complete])
    yield case("a gap", [put(40), complete])
    yield case("complete before any byte", [complete, whole, complete, complete])
    yield case("no Content-Range", [lambda d: (None, d), complete])
    yield case("malformed Content-Range", [lambda d: ("bytes 0-/7", d), complete])
    yield case("end before start", [lambda d: (f"bytes 9-3/{len(d)}", d[:7]), complete])
    yield case("another total", [put(0, total=10**9), complete])
    yield case("a range past the end", [lambda d: (f"bytes 0-{len(d)}/{len(d)}", d + b" ")])
    yield case("a body shorter than its range", [put(0, body=b"{"), complete])
    yield case("a body longer than its range", [put(0, 10, body=b"{" * 50), complete])
    yield case("declared size 0", [], size=0)
    yield case("declared size -1", [], size=-1)
    yield case("declared size 2^63", [], size=2**63)
    yield case("300-character file name", [whole, complete], filename="x" * 300)


def npz_of_random(work: Path) -> bytes:
    path = work / "random.npz"
    np.savez_compressed(path, ev_kind=np.arange(10), other=np.zeros((3, 3)))
    return path.read_bytes()
