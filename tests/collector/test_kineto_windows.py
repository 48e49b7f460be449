"""A chunk's Kineto windows are read by the server's one Kineto parser: real traces put into a
chunk as windows give the numbers computed from their raw JSON, less the collector's copies."""

import gzip
import io
import json
import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import collector
from profiler_app.traces import TimelineReader, ingest_trace
from profiler_app.traces.memory import MEMORY_FILE
from profiler_app.traces.part_sink import FLOWS_FILE, Limits
from tests.collector.helpers import WINDOWS_AT_2_3_AND_8_9, spool_profiler, spooled_chunks
from tests.traces.synthetic import chunk_meta
from tracefmt.chunk import KinetoWindow, empty_events, empty_samples, write_chunk
from tracefmt.kinds import EventKind, MemcpyKind

DATA = Path(__file__).parents[1] / "data"  # the fixtures every test package shares
A100 = DATA / "gpu_training_rank0.pt.trace.json.gz"
MI250 = DATA / "amd_mi250_small.json.gz"
META = chunk_meta(job="windows", torch_version="2.3")
COLUMNS = [
    "kind",
    "name",
    "start_ns",
    "dur_ns",
    "device",
    "stream",
    "correlation",
    "bytes",
    "memcpy_kind",
    "grid_x",
    "grid_y",
    "block_x",
    "registers",
    "shared_mem",
    "track",
]
PROFILER_STEP = re.compile(r"^ProfilerStep#\d+$")


def ns(value) -> int:
    return int(Decimal(str(value)) * 1000)


def chunk_with_windows(path: Path, *windows: KinetoWindow) -> Path:
    step = empty_events(1)  # the collector's own step_0
    step["ev_kind"][0], step["ev_name"][0] = EventKind.STEP, 1
    step["ev_start_ns"][0], step["ev_dur_ns"][0] = 1_700_000_000_000_000_000, 1_000_000
    write_chunk(path, META, ["", "step_0"], step, empty_samples(), windows)
    return path


def ingest(tmp_path: Path, *windows: KinetoWindow):
    chunk = chunk_with_windows(tmp_path / "c.pcol", *windows)
    result = ingest_trace(chunk, "collector", tmp_path / "store")
    reader = TimelineReader(tmp_path / "store")
    table = reader.read_all(COLUMNS).to_pydict()
    table["name"] = [reader.strings[i] for i in table["name"]]
    return result, {c: np.asarray(v) for c, v in table.items()}


@pytest.fixture(scope="module")
def a100(tmp_path_factory):
    return ingest(tmp_path_factory.mktemp("a100"), KinetoWindow(A100.read_bytes()))


@pytest.fixture(scope="module")
def a100_raw():
    return json.loads(gzip.decompress(A100.read_bytes()), parse_float=str)["traceEvents"]


def test_it_keeps_every_event_but_torch_profilers_steps(a100, a100_raw):
    result, _ = a100
    counts = result.aggregates.event_counts
    assert counts["cpu_op"] == 23910
    assert counts["cuda_runtime"] == 15329
    assert counts["kernel"] == 4350
    assert counts["gpu_memcpy"] == 1600
    assert counts["gpu_memset"] == 145
    steps = [e for e in a100_raw if e.get("ph") == "X" and PROFILER_STEP.match(e["name"])]
    assert len(steps) == 5
    assert counts["user_annotation"] == 70 - 5
    assert counts["gpu_user_annotation"] == 15
    # fwdbwd flows are kept; ac2g launch flows repeat args.correlation and are not.
    flows = [e for e in a100_raw if e.get("ph") in ("s", "f") and e["cat"] == "fwdbwd"]
    assert pq.read_table(result.store.directory / FLOWS_FILE).num_rows == len(flows) == 1810
    assert result.metadata["events_in_file"] == len(a100_raw) + 1  # and the chunk's step


def test_it_records_the_window_from_its_first_to_its_last_profiler_step(a100, a100_raw):
    result, _ = a100
    steps = [e for e in a100_raw if e.get("ph") == "X" and PROFILER_STEP.match(e["name"])]
    start = min(ns(e["ts"]) for e in steps)
    end = max(ns(e["ts"]) + ns(e["dur"]) for e in steps)
    assert result.metadata["captured_windows_ns"] == [[start, end]]


def test_it_keeps_kernel_times_streams_and_launch_geometry(a100):
    _, ev = a100
    kernel = ev["kind"] == EventKind.KERNEL
    assert int(ev["dur_ns"][kernel].sum()) == 468_153_602
    assert set(ev["stream"][kernel].tolist()) == {7}
    assert set(ev["device"][kernel].tolist()) == {0}
    first = np.flatnonzero(kernel & (ev["start_ns"] == 1712195495505582988))  # ts in µs
    assert len(first) == 1
    row = first[0]
    assert ev["name"][row].startswith(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig"
    )
    assert ev["dur_ns"][row] == 4928
    assert (ev["grid_x"][row], ev["grid_y"][row], ev["block_x"][row]) == (4, 106, 128)
    assert (ev["registers"][row], ev["shared_mem"][row]) == (30, 0)
    assert ev["correlation"][row] == 135071


def test_it_links_a_kernel_to_its_launch_by_correlation(a100):
    _, ev = a100
    launch = np.flatnonzero((ev["kind"] == EventKind.CUDA_RUNTIME) & (ev["correlation"] == 135071))
    assert len(launch) == 1
    assert ev["name"][launch[0]] == "cudaLaunchKernel"
    assert ev["start_ns"][launch[0]] == 1712195495505543140
    assert ev["device"][launch[0]] == -1


def test_it_keeps_copy_and_set_sizes_and_directions(a100):
    _, ev = a100
    copy = ev["kind"] == EventKind.GPU_MEMCPY
    memset = ev["kind"] == EventKind.GPU_MEMSET
    assert int(ev["bytes"][copy].sum()) == 512_205_160
    assert int(ev["bytes"][memset].sum()) == 287_705_000
    assert set(ev["memcpy_kind"][copy].tolist()) == {MemcpyKind.DTOD}
    assert set(ev["memcpy_kind"][memset].tolist()) == {MemcpyKind.NONE}


def test_it_places_times_on_the_unix_epoch_using_base_time(tmp_path):
    _, ev = ingest(tmp_path, KinetoWindow(MI250.read_bytes()))
    # baseTimeNanoseconds 1735632360000000000 + ts 4203669603438.301 µs (hipMemcpyWithStream)
    assert 1735632360000000000 + 4203669603438301 in ev["start_ns"].tolist()
    copy = ev["kind"] == EventKind.GPU_MEMCPY
    # ROCm states a copy's size on the runtime call that launched it.
    launched = ev["bytes"][(ev["kind"] == EventKind.CUDA_RUNTIME) & (ev["bytes"] >= 0)]
    assert launched.tolist() == [2560, 2560]
    assert ev["memcpy_kind"][copy].tolist() == [MemcpyKind.HTOD, MemcpyKind.HTOD]
    assert set(ev["device"][copy].tolist()) == {2}


def test_it_drops_the_host_copies_of_the_collectors_own_annotations_only(tmp_path, a100):
    _, every = a100
    host = every["kind"] == EventKind.USER_ANNOTATION
    name = str(every["name"][host][0])
    result, ev = ingest(tmp_path, KinetoWindow(A100.read_bytes(), (name,)))
    host_left = ev["kind"] == EventKind.USER_ANNOTATION
    assert name not in ev["name"][host_left].tolist()
    assert int(host_left.sum()) == int(host.sum()) - int((every["name"][host] == name).sum())
    gpu = ev["kind"] == EventKind.GPU_USER_ANNOTATION
    assert int(gpu.sum()) == 15
    assert result.metadata["read_warning"] == ""


def test_an_unreadable_window_is_reported_and_the_rest_is_kept(tmp_path):
    broken = KinetoWindow(gzip.compress(b'{"traceEvents": [{"ph": "X", "ts": '))
    result, ev = ingest(tmp_path, broken, KinetoWindow(MI250.read_bytes()))
    assert "Kineto window 1 of this chunk was not read" in result.metadata["read_warning"]
    assert len(result.metadata["captured_windows_ns"]) == 1
    assert (ev["kind"] == EventKind.GPU_MEMCPY).sum() == 2


def test_a_chunk_without_windows_captured_nothing(tmp_path):
    result, _ = ingest(tmp_path)
    assert result.metadata["captured_windows_ns"] == []
    assert result.metadata["chunk_version"] == 3
    assert pq.read_table(tmp_path / "store" / FLOWS_FILE).num_rows == 0


def test_a_collector_job_keeps_what_the_same_capture_keeps_as_a_trace_file(tmp_path):
    """Recorded on the CPU with torch: the [memory] events, input shapes and flows of each
    Kineto window reach the store of the collector part exactly as they reach the store of
    the same window uploaded as a trace file; the numbers come from the window's raw JSON."""
    torch = pytest.importorskip("torch")
    prof = spool_profiler(
        tmp_path / "spool",
        job_name="memory",
        server_url=None,
        cpu_operators=True,
        record_shapes=True,
        profile_memory=True,
        **WINDOWS_AT_2_3_AND_8_9,
    )
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    prof.start_profiling()
    for i in range(12):
        with collector.annotate(f"step_{i}"):
            with collector.annotate("Forward"):
                loss = model(torch.randn(8, 32)).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    prof.stop_profiling()

    chunks = spooled_chunks(tmp_path / "spool")
    windows = [(c, w) for c in chunks for w in c.kineto]
    assert len(windows) == 2  # steps 2-3 and 8-9
    seen = {"memory": 0, "shapes": 0, "flows": 0}
    for n, (chunk, window) in enumerate(windows):
        first = (2, 8)[n]
        assert set(window.annotations) == {"Forward", f"step_{first}", f"step_{first + 1}"}
        assert window.packed  # the collector's child process packed it
        text = io.BytesIO()
        window.write_trace(text, 1 << 30)
        trace = json.loads(text.getvalue(), parse_float=str)
        raw = trace["traceEvents"]
        expected = {
            "memory": sum(e.get("ph") == "i" and e.get("name") == "[memory]" for e in raw),
            "shapes": sum(
                e.get("ph") == "X" and e.get("cat") == "cpu_op" and "Input Dims" in e["args"]
                for e in raw
            ),
            "flows": sum(e.get("ph") in ("s", "f") and e.get("cat") != "ac2g" for e in raw),
        }
        (tmp_path / f"w{n}.json").write_bytes(text.getvalue())
        as_file = kept(ingest_trace(tmp_path / f"w{n}.json", "kineto", tmp_path / f"k{n}"))
        part = tmp_path / f"c{n}.pcol"
        write_chunk(part, chunk.meta, chunk.strings, chunk.events, chunk.samples, [window])
        collected = ingest_trace(part, "collector", tmp_path / f"c{n}")
        assert kept(collected) == as_file == expected
        for key, value in expected.items():
            seen[key] += value
        base = int(trace["baseTimeNanoseconds"])
        steps = [e for e in raw if e.get("ph") == "X" and PROFILER_STEP.match(e["name"])]
        assert len(steps) == 2
        span = [
            base + min(ns(e["ts"]) for e in steps),
            base + max(ns(e["ts"]) + ns(e["dur"]) for e in steps),
        ]
        assert collected.metadata["captured_windows_ns"] == [span]
    assert min(seen.values()) > 0, seen


def kept(result) -> dict[str, int]:
    """[memory] events, operators with input shapes, and flows in a part's store."""
    store = result.store.directory
    reader = TimelineReader(store)
    table = reader.read_all(["kind", "input_dims"]).to_pydict()
    shapes = sum(
        k == EventKind.CPU_OP and d >= 0
        for k, d in zip(table["kind"], table["input_dims"], strict=True)
    )
    return {
        "memory": pq.read_table(store / MEMORY_FILE).num_rows,
        "shapes": shapes,
        "flows": pq.read_table(store / FLOWS_FILE).num_rows,
    }


def test_a_window_that_expands_past_the_chunks_budget_is_refused(tmp_path):
    bomb = KinetoWindow(gzip.compress(b'{"traceEvents": [' + b" " * (8 << 20) + b"]}", 1))
    chunk = chunk_with_windows(tmp_path / "c.pcol", bomb, KinetoWindow(MI250.read_bytes()))
    limits = Limits(min_chunk_budget_bytes=4 << 20, max_chunk_expansion=2)
    result = ingest_trace(chunk, "collector", tmp_path / "store", limits=limits)
    assert "Kineto window 1 of this chunk was not read" in result.metadata["read_warning"]
    assert "larger than" in result.metadata["read_warning"]
    assert len(result.metadata["captured_windows_ns"]) == 1


def test_a_jobs_profiling_sessions_share_one_packing_child_until_it_finishes(tmp_path):
    """Stopping and starting profiling again (a session per epoch) keeps the child that packs
    the windows: its start-up is paid once a job, not once a session; ``finish`` ends it."""
    torch = pytest.importorskip("torch")
    prof = spool_profiler(
        tmp_path / "spool",
        job_name="sessions",
        server_url=None,
        cpu_operators=True,
        kineto_skip_first_steps=0,
        kineto_warmup_steps=0,
        kineto_active_steps=1,
        kineto_wait_steps=2,  # a window at steps 0 and 3: one in each session
    )
    model = torch.nn.Linear(16, 4)
    children = []
    for session in range(2):
        prof.start_profiling()
        for i in range(3 if session == 0 else 2):  # steps 0-2, then 3-4
            with collector.annotate(f"step_{3 * session + i}"):
                model(torch.randn(4, 16)).sum().backward()
        prof.stop_profiling()
        child = prof._packer._proc
        assert child is not None and child.poll() is None  # still there for the next session
        children.append(child.pid)
    windows = [w for c in spooled_chunks(tmp_path / "spool") for w in c.kineto]
    # (The window opened as step 2 ended is cut by the stop, before any step of its own.)
    assert [w.annotations for w in windows if w.annotations] == [("step_0",), ("step_3",)]
    assert all(w.packed for w in windows)
    assert children[0] == children[1]
    prof.finish()
    assert prof._packer._proc is None and child.wait(timeout=60) == 0


def host_rows_by_tid(store: Path) -> dict[int, int]:
    tracks = TimelineReader(store).tracks
    host = tracks[~tracks["on_device"]]
    return dict(zip(host["tid"].tolist(), host["n_rows"].tolist(), strict=True))


def test_a_first_windows_thread_alias_lands_on_the_os_thread(tmp_path, a100):
    """Kineto's first window can name a thread it has not registered by the low 32 bits of its
    pthread_t (the H200 spool's training thread: 421007040, later 574). The chunk's thread_ids
    say whose alias it is, and its events join the OS thread's track."""
    alias = 421_007_040
    doc = json.loads(gzip.decompress(A100.read_bytes()))
    for event in doc["traceEvents"]:
        if event.get("tid") == 1102:  # the A100 trace's training thread
            event["tid"] = alias
    window = KinetoWindow(gzip.compress(json.dumps(doc).encode()))
    plain = host_rows_by_tid(a100[0].store.directory)

    def ingested(meta: dict, name: str) -> dict[int, int]:
        path = tmp_path / f"{name}.pcol"
        step = empty_events(1)
        step["ev_kind"][0], step["ev_name"][0] = EventKind.STEP, 1
        step["ev_start_ns"][0], step["ev_dur_ns"][0] = 1_700_000_000_000_000_000, 1_000_000
        write_chunk(path, meta, ["", "step_0"], step, empty_samples(), [window])
        ingest_trace(path, "collector", tmp_path / name)
        return host_rows_by_tid(tmp_path / name)

    unmapped = ingested(META, "unmapped")
    assert unmapped[alias] == plain[1102] and 1102 not in unmapped
    mapped = ingested({**META, "thread_ids": {str(alias): 1102}}, "mapped")
    assert mapped == plain
    # A malformed entry is left out, not a failed part.
    odd = ingested({**META, "thread_ids": {str(alias): 1102, "x": 5, "7": "y"}}, "odd")
    assert odd == plain


def test_the_collector_names_each_python_threads_alias(tmp_path):
    """The chunk's thread_ids hold this process's threads by the low 32 bits of their
    pthread_t (from libc here, not from Python's threading), signed, to their OS ids."""
    import ctypes
    import threading

    from collector.chunker import kineto_thread_ids

    libc = ctypes.CDLL(None)
    libc.pthread_self.restype = ctypes.c_ulong
    low = libc.pthread_self() & 0xFFFFFFFF
    alias = ctypes.c_int32(low).value
    ids = kineto_thread_ids()
    if 0 <= alias < 1 << 22:
        assert str(alias) not in ids  # could be a real thread id: never mapped
    else:
        assert ids[str(alias)] == threading.get_native_id()
    assert all(not (0 <= int(a) < 1 << 22) for a in ids)
