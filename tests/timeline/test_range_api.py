"""The range API over a job the real ingest parsed: totals per track and name that match the raw
trace, the events of one name, and every input error a 400 with a message."""

import pytest

from profiler_app.timeline.pure.ranges import MAX_TRACKS
from tests.timeline.test_range_totals import brute_force
from tests.timeline.test_timeline_api import nodes, tree_of

pytestmark = [pytest.mark.django_db]

TRACE = "multirank_sampled/rank-0.json.gz"


@pytest.fixture
def job(parsed_job):
    return parsed_job("range-1-rank", [("algo-1", 0, TRACE)])


def middle(body: dict) -> tuple[int, int]:
    start, end = int(body["start_ns"]), int(body["end_ns"])
    return start + (end - start) // 4, start + (end - start) // 2


def test_it_totals_a_range_like_the_raw_trace(api, job):
    body = tree_of(api, job)
    start, end = middle(body)
    stream = next(n for n in nodes(body) if n["kind"] == "stream")
    thread = next(n for n in nodes(body) if n["kind"] == "thread")
    params = {
        "start_ns": str(start),
        "end_ns": str(end),
        "tracks": f"{stream['id']},{thread['id']}",
    }
    response = api.get(f"/api/jobs/{job.id}/timeline/range/", params)
    assert response.status_code == 200, response.content
    got = response.json()
    assert got["tracks"] == [stream["id"], thread["id"]]
    pid = thread["id"].split("/")[1]
    keys = {
        stream["id"]: ("stream", stream["info"]["device"], stream["info"]["stream"]),
        thread["id"]: ("thread", int(pid), thread["info"]["tid"]),
    }
    for track, key in keys.items():
        want = brute_force(TRACE, key, start, end)
        rows = {r["name"]: r for r in got["rows"] if r["track"] == track}
        assert set(rows) == set(want)
        for name, row in rows.items():
            w = want[name]
            assert (row["count"], row["total_ns"]) == (w["count"], w["total"])
            assert row["avg_ns"] == pytest.approx(w["total"] / w["count"])
            assert row["pct_of_range"] == pytest.approx(w["total"] / (end - start) * 100)
            assert row["self_ns"] == (w["self"] if key[0] == "thread" else None)
    totals = [r["total_ns"] for r in got["rows"]]
    assert totals == sorted(totals, reverse=True)
    top = got["rows"][0]
    events = api.get(
        f"/api/jobs/{job.id}/timeline/range/events/",
        {**params, "name": top["name"], "limit": 3},
    ).json()
    assert events["count"] == top["count"]
    assert [e["name"] for e in events["results"]] == [top["name"]] * min(3, top["count"])


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"start_ns": "100", "end_ns": "50", "tracks": "algo-1"}, "end_ns", "after start_ns"),
        ({"start_ns": "1", "end_ns": "50", "tracks": "nope"}, "tracks", "no track 'nope'"),
        ({"start_ns": "1", "end_ns": "50", "tracks": ","}, "tracks", "at least one"),
        ({"start_ns": "x", "end_ns": "50", "tracks": "algo-1"}, "start_ns", "whole number"),
        (
            {"start_ns": "1", "end_ns": "50", "tracks": ",".join(["a"] * (MAX_TRACKS + 1))},
            "tracks",
            "at most",
        ),
    ],
)
def test_it_refuses_a_bad_range(api, job, params, field, message):
    for path in ("range/", "range/events/"):
        response = api.get(f"/api/jobs/{job.id}/timeline/{path}", {**params, "name": "x"})
        assert response.status_code == 400, response.content
        assert message in " ".join(response.json()[field])


def test_it_answers_only_signed_in_users(client_for, job):
    anonymous = client_for(None)
    for path in ("range/", "range/events/"):
        params = {"start_ns": "1", "end_ns": "2", "tracks": "algo-1", "name": "x"}
        assert anonymous.get(f"/api/jobs/{job.id}/timeline/{path}", params).status_code == 401
