"""The Kineto converter against real traces; expected numbers were computed from the raw JSON."""

from pathlib import Path

import numpy as np
import pytest

from collector.kineto_convert import convert_events, host_pid, load_trace, us_to_ns
from tracefmt.kinds import EventKind, MemcpyKind
from tracefmt.names import memcpy_kind
from tracefmt.strings import StringTable

DATA = Path(__file__).parents[1] / "data"  # the fixtures every test package shares


@pytest.fixture(scope="module")
def a100():
    strings = StringTable()
    trace = load_trace(DATA / "gpu_training_rank0.pt.trace.json.gz")
    return convert_events(trace, strings), strings


def test_it_keeps_every_complete_event_of_a_known_category(a100):
    cols, _ = a100
    counts = np.bincount(cols["ev_kind"], minlength=len(EventKind))
    assert counts[EventKind.CPU_OP] == 23910
    assert counts[EventKind.CUDA_RUNTIME] == 15329
    assert counts[EventKind.KERNEL] == 4350
    assert counts[EventKind.GPU_MEMCPY] == 1600
    assert counts[EventKind.GPU_MEMSET] == 145
    assert counts[EventKind.USER_ANNOTATION] == 70
    assert counts[EventKind.GPU_USER_ANNOTATION] == 15
    assert len(cols["ev_kind"]) == 45419  # everything but the "Trace" span and flow events


def test_it_keeps_kernel_times_streams_and_launch_geometry(a100):
    cols, strings = a100
    kernel = cols["ev_kind"] == EventKind.KERNEL
    assert int(cols["ev_dur_ns"][kernel].sum()) == 468_153_602
    assert set(cols["ev_stream"][kernel].tolist()) == {7}
    assert set(cols["ev_device"][kernel].tolist()) == {0}
    first = np.flatnonzero(kernel)[0]
    assert strings.strings[cols["ev_name"][first]].startswith(
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig"
    )
    assert cols["ev_start_ns"][first] == 1712195495505582988  # ts 1712195495505582.988 µs
    assert cols["ev_dur_ns"][first] == 4928
    assert cols["ev_grid"][first].tolist() == [4, 106, 1]
    assert cols["ev_block"][first].tolist() == [128, 1, 1]
    assert cols["ev_registers"][first] == 30
    assert cols["ev_shared_mem"][first] == 0
    assert cols["ev_pid"][first] == 1102 and cols["ev_tid"][first] == -1


def test_it_links_a_kernel_to_its_launch_by_correlation(a100):
    cols, strings = a100
    first = np.flatnonzero(cols["ev_kind"] == EventKind.KERNEL)[0]
    launch = np.flatnonzero(
        (cols["ev_kind"] == EventKind.CUDA_RUNTIME) & (cols["ev_correlation"] == 135071)
    )
    assert cols["ev_correlation"][first] == 135071
    assert len(launch) == 1
    assert strings.strings[cols["ev_name"][launch[0]]] == "cudaLaunchKernel"
    assert cols["ev_tid"][launch[0]] == 1102
    assert cols["ev_start_ns"][launch[0]] == 1712195495505543140
    assert cols["ev_device"][launch[0]] == -1


def test_it_keeps_copy_and_set_sizes_and_directions(a100):
    cols, _ = a100
    copy = cols["ev_kind"] == EventKind.GPU_MEMCPY
    memset = cols["ev_kind"] == EventKind.GPU_MEMSET
    assert int(cols["ev_bytes"][copy].sum()) == 512_205_160
    assert int(cols["ev_bytes"][memset].sum()) == 287_705_000
    assert set(cols["ev_memcpy_kind"][copy].tolist()) == {MemcpyKind.DTOD}
    assert set(cols["ev_memcpy_kind"][memset].tolist()) == {MemcpyKind.NONE}


def test_it_places_times_on_the_unix_epoch_using_base_time():
    trace = load_trace(DATA / "amd_mi250_small.json.gz")
    cols = convert_events(trace, StringTable())
    # baseTimeNanoseconds 1735632360000000000 + ts 4203669603438.301 µs (hipMemcpyWithStream)
    assert 1735632360000000000 + 4203669603438301 in cols["ev_start_ns"].tolist()


def test_it_takes_rocm_copy_sizes_from_the_runtime_call():
    cols = convert_events(load_trace(DATA / "amd_mi250_small.json.gz"), StringTable())
    copy = cols["ev_kind"] == EventKind.GPU_MEMCPY
    assert cols["ev_bytes"][copy].tolist() == [2560, 2560]
    assert cols["ev_memcpy_kind"][copy].tolist() == [MemcpyKind.HTOD, MemcpyKind.HTOD]
    assert set(cols["ev_device"][copy].tolist()) == {2}
    assert set(cols["ev_pid"][copy].tolist()) == {597913}


def test_it_finds_the_host_process():
    assert host_pid(load_trace(DATA / "multirank_sampled" / "rank-1.json.gz")) == 4045


def test_it_reads_the_copy_direction_from_the_name():
    assert memcpy_kind("Memcpy DtoH (Device -> Pageable)") == MemcpyKind.DTOH
    assert memcpy_kind("Memcpy PtoP (Device -> Device)") == MemcpyKind.PTOP
    assert memcpy_kind("Memset (Device)") == MemcpyKind.NONE


def test_it_refuses_json_that_is_not_a_trace(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="no 'traceEvents' list"):
        load_trace(path)


def test_it_converts_microsecond_text_to_exact_nanoseconds():
    assert us_to_ns("1712195495505582.988") == 1712195495505582988
    assert us_to_ns("1.0005") == 1001
    assert us_to_ns("-2.5") == -2500
    assert us_to_ns("2e-3") == 2
    assert us_to_ns(12) == 12000
    assert us_to_ns(4.928) == 4928
