"""Once a job's first view is drawn, the index arrays its views read at scattered places are
read ahead, whole, into the page cache (``PartIndex.read_ahead``): once per opened timeline,
only files on this machine (nothing fetched from a bucket for it)."""

import os
import threading

import pytest

from profiler_app.timeline import logic
from profiler_app.timeline.pure import index as index_module
from profiler_app.timeline.pure.index import READ_AHEAD, PartIndex
from profiler_app.traces.store_files import StoreFiles
from tests.timeline.test_timeline_api import tree_of

pytestmark = [pytest.mark.django_db]

TRACE = "multirank_sampled/rank-0.json.gz"


@pytest.fixture
def advised(monkeypatch) -> list[tuple[str, int, int]]:
    """Each read-ahead asked of the kernel: (file, offset, length)."""
    asked: list[tuple[str, int, int]] = []
    real = os.posix_fadvise

    def recorded(fd, offset, length, advice):
        assert advice == os.POSIX_FADV_WILLNEED
        asked.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", recorded)
    return asked


def covered(asked: list[tuple[str, int, int]], path: str) -> int:
    """Bytes of ``path`` the read-aheads cover from its start, with no hole."""
    reach = 0
    for _, offset, length in sorted(a for a in asked if a[0] == path):
        if offset > reach:
            break
        reach = max(reach, offset + length)
    return reach


def test_every_array_views_read_is_read_ahead_whole(parsed_job, advised, monkeypatch):
    job = parsed_job("read ahead", [("algo-1", 0, TRACE)])
    [part] = logic.job_timeline(job).parts.values()
    ix: PartIndex = part.index
    monkeypatch.setattr(index_module, "_READ_AHEAD_CHUNK", 4096)  # several chunks a file
    ix.read_ahead()
    for name in READ_AHEAD:
        path = os.path.realpath(ix.store.file(ix._path(name)))
        assert covered(advised, path) >= os.path.getsize(path), name
    assert {os.path.basename(a[0]) for a in advised} == {f"{n}.npy" for n in READ_AHEAD}


class NothingHere(StoreFiles):
    """A store kept elsewhere (a bucket) that this machine has not fetched."""

    def on_disk(self, name):
        return None


def test_a_store_not_on_this_machine_is_not_fetched_to_read_it_ahead(parsed_job, advised):
    job = parsed_job("elsewhere", [("algo-1", 0, TRACE)])
    [part] = logic.job_timeline(job).parts.values()
    ix = part.index
    ix.store = NothingHere(ix.store.folder())
    ix.read_ahead()
    assert advised == []


def test_a_job_s_timeline_is_read_ahead_once_after_its_first_view(api, parsed_job, monkeypatch):
    job = parsed_job("once", [("algo-1", 0, TRACE)])
    started: list[list] = []
    done = threading.Event()

    def recorded(indexes):
        started.append(indexes)
        done.set()

    monkeypatch.setattr(logic, "_read_arrays_ahead", recorded)
    body = tree_of(api, job)
    assert started == []  # opening the tree reads nothing ahead: the first view comes first
    params = {
        "start_ns": body["start_ns"],
        "end_ns": body["end_ns"],
        "width_px": 800,
        "tracks": ",".join(root["id"] for root in body["tracks"]),
    }
    for _ in range(2):
        assert api.get(f"/api/jobs/{job.id}/timeline/viewport/", params).status_code == 200
    assert done.wait(timeout=600)
    [indexes] = started
    assert [ix.store.folder() for ix in indexes] == [
        p.index.store.folder() for p in logic.job_timeline(job).parts.values()
    ]


def test_no_more_is_read_ahead_than_half_the_memory_free(parsed_job, advised, monkeypatch):
    job = parsed_job("budget", [("algo-1", 0, TRACE), ("algo-2", 1, TRACE)])
    indexes = [p.index for p in logic.job_timeline(job).parts.values()]
    first = indexes[0]
    start_bytes = os.path.getsize(first.store.file(first._path("start")))

    class Memory:
        available = 2 * start_bytes  # half of it: the first part's start array only

    monkeypatch.setattr(logic.psutil, "virtual_memory", lambda: Memory)
    logic._read_arrays_ahead(indexes)
    assert [os.path.basename(a[0]) for a in advised] == ["start.npy"] * len(advised)
    assert covered(advised, os.path.realpath(first.store.file(first._path("start")))) >= start_bytes
    assert {a[0] for a in advised} == {os.path.realpath(first.store.file(first._path("start")))}
