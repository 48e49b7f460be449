"""Packed Kineto windows (chunk format 3): real traces come back exactly, in under 10 bytes per
event, old chunks still read, and hostile packed windows are refused in bounded memory."""

import gzip
import io
import json
import lzma
import re
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from collector.chunker import kineto_window
from profiler_app.traces import TimelineReader, ingest_trace
from tests.traces.synthetic import chunk_meta
from tracefmt import kineto_columns, varint
from tracefmt.chunk import (
    ChunkFormatError,
    KinetoWindow,
    chunk_bytes,
    empty_events,
    empty_samples,
    read_chunk,
)
from tracefmt.kinds import EventKind
from tracefmt.kineto_columns import PackedTraceError, pack_trace
from tracefmt.kineto_unpack import unpack_trace

DATA = Path(__file__).parents[1] / "data"
H100 = DATA / "h100_cnn_kineto.json.gz"  # torch.profiler on an H100, as the collector records
NCCL = DATA / "nccl_rank0.json.gz"
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")
META = chunk_meta(job="packed")
MB = 1 << 20


def raw_json(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def unpacked(packed: bytes, max_bytes: int = 1 << 30) -> bytes:
    out = io.BytesIO()
    assert unpack_trace(packed, out, max_bytes) == len(out.getvalue())
    return out.getvalue()


@pytest.fixture(scope="module")
def h100_packed():
    return pack_trace(raw_json(H100))


@pytest.mark.parametrize(
    "name",
    [
        "h100_cnn_kineto.json.gz",
        "nccl_rank0.json.gz",
        "cpu_memory_profile.json.gz",
        "amd_mi250_small.json.gz",
        "multirank_sampled/rank-0.json.gz",
        "cpu_only_rank34.pt.trace.json.gz",
    ],
)
def test_it_gives_back_every_field_of_every_event_exactly(name):
    """Numbers compared as the texts the trace wrote (a float64 cannot hold Kineto's unix-µs
    timestamps), strings, nesting and the order of events and keys as they were."""
    original = raw_json(DATA / name)
    back = unpacked(pack_trace(original))
    as_text = {"parse_float": str, "parse_constant": str}
    expected = json.loads(original, **as_text)
    got = json.loads(back, **as_text)
    assert got == expected
    assert [list(e) for e in got["traceEvents"]] == [list(e) for e in expected["traceEvents"]]
    assert list(got) == list(expected)


@pytest.mark.parametrize(
    "text",
    [
        b'{"traceEvents": []}',
        b'{"a": 1, "traceEvents": [], "b": [1.50, {"x": NaN}]}',
        b'{"traceEvents": [{"ph": "X", "ts": 0, "dur": 1.5, "name": "a%sb\\n", "args": [1, 2]},'
        b' {"ph": "X", "ts": 1.25, "args": {"k%d": -0.0, "big": 123456789012345678901234}},'
        b' {"ph": "i", "ts": -3.125, "pid": "Spans", "tid": 7}, {}, {}], "z": true}',
    ],
)
def test_it_gives_back_odd_json_exactly(text):
    """No events, keys after the events, NaN, mixed types in a column, negative zero, ints past
    64 bits, format characters in keys and names, events without keys."""
    as_text = {"parse_float": str, "parse_constant": str}
    assert json.loads(unpacked(pack_trace(text)), **as_text) == json.loads(text, **as_text)


def kept_events(text: bytes) -> int:
    """Complete events the server keeps of a window (as bench/collector_overhead.py counts)."""
    events = json.loads(text)["traceEvents"]
    return sum(e.get("ph") == "X" and not PROFILER_STEP.match(str(e.get("name"))) for e in events)


@pytest.mark.parametrize("trace", [H100, NCCL])
def test_a_chunk_of_a_real_window_takes_at_most_10_bytes_per_event(trace):
    text = raw_json(trace)
    chunk = chunk_bytes(
        META, [""], empty_events(), empty_samples(), [KinetoWindow(pack_trace(text))]
    )
    as_gzip = chunk_bytes(
        META, [""], empty_events(), empty_samples(), [KinetoWindow(gzip.compress(text, 6))]
    )
    events = kept_events(text)
    assert events == {H100: 4109, NCCL: 26930}[trace]
    assert len(chunk) / events <= 10
    assert len(chunk) * 3 < len(as_gzip)


def chunk_file(path: Path, window: KinetoWindow, version: int = 3) -> Path:
    """A chunk holding the collector's step_0 and ``window``, as a collector of ``version``
    wrote it (versions 2 and 3 differ only in the number and how windows may be stored)."""
    step = empty_events(1)
    step["ev_kind"][0], step["ev_name"][0] = EventKind.STEP, 1
    step["ev_start_ns"][0], step["ev_dur_ns"][0] = 1_700_000_000_000_000_000, 1_000_000
    data = chunk_bytes(META, ["", "step_0"], step, empty_samples(), [window])
    if version != 3:
        data = with_meta(data, version=version)
    path.write_bytes(data)
    return path


def with_meta(data: bytes, **changes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename == "meta.npy":
                meta = json.loads(np.load(io.BytesIO(body)).tobytes())
                out = io.BytesIO()
                np.save(out, np.frombuffer(json.dumps({**meta, **changes}).encode(), np.uint8))
                body = out.getvalue()
            dst.writestr(item, body)
    return buf.getvalue()


def stored(tmp_path: Path, chunk: Path, name: str):
    result = ingest_trace(chunk, "collector", tmp_path / name)
    reader = TimelineReader(tmp_path / name)
    cols = ["kind", "name", "start_ns", "dur_ns", "device", "stream", "correlation", "bytes"]
    table = reader.read_all(cols).to_pydict()
    table["name"] = [reader.strings[i] for i in table["name"]]
    return result, table


def test_a_packed_window_is_stored_as_the_same_window_gzipped_by_an_older_collector(
    tmp_path, h100_packed
):
    old = chunk_file(tmp_path / "v2.pcol", KinetoWindow(H100.read_bytes()), version=2)
    new = chunk_file(tmp_path / "v3.pcol", KinetoWindow(h100_packed))
    assert read_chunk(old).meta["version"] == 2 and read_chunk(new).meta["version"] == 3
    assert read_chunk(new).meta["kineto_windows"][0]["member"] == "kineto-0.kcol"
    old_result, old_events = stored(tmp_path, old, "v2")
    new_result, new_events = stored(tmp_path, new, "v3")
    assert new_events == old_events
    assert len(new_events["kind"]) > 4000
    assert new_result.metadata["captured_windows_ns"] == old_result.metadata["captured_windows_ns"]
    assert new_result.metadata["read_warning"] == old_result.metadata["read_warning"] == ""
    assert new_result.aggregates.event_counts == old_result.aggregates.event_counts


def test_the_collector_packs_a_window_in_a_child_and_gzips_what_it_cannot(tmp_path):
    trace = tmp_path / "kineto-p1-1.json"
    trace.write_bytes(raw_json(H100))
    window = kineto_window(trace, {"step_3", "Forward"})
    assert window.packed and window.annotations == ("Forward", "step_3")
    assert json.loads(unpacked(window.data), parse_float=str) == json.loads(
        trace.read_bytes(), parse_float=str
    )
    broken = tmp_path / "kineto-p1-2.json"
    broken.write_bytes(b'{"traceEvents": [{"ph": "X", "ts": ')
    fallback = kineto_window(broken, set())
    assert not fallback.packed and gzip.decompress(fallback.data) == broken.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([broken.name, trace.name])


# ---- hostile packed windows ------------------------------------------------------------------


def repack(packed: bytes, header_change=None, sections=None) -> bytes:
    """``packed`` with its header changed and/or its sections after the header replaced."""
    payload = lzma.decompress(packed[5:])
    (length,) = kineto_columns.HEADER_LEN.unpack(payload[:4])
    header = json.loads(payload[4 : 4 + length])
    rest = payload[4 + length :]
    if header_change is not None:
        header_change(header)
    if sections is not None:
        rest = sections(header)
    head = json.dumps(header).encode()
    body = kineto_columns.HEADER_LEN.pack(len(head)) + head + rest
    return packed[:5] + lzma.compress(body)


def refused(packed: bytes, match: str, max_bytes: int = 64 * MB) -> None:
    """Refused with ``match`` in its message, having allocated under 32 MB on the way."""
    tracemalloc.start()
    try:
        with pytest.raises(PackedTraceError, match=match):
            unpack_trace(packed, io.BytesIO(), max_bytes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * MB


def test_it_refuses_huge_declared_sizes_before_allocating(h100_packed):
    def events(header):
        header["events"] = 10**12

    def column(header):
        header["columns"][0]["values"] = 10**12

    def dictionary(header):
        header["dictionary_bytes"] = 10**12

    refused(repack(h100_packed, events), "declares 1,000,000,000,000 values")
    refused(repack(h100_packed, column), "declares 1,000,000,000,000 values")
    refused(repack(h100_packed, dictionary), "truncated: the dictionary declares")


def test_it_refuses_a_payload_that_decompresses_past_the_limit():
    bomb = kineto_columns.MAGIC + b"\x02" + lzma.compress(bytes(256 * MB))
    assert len(bomb) < 64 * 1024
    refused(bomb, "decompresses to more than the limit", max_bytes=8 * MB)


def packed_from(header: dict, sections: bytes) -> bytes:
    head = json.dumps(header).encode()
    body = kineto_columns.HEADER_LEN.pack(len(head)) + head + sections
    return kineto_columns.MAGIC + b"\x02" + lzma.compress(body)


def test_it_refuses_a_window_that_would_expand_past_the_limit_before_writing_it():
    """A 1 MB name used by 100,000 events: 100 GB of JSON from a few kB."""
    n = 100_000
    dictionary = b'"X"\n"' + b"n" * MB + b'"'
    header = {
        "events": n,
        "top": [["traceEvents", None]],
        "shapes": [[["ph", "name"], None]],
        "shape_bytes": n,
        "columns": [
            {"path": ["ph"], "values": n, "bytes": n, "kind": "dictionary"},
            {"path": ["name"], "values": n, "bytes": n, "kind": "dictionary"},
        ],
        "dictionary": 2,
        "dictionary_bytes": len(dictionary),
    }
    zeros, ones = varint.encode(np.zeros(n, np.int64)), varint.encode(np.full(n, 1, np.int64))
    bomb = packed_from(header, zeros + zeros + ones + dictionary)
    assert len(bomb) < 64 * 1024
    refused(bomb, r"would expand to 104,\d{3},\d{3},\d{3} bytes of JSON, over the limit of")


def test_it_refuses_differences_that_leave_the_64_bit_range():
    text = json.dumps({"traceEvents": [{"ph": "X", "ts": i} for i in range(3)]}).encode()
    packed = pack_trace(text)

    def to_delta(header):
        (ts,) = [c for c in header["columns"] if c["path"] == ["ts"]]
        ts.update(transform="delta", base=0)

    def sections(header):
        huge = varint.encode(np.array([0, 2**62, 2**62], dtype=np.int64))
        header["columns"][1]["bytes"] = len(huge)
        zeros = varint.encode(np.zeros(3, np.int64))
        return zeros + zeros + huge + b'"X"'

    refused(repack(packed, to_delta, sections), "differences that leave the 64-bit range")


def test_it_refuses_truncated_and_corrupt_windows(h100_packed):
    refused(h100_packed[: len(h100_packed) // 2], "truncated|corrupt")
    middle = len(h100_packed) // 2
    flipped = h100_packed[:middle] + bytes([h100_packed[middle] ^ 0xFF]) + h100_packed[middle + 1 :]
    refused(flipped, "corrupt")
    refused(b"KCOL\x09" + h100_packed[5:], "unknown compression 9")

    def past_dictionary(header):
        header["dictionary"] = 1

    refused(repack(h100_packed, past_dictionary), "the dictionary declares 1 texts")


def test_the_server_reports_a_hostile_window_and_keeps_the_rest_of_the_chunk(tmp_path):
    text = json.dumps({"traceEvents": [{"ph": "X", "ts": i} for i in range(3)]}).encode()
    hostile = repack(pack_trace(text), lambda h: h.update(events=10**9))
    chunk = chunk_file(tmp_path / "c.pcol", KinetoWindow(hostile))
    result, events = stored(tmp_path, chunk, "store")
    warning = result.metadata["read_warning"]
    assert "Kineto window 1 of this chunk was not read" in warning
    assert "declares 1,000,000,000 values" in warning
    assert events["name"] == ["step_0"]


def test_a_kcol_member_must_hold_a_packed_window(tmp_path, h100_packed):
    data = chunk_bytes(META, [""], empty_events(), empty_samples(), [KinetoWindow(h100_packed)])
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, b"{}" if item.filename == "kineto-0.kcol" else src.read(item))
    with pytest.raises(ChunkFormatError, match="kineto-0.kcol is not a packed window"):
        read_chunk(buf.getvalue())
    with pytest.raises(ChunkFormatError, match="kineto_windows"):
        read_chunk(with_meta(data, version=2))  # version 2 never had packed windows


def test_varints_carry_the_whole_int64_range_across_blocks():
    values = np.array([0, -1, 1, 2**63 - 1, -(2**63), 63, -64, 64, 2**62], dtype=np.int64)
    many = np.tile(values, 40_000)  # past one decoding block
    assert varint.decode(varint.encode(many), len(many)).tolist() == many.tolist()
    with pytest.raises(varint.VarintError, match="does not fit in 64 bits"):
        varint.decode(b"\xff" * 9 + b"\x02", 1)
    with pytest.raises(varint.VarintError, match="expected 2 numbers in 1 bytes, found 1"):
        varint.decode(b"\x01", 2)
