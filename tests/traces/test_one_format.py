"""The collector and the server read a capture through one trace-format package: a real
torch.profiler capture converted by the collector and uploaded as a chunk gives the same events
as the same capture uploaded as a Kineto trace."""

import subprocess
import sys
from pathlib import Path

import pytest

from collector.kineto_convert import convert_events, load_trace
from profiler_app.traces import TimelineReader, ingest_trace
from tests.traces.expected import DATA
from tracefmt.chunk import empty_samples, write_chunk
from tracefmt.kinds import CHUNK_MAX_KIND
from tracefmt.strings import StringTable

CAPTURE = DATA / "h100_cnn_kineto.json.gz"  # recorded on an H100 with torch.profiler
COMPARED = ["kind", "start_ns", "dur_ns", "device", "stream", "correlation", "bytes", "memcpy_kind"]
META = {
    "job": "same-capture", "node": "algo-1", "hostname": "h100", "rank": 0, "local_rank": 0,
    "world_size": 1, "pid": 1, "seq": 0, "final": True, "created_ns": 0,
    "torch_version": "2.11", "cuda": True, "devices": [], "sources": {"kineto": "torch"},
}  # fmt: skip


def events_of(store: Path) -> list[tuple]:
    reader = TimelineReader(store)
    table = reader.read_all(["name", *COMPARED]).to_pydict()
    names = [reader.strings[i] for i in table.pop("name")]
    rows = zip(names, *(table[c] for c in COMPARED), strict=True)
    return sorted(row for row in rows if row[1] <= CHUNK_MAX_KIND)


def test_collector_and_server_paths_give_identical_events(tmp_path):
    strings = StringTable()
    events = convert_events(load_trace(CAPTURE), strings)
    chunk = tmp_path / "chunk.pcol"
    write_chunk(chunk, META, strings.strings, events, empty_samples())

    via_collector = ingest_trace(chunk, "collector", tmp_path / "collector")
    via_server = ingest_trace(CAPTURE, "kineto", tmp_path / "kineto")

    collector_events = events_of(tmp_path / "collector")
    server_events = events_of(tmp_path / "kineto")
    assert len(collector_events) == len(events["ev_kind"]) == 4107
    assert collector_events == server_events
    assert via_collector.aggregates.event_counts == {
        k: n for k, n in via_server.aggregates.event_counts.items() if k not in ("instant", "other")
    }


def test_no_second_category_map_or_chunk_reader():
    """One home for the format: the collector and the server only import ``tracefmt``."""
    root = Path(__file__).resolve().parents[2]
    found = subprocess.run(
        [
            "git",
            "grep",
            "-l",
            "-E",
            r'"gpu_memcpy": EventKind|def read_chunk\(',
            "--",
            "*.py",
            ":!tests",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert found == ["tracefmt/categories.py", "tracefmt/chunk.py"]
    server = subprocess.run(
        ["git", "grep", "-l", "-E", r"^\s*(from|import) collector", "--", "profiler_app"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert server == []


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
