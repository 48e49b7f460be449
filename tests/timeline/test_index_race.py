"""Processes that index one store at once (a reprocess and the sweep) build it once; none that
opens it meanwhile fails."""

import shutil
import threading

from profiler_app.timeline.pure.index import INDEX_DIR_NAME, open_index
from profiler_app.traces import ingest_trace
from tests.traces.expected import DATA


def test_it_opens_an_index_that_others_build_at_the_same_time(tmp_path):
    """Each web process builds a missing index (each thread here stands for one): one of them
    swapping its build in must never leave another without files half-way through opening."""
    store = tmp_path / "store"
    ingest_trace(DATA / "h100_cnn_kineto.json.gz", "kineto", store)
    failures: list[Exception] = []

    def open_it(start: threading.Barrier) -> None:
        start.wait()
        try:
            assert open_index(store).lanes
        except Exception as exc:  # collected, and asserted below
            failures.append(exc)

    for _ in range(15):
        shutil.rmtree(store / INDEX_DIR_NAME, ignore_errors=True)
        start = threading.Barrier(6)
        threads = [threading.Thread(target=open_it, args=(start,)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert [p.name for p in store.iterdir() if p.name.startswith(".")] == [
        f".{INDEX_DIR_NAME}.lock"
    ]
