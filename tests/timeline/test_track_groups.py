"""A job of many tracks: the tree answers its large groups collapsed (their count and what is
below them), their children come a page at a time, and a collapsed group draws as one
aggregate row (issue 48, item 2)."""

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from profiler_app.timeline.pure.payload import decode
from profiler_app.timeline.pure.tree import COLLAPSE_OVER
from tests.timeline.jobs import parse_paths
from tests.traces.synthetic import many_tracks

pytestmark = [pytest.mark.django_db]

THREADS = 20_000
PROCESSES = 500
PAGE = 1000


@pytest.fixture
def threads_job(user, tmp_path):
    trace = many_tracks(tmp_path / "threads.json.gz", THREADS, "tid")
    return parse_paths(user, "20k-threads", [("algo-1", 0, trace)])


@pytest.fixture
def processes_job(user, tmp_path):
    trace = many_tracks(tmp_path / "processes.json.gz", PROCESSES, "pid")
    return parse_paths(user, "500-processes", [("algo-1", 0, trace)])


def tracks(api, job) -> tuple[dict, int]:
    response = api.get(f"/api/jobs/{job.id}/timeline/tracks/")
    assert response.status_code == 200, response.content
    return response.json(), len(response.content)


def children(api, job, group: str, offset: int, limit: int = PAGE):
    return api.get(
        f"/api/jobs/{job.id}/timeline/tracks/children/",
        {"group": group, "offset": offset, "limit": limit},
    )


@contextmanager
def python_calls() -> Iterator[list[int]]:
    """Counts the Python functions called, on every thread, while inside (a generator's every
    step counts as a call): work done a track at a time in Python counts once per track at
    least. Counted, not timed: the machine's load changes no count."""
    count = [0]

    def hook(frame, event, arg):
        if event == "call":
            count[0] += 1

    threading.setprofile(hook)  # the threads that open the job's parts
    sys.setprofile(hook)
    try:
        yield count
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def every_page(api, job, group: str) -> tuple[list[dict], list[int]]:
    """The group's children read page by page, and each page's size in bytes."""
    found, sizes, offset = [], [], 0
    while True:
        response = children(api, job, group, offset)
        assert response.status_code == 200, response.content
        body = response.json()
        if not body["children"]:
            return found, sizes
        assert len(body["children"]) <= PAGE
        found += body["children"]
        sizes.append(len(response.content))
        offset += len(body["children"])


def test_it_answers_a_group_of_20000_threads_collapsed(api, threads_job):
    assert api.get("/api/jobs/0/timeline/tracks/").status_code == 404  # the modules loaded
    with python_calls() as calls:  # the job's first reader: it opens the job
        body, size = tracks(api, threads_job)
    print(f"RESULT first_tracks_python_calls={calls[0]}")
    # No step per thread: the whole request, sign-in to JSON, makes fewer calls than the job
    # has threads (9,600 here; a node made per thread at opening took over 100,000).
    assert calls[0] < THREADS
    [node] = body["tracks"]
    [cpu] = node["children"]
    [process] = cpu["children"]
    assert process["label"] == "HOST-0 PID-1"
    [threads] = process["children"]
    assert threads == {
        "id": "algo-1/1/cpu",
        "label": "CPU threads",
        "kind": "threads",
        "data": None,
        "children_count": THREADS,
        "lanes": THREADS,
        "events": THREADS,
    }
    assert body["n_events"] == THREADS
    assert size < 2000  # the whole tree answered 2.3 MB


def test_it_pages_every_thread_once_in_order(api, threads_job):
    found, sizes = every_page(api, threads_job, "algo-1/1/cpu")
    assert [n["id"] for n in found] == [f"algo-1/1/cpu/{tid}" for tid in range(1, THREADS + 1)]
    assert found[41] == {
        "id": "algo-1/1/cpu/42",
        "label": "thread 42",
        "kind": "thread",
        "data": "events",
        "rows": 1,
        "events": 1,
        "info": {"tid": 42},
    }
    assert len(sizes) == THREADS // PAGE
    assert max(sizes) < 150_000


def test_it_answers_a_group_of_500_processes_collapsed(api, processes_job):
    body, _ = tracks(api, processes_job)
    [cpu] = body["tracks"][0]["children"]
    assert cpu["children_count"] == PROCESSES > COLLAPSE_OVER
    assert (cpu["lanes"], cpu["events"]) == (PROCESSES, PROCESSES)
    assert "children" not in cpu
    found, _ = every_page(api, processes_job, "algo-1/cpu")
    assert [n["id"] for n in found] == [f"algo-1/{pid}" for pid in range(1, PROCESSES + 1)]
    # A process's own small groups come whole.
    assert found[6]["children"] == [
        {
            "id": "algo-1/7/cpu",
            "label": "CPU threads",
            "kind": "threads",
            "data": None,
            "children": [
                {
                    "id": "algo-1/7/cpu/1",
                    "label": "thread 1",
                    "kind": "thread",
                    "data": "events",
                    "rows": 1,
                    "events": 1,
                    "info": {"tid": 1},
                }
            ],
        }
    ]


def test_it_opens_a_job_of_20000_processes_without_a_step_per_process(api, user, tmp_path):
    """Made at opening, a process's three nodes took the first reader of a 200,000-process job
    4 s of CPU; its processes are made when read, like a large group's threads."""
    many = 20_000
    trace = many_tracks(tmp_path / "processes.json.gz", many, "pid")
    job = parse_paths(user, "20k-processes", [("algo-1", 0, trace)])
    assert api.get("/api/jobs/0/timeline/tracks/").status_code == 404  # the modules loaded
    with python_calls() as calls:
        body, size = tracks(api, job)
    print(f"RESULT first_tracks_python_calls={calls[0]} bytes={size}")
    [cpu] = body["tracks"][0]["children"]
    assert (cpu["id"], cpu["children_count"], cpu["lanes"], cpu["events"]) == (
        "algo-1/cpu",
        many,
        many,
        many,
    )
    assert calls[0] < many
    page = children(api, job, "algo-1/cpu", many - 2, limit=5).json()
    assert page["count"] == many
    assert [c["id"] for c in page["children"]] == [f"algo-1/{pid}" for pid in (many - 1, many)]
    assert page["children"][0]["children"][0]["children"][0]["id"] == f"algo-1/{many - 1}/cpu/1"


def test_it_finds_a_track_of_a_collapsed_group_of_processes_by_its_id(api, processes_job):
    """The processes of a collapsed group are made when named, with what is below them."""
    job = processes_job.id
    # Operator i (aten::op<i % 7>) is alone in process i + 1, thread 1, 2 + i % 5 µs long.
    found = api.get(f"/api/jobs/{job}/timeline/search/", {"q": "aten::op3", "limit": 3}).json()
    assert found["count"] == len(range(3, PROCESSES, 7))
    assert [r["track"] for r in found["results"]] == [f"algo-1/{i + 1}/cpu/1" for i in (3, 10, 17)]
    body, _ = tracks(api, processes_job)
    span = {"start_ns": body["start_ns"], "end_ns": str(int(body["end_ns"]) + 1)}
    named = ["algo-1/12/cpu/1", "algo-1/500/cpu", "algo-1/250"]
    view = api.get(
        f"/api/jobs/{job}/timeline/viewport/",
        {**span, "width_px": 500, "tracks": ",".join(named)},
    )
    assert view.status_code == 200, view.content
    header, _ = decode(view.content)
    assert [t["id"] for t in header["tracks"]] == named
    totals = api.get(f"/api/jobs/{job}/timeline/range/", {**span, "tracks": "algo-1/12"})
    assert [(r["track"], r["name"], r["count"], r["total_ns"]) for r in totals.json()["rows"]] == [
        ("algo-1/12/cpu/1", "aten::op4", 1, (2 + 11 % 5) * 1000)
    ]
    for missing in ("algo-1/501", "algo-1/12/cpu/2", "algo-1/012", "algo-1/x", "algo-2/12"):
        refused = api.get(
            f"/api/jobs/{job}/timeline/viewport/", {**span, "width_px": 500, "tracks": missing}
        )
        assert refused.json() == {"tracks": [f"no track {missing!r} in this job"]}


def test_it_draws_a_collapsed_group_as_one_aggregate(api, threads_job):
    body, _ = tracks(api, threads_job)
    response = api.get(
        f"/api/jobs/{threads_job.id}/timeline/viewport/",
        {
            "start_ns": body["start_ns"],
            "end_ns": str(int(body["end_ns"]) + 1),
            "width_px": 500,
            "tracks": "algo-1/1/cpu",
        },
    )
    assert response.status_code == 200
    header, arrays = decode(response.content)
    [track] = header["tracks"]
    assert (track["type"], track["lanes"]) == ("aggregate", 1)  # the part's every lane at once
    assert int(arrays["ag_count"].sum()) == THREADS
    # Operator i runs [1000 + 3i, 1000 + 3i + 2 + i % 5) µs: the time they cover, in all.
    covered = np.zeros(1000 + 3 * THREADS + 6, dtype=bool)
    for i in range(THREADS):
        covered[1000 + 3 * i : 1000 + 3 * i + 2 + i % 5] = True
    want_ns = int(covered.sum()) * 1000
    assert int(np.asarray(arrays["ag_busy"], dtype=np.float64).sum()) == want_ns


def test_it_finds_a_thread_of_a_collapsed_group_by_its_id(api, threads_job):
    """The threads of a collapsed group are made when named: by a view, a range's totals, a
    search's results."""
    job = threads_job.id
    # Operator i (aten::op<i % 7>) is alone on thread i + 1, from 1000 + 3i µs, 2 + i % 5 µs.
    found = api.get(f"/api/jobs/{job}/timeline/search/", {"q": "aten::op3", "limit": 3}).json()
    assert found["count"] == len(range(3, THREADS, 7))
    assert [r["track"] for r in found["results"]] == [f"algo-1/1/cpu/{i + 1}" for i in (3, 10, 17)]
    body, _ = tracks(api, threads_job)
    span = {"start_ns": body["start_ns"], "end_ns": str(int(body["end_ns"]) + 1)}
    view = api.get(
        f"/api/jobs/{job}/timeline/viewport/",
        {**span, "width_px": 500, "tracks": "algo-1/1/cpu/11,algo-1/1/cpu/20000"},
    )
    assert view.status_code == 200, view.content
    header, _ = decode(view.content)
    assert [(t["id"], t["type"]) for t in header["tracks"]] == [
        ("algo-1/1/cpu/11", "events"),
        ("algo-1/1/cpu/20000", "events"),
    ]
    totals = api.get(f"/api/jobs/{job}/timeline/range/", {**span, "tracks": "algo-1/1/cpu/11"})
    assert [(r["track"], r["name"], r["count"], r["total_ns"]) for r in totals.json()["rows"]] == [
        ("algo-1/1/cpu/11", "aten::op3", 1, (2 + 10 % 5) * 1000)
    ]
    for missing in ("algo-1/1/cpu/20001", "algo-1/1/cpu/011", "algo-1/1/cpu/x"):
        refused = api.get(
            f"/api/jobs/{job}/timeline/viewport/", {**span, "width_px": 500, "tracks": missing}
        )
        assert refused.json() == {"tracks": [f"no track {missing!r} in this job"]}


def test_it_refuses_bad_pages(api, threads_job):
    assert children(api, threads_job, "algo-1/nothing", 0).json() == {
        "group": ["no track 'algo-1/nothing' in this job"]
    }
    assert children(api, threads_job, "algo-1/1/cpu", -1).status_code == 400
    assert children(api, threads_job, "algo-1/1/cpu", 0, limit=1001).status_code == 400
    past = children(api, threads_job, "algo-1/1/cpu", THREADS).json()
    assert (past["count"], past["children"]) == (THREADS, [])
    small = children(api, threads_job, "algo-1/1", 0).json()  # a group answered whole anyway
    assert [c["id"] for c in small["children"]] == ["algo-1/1/cpu"]
    assert json.dumps(small["children"][0]).count("children_count") == 1


def test_it_requires_sign_in(client_for, teammate, threads_job):
    url = f"/api/jobs/{threads_job.id}/timeline/tracks/children/?group=algo-1/1/cpu"
    assert client_for(None).get(url).status_code == 401
    assert client_for(teammate).get(url).status_code == 200
    missing = client_for(teammate).get("/api/jobs/9999/timeline/tracks/children/?group=x")
    assert missing.status_code == 404


@pytest.mark.slow
def test_it_answers_the_tree_of_200000_threads_small_and_at_once(api, user, tmp_path):
    """The issue's job: its tree answered 23.7 MB in 17 s. The first reader opens the job
    (times printed, not bounded: the machine's load decides them); every later one reads it
    open."""
    trace = many_tracks(tmp_path / "threads.json.gz", 200_000, "tid")
    job = parse_paths(user, "200k-threads", [("algo-1", 0, trace)])
    url = f"/api/jobs/{job.id}/timeline/tracks/"
    assert api.get("/api/jobs/0/timeline/tracks/").status_code == 404  # the modules loaded
    began = time.perf_counter()
    with python_calls() as calls:
        first = api.get(url)
    first_s = time.perf_counter() - began
    began = time.perf_counter()
    with python_calls() as again_calls:
        again = api.get(url)
    again_s = time.perf_counter() - began
    began = time.perf_counter()
    page = children(api, job, "algo-1/1/cpu", 199_000)
    page_s = time.perf_counter() - began
    print(
        f"RESULT tracks_first_s={first_s:.2f} first_python_calls={calls[0]} tracks_s={again_s:.3f} "
        f"again_python_calls={again_calls[0]} tracks_bytes={len(again.content)} page_s={page_s:.3f} page_bytes={len(page.content)}"
    )
    assert first.json() == again.json()
    [threads] = again.json()["tracks"][0]["children"][0]["children"][0]["children"]
    assert (threads["children_count"], threads["events"]) == (200_000, 200_000)
    assert [c["id"] for c in page.json()["children"]] == [
        f"algo-1/1/cpu/{tid}" for tid in range(199_001, 200_001)
    ]
    # No reader makes a step per thread (the tree's nodes made at opening: 600,000 calls and
    # more, 1.3 to 3.2 s here); the threads' nodes are made a page at a time. Counted, not
    # timed (a later reader: 4,600 calls, 13 ms here).
    assert calls[0] < 20_000 and again_calls[0] < 20_000
    assert len(again.content) < 2000 and len(page.content) < 150_000
