import gzip
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime

import numpy as np
import pytest

from collector.cli import _assign_ranks, main
from collector.spool import JOB_FILE, LEDGER_FILE, ProcessSpool
from collector.trace_files import describe, find_traces
from tests.h200 import unpack
from tracefmt.chunk import ChunkFormatError, chunk_written_at

from .helpers import DATA, REPO, python


def test_it_reads_the_rank_from_distributed_info():
    info = describe(DATA / "multirank_sampled" / "rank-1.json.gz")
    assert (info.rank, info.rank_from, info.world_size) == (1, "distributedInfo", 128)
    assert info.host_name is None


def test_it_reads_the_rank_from_the_file_name_and_the_host_name(tmp_path):
    path = tmp_path / "worker_rank3.1700000000.pt.trace.json"
    path.write_text(json.dumps({"host_name": "gpu-9", "traceEvents": []}))
    info = describe(path)
    assert (info.rank, info.rank_from, info.host_name) == (3, "file name", "gpu-9")


def test_it_finds_distributed_info_after_the_events(tmp_path):
    path = tmp_path / "late.json.gz"
    with gzip.open(path, "wt") as fh:
        fh.write('{"traceEvents": [' + ",".join(['{"ph": "X"}'] * 200_000) + "], ")
        fh.write('"distributedInfo": {"backend": "gloo", "rank": 5, "world_size": 8}}')
    assert describe(path).rank == 5


def test_it_finds_traces_in_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.pt.trace.json.gz").write_bytes(b"")
    (tmp_path / "a" / "notes.txt").write_text("")
    (tmp_path / "b.json").write_text("{}")
    found = find_traces([tmp_path / "a", tmp_path / "b.json"])
    assert [p.name for p in found] == ["x.pt.trace.json.gz", "b.json"]


def test_it_finds_xplane_profiles_in_tensorboards_layout(tmp_path):
    """JAX writes <host>.xplane.pb and the same events as <host>.trace.json.gz: one is sent."""
    run = tmp_path / "plugins" / "profile" / "2026_11_28_12_52_54"
    run.mkdir(parents=True)
    for name in ("node-7.xplane.pb", "node-7.trace.json.gz", "other.trace.json.gz"):
        (run / name).write_bytes(b"")
    found = find_traces([tmp_path])
    assert [p.name for p in found] == ["node-7.xplane.pb", "other.trace.json.gz"]
    info = describe(run / "node-7.xplane.pb")
    assert (info.host_name, info.rank, info.rank_from) == ("node-7", None, "")
    assert describe(run.parent / "rank-3.xplane.pb").rank == 3


def test_files_without_a_rank_take_the_free_ranks(tmp_path, capsys):
    known = describe(DATA / "multirank_sampled" / "rank-1.json.gz")
    unknown = tmp_path / "trace.json"
    unknown.write_text('{"traceEvents": []}')
    assert _assign_ranks([describe(unknown), known], None) == [0, 1]
    assert "trace.json has no rank; using rank 0" in capsys.readouterr().err


def test_it_needs_a_server_to_upload(monkeypatch, capsys):
    monkeypatch.delenv("PROFILER_SERVER_URL", raising=False)
    assert main(["upload", str(DATA / "multirank_sampled"), "--job", "x"]) == 2
    assert "no server: pass --server or set PROFILER_SERVER_URL" in capsys.readouterr().err


def test_flush_says_when_there_is_nothing_to_do(tmp_path, capsys):
    assert main(["flush", "--spool", str(tmp_path / "empty")]) == 0
    assert "nothing to flush" in capsys.readouterr().err


def test_the_cli_explains_itself():
    done = subprocess.run(
        [python(), "-m", "collector.cli", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0
    assert "upload existing PyTorch profiler traces (*.pt.trace.json[.gz])" in done.stdout
    assert "profiler-collect flush" in done.stdout
    assert "$PROFILER_SERVER_URL" in done.stdout


def test_a_spool_says_when_its_process_last_recorded_something(tmp_path):
    """The newest readable waiting chunk's creation time; with none, the ledger's last write
    (the last upload), else the job file's; nothing at all: None."""
    spool = ProcessSpool(tmp_path / "job" / "algo-1-r0-p7")
    assert spool.last_recorded_at() is None
    spool.create()
    spool.write_job({"job": {"name": "job"}})
    os.utime(spool.path / JOB_FILE, (1_700_000_000, 1_700_000_000))
    assert spool.last_recorded_at() == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    spool.mark_uploaded(None, "0" * 64)
    os.utime(spool.path / LEDGER_FILE, (1_700_000_100, 1_700_000_100))
    assert spool.last_recorded_at() == datetime(2023, 11, 14, 22, 15, tzinfo=UTC)
    chunks = sorted((unpack(tmp_path / "h200") / "spool").glob("*/*/*.pcol"))
    for chunk in chunks[:2]:
        shutil.copy(chunk, spool.path)
    # The second chunk's meta.created_ns, 1795671583498635121, to the microsecond.
    assert spool.last_recorded_at() == datetime(2026, 11, 26, 5, 39, 43, 498635, tzinfo=UTC)
    with (spool.path / "zz-000008.pcol").open("wb") as bare:  # a numpy array, not an archive
        np.save(bare, np.arange(3))
    (spool.path / "zz-000009.pcol").write_bytes(b"PK\x03\x04 cut short")  # unreadable: skipped
    assert spool.last_recorded_at() == datetime(2026, 11, 26, 5, 39, 43, 498635, tzinfo=UTC)
    # A chunk whose created_ns lies past any date a clock gives (garbled): skipped too.
    with np.load(chunks[1]) as npz:
        arrays = dict(npz)
    meta = json.loads(arrays["meta"].tobytes())
    arrays["meta"] = np.frombuffer(json.dumps({**meta, "created_ns": 10**25}).encode(), np.uint8)
    with (spool.path / "zz-000010.pcol").open("wb") as garbled:
        np.savez(garbled, **arrays)
    with pytest.raises(ChunkFormatError, match="'created_ns' .* is not a time"):
        chunk_written_at(spool.path / "zz-000010.pcol")
    assert spool.last_recorded_at() == datetime(2026, 11, 26, 5, 39, 43, 498635, tzinfo=UTC)
