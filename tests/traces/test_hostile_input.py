"""Hostile or broken files end in a TraceFormatError with a message a person understands."""

import gzip
import io
import json
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

from profiler_app.traces import Limits, TraceFormatError, ingest_trace, kineto
from tests.traces.expected import DATA
from tests.traces.synthetic import complete_event

EVENT = complete_event("kernel", "k", 1.5, 2.25, pid=0, tid=7, device=0, stream=7)


def trace_bytes(events, **top) -> bytes:
    return json.dumps({"schemaVersion": 1, **top, "traceEvents": events}).encode()


DEFAULT_LIMITS = Limits()


def ingest(tmp_path, data: bytes, limits: Limits = DEFAULT_LIMITS, name="t.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return ingest_trace(path, "kineto", tmp_path / "store", limits)


def refused(tmp_path, data: bytes, limits: Limits = DEFAULT_LIMITS, name="t.json") -> str:
    with pytest.raises(TraceFormatError) as caught:
        ingest(tmp_path, data, limits, name)
    assert not (tmp_path / "store").exists()
    return str(caught.value)


def test_it_refuses_a_truncated_gzip(tmp_path):
    data = (DATA / "nccl_rank0.json.gz").read_bytes()
    message = refused(tmp_path, data[: len(data) // 2], name="t.json.gz")
    assert "truncated" in message


def test_it_refuses_corrupt_gzip(tmp_path):
    data = bytearray((DATA / "nccl_rank0.json.gz").read_bytes())
    data[5000:5100] = b"\xff" * 100
    assert "gzip" in refused(tmp_path, bytes(data), name="t.json.gz")


def test_it_refuses_invalid_json(tmp_path):
    message = refused(tmp_path, b'{"traceEvents": [{"ph": "X", "ts": 1,, "dur": 1}]}')
    assert "not valid JSON" in message


def test_it_refuses_json_that_is_not_a_trace(tmp_path):
    message = refused(tmp_path, json.dumps({"model": "resnet", "epochs": [1, 2]}).encode())
    assert "not a PyTorch profiler trace" in message
    assert "traceEvents" in message


def test_it_refuses_text_that_is_not_json(tmp_path):
    assert "not a JSON trace" in refused(tmp_path, b"epoch 1 loss 0.3\n")


def test_it_refuses_an_empty_file(tmp_path):
    assert "empty" in refused(tmp_path, b"")


def test_it_refuses_a_trace_without_events(tmp_path):
    assert "no events" in refused(tmp_path, trace_bytes([]))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"ts": "yesterday"}, "'ts' must be a number"),
        ({"dur": "long"}, "Expected `float`, got `str`"),
        ({"name": 12}, "Expected `str`, got `int`"),
        ({"args": [1, 2]}, "malformed args"),
        ({"args": {"stream": [7]}}, "malformed args"),
    ],
)
def test_it_refuses_wrong_types(tmp_path, change, words):
    events = [EVENT, {**EVENT, **change}]
    message = refused(tmp_path, trace_bytes(events))
    assert words in message
    assert "event #1" in message


def test_it_refuses_an_event_that_is_not_an_object(tmp_path):
    assert "event #1" in refused(tmp_path, trace_bytes([EVENT, 42]))


@pytest.mark.parametrize("dur", ["-5", "NaN", "1e999"])
def test_it_refuses_negative_or_non_finite_durations(tmp_path, dur):
    text = trace_bytes([EVENT, {**EVENT, "dur": 123456789}])
    message = refused(tmp_path, text.replace(b"123456789", dur.encode()))
    assert any(words in message for words in ("invalid duration", "not valid JSON", "out of range"))


def test_it_refuses_negative_durations_with_the_event_number(tmp_path):
    message = refused(tmp_path, trace_bytes([EVENT, EVENT, {**EVENT, "dur": -3}]))
    assert "event #2 has an invalid duration" in message


def test_it_refuses_10000_deep_nesting_in_args(tmp_path):
    deep = b"[" * 10_000 + b"]" * 10_000
    text = trace_bytes([EVENT, {**EVENT, "args": {"x": "DEEP"}}]).replace(b'"DEEP"', deep)
    assert "nested too deeply" in refused(tmp_path, text)


def test_it_refuses_gigabytes_of_zeros_quickly(tmp_path):
    member = zlib.compress(b"\0" * (1 << 20), wbits=31)
    path = tmp_path / "zeros.json.gz"
    with path.open("wb") as f:
        for _ in range(3072):  # 3 GiB once decompressed, 3 MB on disk
            f.write(member)
    with pytest.raises(TraceFormatError, match="not a JSON trace"):
        ingest_trace(path, "kineto", tmp_path / "store")


def test_it_refuses_a_sparse_file_of_zeros(tmp_path):
    path = tmp_path / "zeros.json"
    with path.open("wb") as f:
        f.truncate(4 << 30)
    with pytest.raises(TraceFormatError, match="not a JSON trace"):
        ingest_trace(path, "kineto", tmp_path / "store")


def test_it_stops_a_gzip_bomb_at_the_configured_limit(tmp_path):
    events = (json.dumps(EVENT) + ", ").encode() * 20_000  # ~2.6 MB, compresses ~1000x
    path = tmp_path / "bomb.json.gz"
    with path.open("wb") as f:
        f.write(gzip.compress(b'{"traceEvents": ['))
        member = gzip.compress(events)
        for _ in range(400):  # ~1 GB once decompressed
            f.write(member)
    with pytest.raises(TraceFormatError, match="configured limit"):
        ingest_trace(path, "kineto", tmp_path / "store", Limits(max_decompressed_bytes=30 << 20))


def repeated_key_in_values(n: int) -> bytes:
    """The issue's crafted header: the key repeated n times where it is no key (invalid)."""
    return (
        b'{"x":' + b'"traceEvents":[' * n + b'"traceEvents":[' + json.dumps(EVENT).encode() + b"]}"
    )


def repeated_key_in_nested_objects(n: int) -> bytes:
    """Valid JSON: n nested objects with the key after a comma, then the real events."""
    nested = b'{"a":1,"traceEvents":[]},' * n
    return b'{"x":[' + nested + b'{}],"traceEvents":[' + json.dumps(EVENT).encode() + b"]}"


class CountingPattern:
    """A compiled pattern that adds up how many bytes its searches and matches went over."""

    def __init__(self, pattern) -> None:
        self.pattern, self.scanned = pattern, 0

    def _counted(self, found, buf, pos: int):
        self.scanned += (found.end() if found else len(buf)) - pos
        return found

    def search(self, buf, pos: int = 0):
        return self._counted(self.pattern.search(buf, pos), buf, pos)

    def match(self, buf, pos: int = 0):
        return self._counted(self.pattern.match(buf, pos), buf, pos)


def parse_scanning(monkeypatch, tmp_path, data: bytes) -> tuple[int, str]:
    """(bytes the header scan went over, the outcome): a count, not a time, so a busy machine
    cannot change it."""
    patterns = [CountingPattern(getattr(kineto, name)) for name in SCAN_PATTERNS]
    for name, pattern in zip(SCAN_PATTERNS, patterns, strict=True):
        monkeypatch.setattr(kineto, name, pattern)
    path = tmp_path / f"header-{len(data)}.json.gz"
    path.write_bytes(gzip.compress(data))
    try:
        outcome = f"{ingest_trace(path, 'kineto', path.with_suffix('.store')).store.n_events}"
    except TraceFormatError as exc:
        outcome = str(exc)
    return sum(p.scanned for p in patterns), outcome


SCAN_PATTERNS = ("_SPECIAL", "_STRING_BODY", "_SPACE")


@pytest.mark.parametrize(
    ("crafted", "n", "outcome"),
    [
        (
            repeated_key_in_values,
            160_000,
            "the trace is not valid JSON: its top-level object is malformed before 'traceEvents'",
        ),
        (repeated_key_in_nested_objects, 40_000, "1"),
    ],
)
def test_it_finds_the_events_in_time_linear_in_the_header(
    monkeypatch, tmp_path, crafted, n, outcome
):
    """The header scan looks at each byte of a crafted header about once, whatever its size (it
    was quadratic: the issue's 4.7 KB gzip of 160,000 repeated keys held a worker 46 s)."""
    for size in (n, 4 * n):
        data = crafted(size)
        scanned, got = parse_scanning(monkeypatch, tmp_path, data)
        assert got == outcome
        assert scanned <= 1.1 * len(data), (scanned, len(data))


def npy_bomb(path, declared_bytes: int, stored_bytes: int, member_name: str = "ev_kind.npy"):
    """A real collector chunk whose ``ev_kind`` array is replaced: its header declares
    ``declared_bytes``, its member (``member_name``) holds the header and ``stored_bytes``
    zeros (which compress ~1000x)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (declared_bytes,)}
    )
    real = zipfile.ZipFile(DATA / "h100_collector" / "chunk-000.pcol")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for info in real.infolist():
            if info.filename != "ev_kind.npy":
                archive.writestr(info.filename, real.read(info))
        with archive.open(member_name, "w", force_zip64=True) as member:
            member.write(header.getvalue())
            zeros = bytes(1 << 20)
            for _ in range(stored_bytes >> 20):
                member.write(zeros)
    return path


def refused_without_allocating(path) -> tuple[str, int]:
    """(the message, the peak bytes numpy and Python allocated meanwhile)."""
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError) as caught:
            ingest_trace(path, "collector", path.with_suffix(".store"))
        return str(caught.value), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_it_refuses_a_gigabyte_array_in_a_small_chunk_before_loading_it(tmp_path):
    path = npy_bomb(tmp_path / "bomb.pcol", 1 << 30, 1 << 30)
    assert path.stat().st_size < 2 << 20
    message, peak_bytes = refused_without_allocating(path)
    assert (
        message
        == "the chunk would expand to 1.07 GB, over the limit of 0.268 GB for an archive of this size"
    )
    assert peak_bytes < 16 << 20  # nothing near the declared gigabyte


def test_it_refuses_an_array_whose_header_claims_more_than_its_member_holds(tmp_path):
    path = npy_bomb(tmp_path / "forged.pcol", 1 << 30, 0)
    message, peak_bytes = refused_without_allocating(path)
    assert message == (
        "the chunk's array ev_kind.npy declares 1,073,741,824 bytes but holds 128: the archive "
        "is damaged or forged"
    )
    assert peak_bytes < 16 << 20  # nothing near the declared gigabyte


def test_it_checks_an_array_whose_member_is_named_without_npy(tmp_path):
    # numpy reads the member "ev_kind" as the array ev_kind all the same.
    path = npy_bomb(tmp_path / "unnamed.pcol", 1 << 30, 0, member_name="ev_kind")
    message, peak_bytes = refused_without_allocating(path)
    assert message == (
        "the chunk's array ev_kind declares 1,073,741,824 bytes but holds 128: the archive "
        "is damaged or forged"
    )
    assert peak_bytes < 16 << 20  # nothing near the declared gigabyte


def test_it_refuses_text_after_the_events_that_is_not_json(tmp_path):
    data = trace_bytes([EVENT])[:-1] + b', "x": }'
    assert "not valid JSON" in refused(tmp_path, data)


def test_it_reads_a_trace_cut_in_odd_places(tmp_path):
    """Slices are cut between events by pattern; names that look like a cut must not break it."""
    tricky = 'weird}, {"name'
    events = [
        {**EVENT, "ts": i, "name": tricky if i % 7 == 0 else f"k{i % 5}"} for i in range(3000)
    ]
    result = ingest(tmp_path, trace_bytes(events), Limits(chunk_bytes=4096))
    counts = result.aggregates.kernels.groupby("name")["count"].sum().to_dict()
    assert counts[tricky] == len([i for i in range(3000) if i % 7 == 0])
    assert sum(counts.values()) == 3000


def test_it_reads_the_bare_array_form_of_chrome_traces(tmp_path):
    result = ingest(tmp_path, json.dumps([EVENT, {**EVENT, "ts": 10}]).encode())
    assert result.store.n_events == 2
    assert result.aggregates.kernels["total_ns"].sum() == 4500


@pytest.mark.parametrize("first_key", [True, False])
def test_it_skips_leading_whitespace_and_a_byte_order_mark(tmp_path, first_key):
    body = json.dumps({"traceEvents": [EVENT]}).encode() if first_key else trace_bytes([EVENT])
    data = b"\xef\xbb\xbf" + b" \n" * 5000 + body
    assert ingest(tmp_path, data).store.n_events == 1


def test_it_ignores_phases_pytorch_never_writes_and_says_so(tmp_path):
    begin_end = [
        {"ph": "B", "name": "x", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 2, "pid": 1, "tid": 1},
    ]
    result = ingest(tmp_path, trace_bytes([EVENT, *begin_end]))
    assert result.store.n_events == 1
    assert result.metadata["ignored_phases"] == {"B": 1, "E": 1}
