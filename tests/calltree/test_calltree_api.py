"""The Call tree API over a job the real ingest parsed, against the raw JSON."""

from collections import defaultdict

import pytest

from profiler_app.calltree import queries
from profiler_app.core.models import TrainingJob
from tests import h200
from tests.calltree.raw import host_events, last_step_start, paths, steps_as_one
from tests.timeline.jobs import parse_job
from tracefmt.chunk import read_chunk

pytestmark = pytest.mark.django_db(transaction=True)
TRACE = "gpu_training_rank0.pt.trace.json.gz"


@pytest.fixture
def job(user):
    return parse_job(user, "calltree", [("algo-1", 0, TRACE)])


def _main_thread(body) -> int:
    return next(t["track"] for t in body["threads"] if "thread 1102" in t["label"])


def _paths(body) -> dict:
    tree, out, path = body["tree"], {}, []
    for i, up in enumerate(tree["parent"]):
        path.append((path[up] if up >= 0 else ()) + (body["names"][tree["name"][i]],))
        out[path[i]] = (tree["total_ns"][i], tree["self_ns"][i], tree["count"][i])
    return out


def test_it_serves_a_threads_tree_with_names_and_occurrences(api, job):
    body = api.get(f"/api/jobs/{job.id}/calltree/").json()
    main = _main_thread(body)
    body = api.get(f"/api/jobs/{job.id}/calltree/", {"threads": main}).json()
    total, self_ns, count, by_name = paths(steps_as_one(host_events(TRACE, 1102)))
    assert _paths(body) == {p: (total[p], self_ns[p], count[p]) for p in total}
    assert body["selected"] == [main] and body["total_ns"] == sum(
        v for p, v in total.items() if len(p) == 1
    )
    inverted = api.get(
        f"/api/jobs/{job.id}/calltree/", {"threads": main, "inverted": "true"}
    ).json()
    roots = {p[0]: v[0] for p, v in _paths(inverted).items() if len(p) == 1}
    assert roots == {n: ns for n, ns in by_name.items() if ns > 0}

    path = max((p for p in total if len(p) == 2), key=lambda p: total[p])
    ids = dict(zip(body["names"], body["name_ids"], strict=True))
    query = {"threads": main, "path": ",".join(str(ids[n]) for n in path), "limit": 3}
    found = api.get(f"/api/jobs/{job.id}/calltree/occurrences/", query).json()
    assert found["count"] == count[path] and len(found["results"]) == min(3, count[path])
    first = found["results"][0]
    assert first["timeline_url"].startswith(f"/jobs/{job.id}/timeline?t=")
    assert f"sel={first['event']}" in first["timeline_url"]


def test_it_opens_on_the_thread_that_ran_the_training_steps(api, job):
    body = api.get(f"/api/jobs/{job.id}/calltree/").json()
    main = _main_thread(body)
    stepping = [t for t in body["threads"] if t["steps"]]
    assert [t["track"] for t in stepping] == [main]
    assert body["selected"] == [main]
    everyone = [t["track"] for t in body["threads"]]
    assert len(everyone) > 1
    every = api.get(f"/api/jobs/{job.id}/calltree/", {"threads": ",".join(map(str, everyone))})
    assert every.json()["selected"] == sorted(everyone)


def test_complete_steps_drop_the_last_step(api, job):
    job.window = "complete_steps"
    job.save(update_fields=["window"])
    body = api.get(f"/api/jobs/{job.id}/calltree/").json()
    main = _main_thread(body)
    body = api.get(f"/api/jobs/{job.id}/calltree/", {"threads": main}).json()
    total, *_ = paths(steps_as_one(host_events(TRACE, 1102, before_ns=last_step_start(TRACE))))
    assert {p: v[0] for p, v in _paths(body).items()} == dict(total)


@pytest.mark.parametrize(
    "query, field",
    [
        ({"threads": "a,b"}, "threads"),
        ({"threads": ","}, "threads"),
        ({"threads": "999"}, "threads"),
        ({"part": 999999}, "part"),
        ({"min_ns": -1}, "min_ns"),
        ({"inverted": "maybe"}, "inverted"),
    ],
)
def test_it_explains_bad_parameters(api, job, query, field):
    response = api.get(f"/api/jobs/{job.id}/calltree/", query)
    assert response.status_code == 400
    assert field in response.json()


def test_occurrences_need_a_real_path(api, job):
    url = f"/api/jobs/{job.id}/calltree/occurrences/"
    assert "path" in api.get(url).json()
    assert "path" in api.get(url, {"path": "-1"}).json()
    assert api.get(url, {"path": "1", "limit": 5000}).status_code == 400


def test_it_needs_a_signed_in_user_and_a_job(client_for, user):
    job = TrainingJob.objects.create(name="empty", owner=user)
    assert client_for(None).get(f"/api/jobs/{job.id}/calltree/").status_code == 401
    body = client_for(user).get(f"/api/jobs/{job.id}/calltree/").json()
    assert body["part"] is None and body["tree"]["parent"] == []
    assert client_for(user).get("/api/jobs/999999/calltree/").status_code == 404


def test_a_collector_jobs_chunks_are_told_apart_by_their_times(api, user, tmp_path):
    """The real H200 job: eight chunks of one rank, each listed with where its events lie from
    the job's first event, as the chunks' own event columns put them."""
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-calltree", chunks, "collector", owner=user)
    spans = []
    for path in chunks:
        events = read_chunk(path).events
        start, end = events["ev_start_ns"], events["ev_start_ns"] + events["ev_dur_ns"]
        spans.append((int(start.min()), int(end.max())))
    origin = min(start for start, _ in spans)

    body = api.get(f"/api/jobs/{job.id}/calltree/").json()
    assert [(p["node"], p["rank"]) for p in body["parts"]] == [("vm", 0)] * 8
    assert [(p["offset_ns"], p["span_ns"]) for p in body["parts"]] == [
        (start - origin, end - start) for start, end in spans
    ]
    # The third chunk holds the second capture, 8.6 s into the job.
    assert body["parts"][2]["offset_ns"] == 8_614_868_130


def test_a_collector_jobs_process_is_one_tree_of_its_captured_steps(
    api, user, tmp_path, monkeypatch
):
    """The real H200 job: its eight chunks summed into one tree of what Kineto recorded, the 16
    captured steps (57–60, 177–180, 297–300, 417–420: 845 ms) as one frame, each step's
    Forward, Backward and Optimizer under it; the steps it did not capture (annotations only)
    are left out, as on the Dashboard."""
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    job = h200.stored_job("h200-process-tree", chunks, "collector", owner=user)
    captured = [*range(57, 61), *range(177, 181), *range(297, 301), *range(417, 421)]
    # The collector's own step and phase annotations, as (start, dur), from the raw chunks.
    annotations: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for path in chunks:
        chunk = read_chunk(path)
        events = chunk.events
        for name, start, dur in zip(
            events["ev_name"], events["ev_start_ns"], events["ev_dur_ns"], strict=True
        ):
            annotations[chunk.strings[int(name)]].append((int(start), int(dur)))
    steps = [annotations[f"step_{n}"][0] for n in captured]
    phases = {phase: annotations[phase] for phase in ("Forward", "Backward", "Optimizer")}

    def within(start: int) -> bool:
        return any(lo <= start < lo + dur for lo, dur in steps)

    body = api.get(f"/api/jobs/{job.id}/calltree/").json()
    assert (body["part"], body["rank"], body["node"]) == (None, 0, "vm")
    # The four chunks Kineto recorded in; the others hold the collector's annotations only.
    recorded = [p["id"] for p in body["parts"]][0::2]
    assert body["summed_parts"] == recorded
    assert body["window_label"] == "captured steps 57–60, 177–180, 297–300, 417–420 (16 of 160)"
    tree = _paths(body)
    assert body["total_ns"] == sum(dur for _, dur in steps)
    assert 845_000_000 < body["total_ns"] < 846_000_000
    assert tree[("step_*",)] == (body["total_ns"], tree[("step_*",)][1], 16)
    for phase, spans in phases.items():
        mine = [dur for start, dur in spans if within(start)]
        assert len(mine) == 16
        assert tree[("step_*", phase)][0] == sum(mine)
        assert tree[("step_*", phase)][2] == 16
    # The thread that ran the steps has another id in the first capture's Kineto events; its
    # steps count once, from the collector's annotations, in each part.
    labels = [t["label"] for t in body["threads"]]
    assert labels == [
        "vm / thread 574",
        "vm / thread 136582848",
        "vm / thread 421007040",
        "vm / thread 619",
    ]
    assert body["selected"] == [0] and body["threads"][0]["steps"] == 16

    # Each occurrence of the steps' frame, across the chunks, in time order.
    ids = dict(zip(body["names"], body["name_ids"], strict=True))
    found = api.get(
        f"/api/jobs/{job.id}/calltree/occurrences/", {"path": ids["step_*"], "limit": 20}
    ).json()
    assert found["count"] == 16
    starts = [int(r["start_ns"]) for r in found["results"]]
    assert starts == [start for start, _ in steps]
    assert len({r["event"].split(":")[0] for r in found["results"]}) == 4  # four chunks
    # One chunk alone, as before: the second capture's part.
    second = body["parts"][2]["id"]
    alone = api.get(f"/api/jobs/{job.id}/calltree/", {"part": second}).json()
    assert (alone["part"], alone["rank"]) == (second, None)
    assert _paths(alone)[("step_*",)][2] == 4
    bad = api.get(f"/api/jobs/{job.id}/calltree/", {"rank": 5})
    assert bad.status_code == 400 and "rank" in bad.json()
    # A long job's process sums its latest recorded parts only: here the last two captures.
    monkeypatch.setattr(queries, "MAX_PROCESS_PARTS", 2)
    latest = api.get(f"/api/jobs/{job.id}/calltree/").json()
    assert (latest["summed_parts"], latest["max_summed_parts"]) == (recorded[-2:], 2)
    assert latest["total_ns"] == sum(dur for _, dur in steps[8:])
    assert _paths(latest)[("step_*",)][2] == 8
