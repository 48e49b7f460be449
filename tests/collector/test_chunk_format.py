import gzip
import io
import json
import zipfile

import numpy as np
import pytest

from tracefmt.chunk import (
    EVENT_COLUMNS,
    ChunkFormatError,
    KinetoWindow,
    chunk_bytes,
    empty_events,
    empty_samples,
    read_chunk,
    write_chunk,
)
from tracefmt.kinds import EventKind, MemcpyKind, SampleKind
from tracefmt.strings import StringTable

META = {
    "job": "cnn",
    "node": "algo-1",
    "hostname": "gpu-7",
    "rank": 1,
    "local_rank": 1,
    "world_size": 2,
    "pid": 4242,
    "seq": 3,
    "final": False,
    "created_ns": 1_700_000_000_000_000_000,
    "torch_version": "2.13.0",
    "cuda": True,
    "devices": [{"index": 0, "name": "H100", "total_memory_bytes": 80 << 30}],
    "sources": {"kineto": "ok", "nvml": "ok", "psutil": "ok", "perf": "unavailable: x"},
}


def two_events(strings: StringTable) -> dict[str, np.ndarray]:
    ev = empty_events(2)
    ev["ev_kind"][:] = [EventKind.CUDA_RUNTIME, EventKind.GPU_MEMCPY]
    ev["ev_name"][:] = [strings.intern("cudaMemcpyAsync"), strings.intern("Memcpy HtoD")]
    ev["ev_start_ns"][:] = [1_000, 1_500]
    ev["ev_dur_ns"][:] = [300, 2_000]
    ev["ev_correlation"][:] = [77, 77]
    ev["ev_device"][1] = 0
    ev["ev_stream"][1] = 7
    ev["ev_bytes"][1] = 4096
    ev["ev_memcpy_kind"][1] = MemcpyKind.HTOD
    return ev


def one_sample(strings: StringTable) -> dict[str, np.ndarray]:
    s = empty_samples(1)
    s["s_kind"][0] = SampleKind.COUNTER
    s["s_device"][0] = -1
    s["s_name"][0] = strings.intern("page_faults")
    s["s_time_ns"][0] = 2_000
    s["s_value"][0] = 12.0
    return s


def test_it_round_trips_events_samples_and_meta():
    strings = StringTable()
    data = chunk_bytes(META, strings.strings, two_events(strings), one_sample(strings))
    chunk = read_chunk(data)
    assert chunk.meta == {
        "format": "profiler-app-chunk",
        "version": 3,
        **META,
        "kineto_windows": [],
    }
    assert chunk.strings == ("", "cudaMemcpyAsync", "Memcpy HtoD", "page_faults")
    assert chunk.n_events == 2 and chunk.n_samples == 1
    assert list(chunk.event_names()) == ["cudaMemcpyAsync", "Memcpy HtoD"]
    assert chunk.events["ev_bytes"].tolist() == [-1, 4096]
    assert chunk.events["ev_grid"].shape == (2, 3)
    assert chunk.samples["s_value"].tolist() == [12.0]


def test_it_is_a_plain_npz_archive_that_numpy_reads_without_pickle(tmp_path):
    strings = StringTable()
    path = tmp_path / "c.pcol"
    write_chunk(path, META, strings.strings, two_events(strings), one_sample(strings))
    with np.load(path, allow_pickle=False) as npz:
        assert set(npz.files) == {
            "meta",
            "strings",
            *EVENT_COLUMNS,
            "s_kind",
            "s_device",
            "s_name",
            "s_time_ns",
            "s_value",
        }
        assert json.loads(npz["meta"].tobytes())["seq"] == 3
    assert zipfile.ZipFile(path).infolist()[0].compress_type == zipfile.ZIP_DEFLATED


def test_it_refuses_a_wrong_dtype_with_a_readable_message():
    strings = StringTable()
    events = two_events(strings)
    events["ev_start_ns"] = events["ev_start_ns"].astype(np.float64)
    with pytest.raises(ChunkFormatError, match="'ev_start_ns' must be int64, got float64"):
        chunk_bytes(META, strings.strings, events, one_sample(strings))


def test_it_refuses_columns_of_different_lengths():
    strings = StringTable()
    events = two_events(strings)
    events["ev_dur_ns"] = events["ev_dur_ns"][:1]
    with pytest.raises(ChunkFormatError, match="'ev_dur_ns' has 1 rows, expected 2"):
        chunk_bytes(META, strings.strings, events, one_sample(strings))


def test_it_refuses_a_name_index_beyond_the_strings():
    strings = StringTable()
    events = two_events(strings)
    events["ev_name"][0] = 9
    with pytest.raises(ChunkFormatError, match="'ev_name' refers to string 9 but the chunk has 3"):
        chunk_bytes(META, strings.strings, events, empty_samples())


def two_events_chunk_of_version(version: int) -> bytes:
    """A chunk of two events whose meta says it was written in format ``version`` (the
    writer only writes the current one)."""
    strings = StringTable()
    data = chunk_bytes(META, strings.strings, two_events(strings), empty_samples())
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename == "meta.npy":
                meta = {**META, "format": "profiler-app-chunk", "version": version}
                out = io.BytesIO()
                np.save(out, np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
                body = out.getvalue()
            dst.writestr(item, body)
    return buf.getvalue()


def test_it_refuses_missing_meta_keys():
    meta = dict(META)
    del meta["rank"]
    with pytest.raises(ChunkFormatError, match="meta is missing 'rank'"):
        chunk_bytes(meta, [""], empty_events(), empty_samples())


def test_it_names_the_version_it_reads():
    with pytest.raises(
        ChunkFormatError,
        match="unsupported chunk version 4; this reader understands versions 1, 2, 3",
    ):
        read_chunk(two_events_chunk_of_version(4))


def test_it_says_when_the_bytes_are_not_a_chunk():
    with pytest.raises(ChunkFormatError, match="not a readable .npz archive"):
        read_chunk(b'{"traceEvents": []}')


def test_a_chunk_may_hold_only_samples():
    strings = StringTable()
    chunk = read_chunk(chunk_bytes(META, strings.strings, empty_events(), one_sample(strings)))
    assert chunk.n_events == 0 and chunk.n_samples == 1
    assert chunk.events["ev_grid"].shape == (0, 3)
    assert chunk.event_names().tolist() == []


def test_it_keeps_kineto_windows_as_stored_gzip_members():
    strings = StringTable()
    window = KinetoWindow(gzip.compress(b'{"traceEvents": []}'), ("Forward", "step_3"))
    data = chunk_bytes(META, strings.strings, two_events(strings), empty_samples(), [window])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        member = archive.getinfo("kineto-0.json.gz")
        assert member.compress_type == zipfile.ZIP_STORED
    chunk = read_chunk(data)
    assert chunk.kineto == (window,)
    assert chunk.meta["kineto_windows"] == [
        {"member": "kineto-0.json.gz", "annotations": ["Forward", "step_3"]}
    ]


def test_it_refuses_a_window_that_is_not_gzipped_or_is_missing():
    strings = StringTable()
    with pytest.raises(ChunkFormatError, match="must be packed or gzipped JSON"):
        chunk_bytes(META, strings.strings, empty_events(), empty_samples(), [KinetoWindow(b"{}")])
    data = chunk_bytes(
        META, strings.strings, empty_events(), empty_samples(), [KinetoWindow(gzip.compress(b""))]
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w") as dst:
        for item in src.infolist():
            if item.filename != "kineto-0.json.gz":
                dst.writestr(item, src.read(item))
    with pytest.raises(ChunkFormatError, match="missing Kineto window"):
        read_chunk(buf.getvalue())


def test_it_reads_a_version_1_chunk():
    chunk = read_chunk(two_events_chunk_of_version(1))
    assert chunk.meta["version"] == 1 and chunk.kineto == () and chunk.n_events == 2
