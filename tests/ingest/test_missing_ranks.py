"""The ranks a job's traces say it ran on, and those that sent nothing (issue 28)."""

import gzip
import json

import pytest

from profiler_app.profiles.queries import missing_rank_ranges
from tests.timeline.jobs import parse_job, parse_paths
from tests.traces.expected import DATA

RANK0, RANK1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"


def world_size(trace: str) -> int:
    with gzip.open(DATA / trace) as stream:
        return json.load(stream)["distributedInfo"]["world_size"]


def with_world_size(tmp_path, trace: str, size: int):
    """A copy of a shared trace whose distributedInfo says ``size`` ranks."""
    with gzip.open(DATA / trace) as stream:
        body = json.load(stream)
    body["distributedInfo"]["world_size"] = size
    path = tmp_path / trace.replace("/", "-")
    path.write_bytes(gzip.compress(json.dumps(body).encode()))
    return path


def summary(api, job) -> dict:
    return api.get(f"/api/jobs/{job.id}/summary/").json()


def test_it_joins_missing_ranks_into_ranges():
    assert missing_rank_ranges(128, {0}) == [[1, 127]]
    assert missing_rank_ranges(8, {0, 3, 4, 7}) == [[1, 2], [5, 6]]
    assert missing_rank_ranges(2, {0, 1}) == []
    assert missing_rank_ranges(0, {0, 1}) == []
    assert missing_rank_ranges(3, set()) == [[0, 2]]


@pytest.mark.django_db
def test_it_names_the_ranks_a_lone_trace_leaves_out(api, user):
    size = world_size(RANK0)
    assert size == 128
    job = parse_job(user, "rank-0-alone", [("algo-1", 0, RANK0)])
    body = summary(api, job)
    assert body["ranks"] == [0]
    assert body["world_size"] == 128
    assert body["missing_ranks"] == [[1, 127]]


@pytest.mark.django_db
def test_it_counts_both_shared_ranks_against_their_world_size(api, user):
    job = parse_job(user, "both", [("algo-1", 0, RANK0), ("algo-2", 1, RANK1)])
    body = summary(api, job)
    assert body["ranks"] == [0, 1]
    assert body["world_size"] == world_size(RANK1) == 128
    assert body["missing_ranks"] == [[2, 127]]


@pytest.mark.django_db
def test_it_misses_nothing_when_every_rank_of_a_two_rank_job_arrived(api, user, tmp_path):
    paths = [("algo-1", 0, with_world_size(tmp_path, RANK0, 2))]
    alone = parse_paths(user, "two-ranks-one-sent", paths)
    assert summary(api, alone)["missing_ranks"] == [[1, 1]]
    paths.append(("algo-2", 1, with_world_size(tmp_path, RANK1, 2)))
    both = parse_paths(user, "two-ranks-both-sent", paths)
    body = summary(api, both)
    assert (body["ranks"], body["world_size"], body["missing_ranks"]) == ([0, 1], 2, [])


@pytest.mark.django_db
def test_it_says_nothing_is_missing_when_no_trace_names_a_world_size(api, user):
    job = parse_job(user, "single", [("algo-1", 0, "amd_mi250_small.json.gz")])
    body = summary(api, job)
    assert (body["world_size"], body["missing_ranks"]) == (None, [])
