"""Each rank's insights facts are kept (``insights.rank_results``): a run reads again only the
ranks whose parts, window or analysis parameters changed (a recommendation's parameters judge
the kept facts again), what it stores equals a run that kept nothing, an unreadable or unsigned
kept result is computed again (and never unpickled), and the results count in the job's bytes
and go with it. On two ranks of a real multi-rank trace."""

import pickle
from pathlib import Path

import pytest

from profiler_app.core import retention, storage
from profiler_app.core.logic import PartSource, delete_job, store_part
from profiler_app.insights import logic, rank_results
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.traces.window import COMPLETE_STEPS, WHOLE_TRACE
from tests.conftest import DATA_DIR
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_job, parse_stored

RANKS = [
    ("node-0", 0, "multirank_sampled/rank-0.json.gz"),
    ("node-1", 1, "multirank_sampled/rank-1.json.gz"),
]


@pytest.fixture
def reads(monkeypatch) -> list[int]:
    """The ranks whose events a run read (the real ``read_rank``, recorded)."""
    read: list[int] = []
    real = rank_results.read_rank

    def recorded(rank, parts, params, window):
        read.append(rank)
        return real(rank, parts, params, window)

    monkeypatch.setattr(rank_results, "read_rank", recorded)
    return read


def run(job, window: str = COMPLETE_STEPS) -> tuple[list, dict]:
    """The insights in ``window`` as a worker computes them: the stored rules and analyses."""
    row = compute_here(job, window)
    assert row.status == InsightsStatus.DONE, row.error
    return row.report["rules"], row.analyses


def _recommendation(job, name: str, window: str = COMPLETE_STEPS) -> dict:
    report = JobInsights.objects.get(job=job, window=window).report
    [found] = [r for r in report["recommendations"] if r["rule"] == name]
    return found


def kept_folder(job) -> Path:
    return storage.media_root() / storage.kept_key(job.id, "")


def kept(job) -> list[Path]:
    """The ranks' kept facts."""
    return sorted(kept_folder(job).glob("rank-*/*/*.pickle"))


def kept_combinations(job) -> list[Path]:
    """The job's kept combinations of its ranks' facts (one per window; its analyses' JSON
    beside each)."""
    return sorted(kept_folder(job).glob("job/*/*.pickle"))


def kept_analyses(job) -> list[Path]:
    return sorted(kept_folder(job).glob("job-analyses/*/*.json"))


def forget_combinations(job) -> None:
    """As if no run had combined the ranks: the next one needs each rank's facts."""
    for path in kept_combinations(job) + kept_analyses(job):
        path.unlink()


@pytest.fixture
def combined(monkeypatch) -> list[int]:
    """How many times a run combined the ranks' facts (not finding the job's kept)."""
    count: list[int] = []
    real = rank_results.combine_facts

    def recorded(ranks, fold):
        count.append(1)
        return real(ranks, fold)

    monkeypatch.setattr(rank_results, "combine_facts", recorded)
    return count


def taken(reads: list[int]) -> list[int]:
    out = sorted(reads)
    reads.clear()
    return out


@pytest.mark.django_db
def test_a_run_reads_again_only_the_ranks_that_changed(user, reads, combined):
    job = parse_job(user, "kept ranks", RANKS, window=COMPLETE_STEPS)
    first = run(job)
    assert taken(reads) == [0, 1] and len(kept(job)) == 2
    assert taken(combined) == [1] and len(kept_combinations(job)) == 1
    # The job's combination of its ranks is kept too: one file read, the analyses left as
    # they are in the database.
    assert run(job) == first and taken(reads) == [] and taken(combined) == []

    # A system rule's parameter is no rank's: nothing read. A recommendation's judges the
    # kept facts again: nothing read either, and its judgement follows the parameter.
    logic.set_overrides(job, {"StepOutlier_stddev": 5}, job.owner)
    assert run(job)[1] == first[1]
    assert taken(reads) == [] and taken(combined) == []
    logic.set_overrides(job, {"Communication_overlap_pct": 0}, job.owner)
    before = _recommendation(job, "Communication")
    run(job)
    assert taken(reads) == [] and taken(combined) == []
    after = _recommendation(job, "Communication")
    assert before["evidence"]["exposed_ranks"] == ["0", "1"]
    assert after["evidence"]["exposed_ranks"] == []  # the same figures, judged again
    assert before["time_ranges"] and not after["time_ranges"]
    assert after["evidence"]["ranks"] == before["evidence"]["ranks"]
    # An analysis parameter's: every rank is read again.
    logic.set_overrides(job, {"KernelLaunchStatistics_runtime_cutoff": 5}, job.owner)
    changed = run(job)
    assert taken(reads) == [0, 1] and changed != first and taken(combined) == [1]
    assert len(kept_combinations(job)) == 1  # in place of the earlier one

    # Each window keeps its own: the other is read once, then neither again.
    whole = run(job, WHOLE_TRACE)
    assert taken(reads) == [0, 1] and taken(combined) == [1]
    assert run(job, WHOLE_TRACE) == whole and run(job) == changed and taken(reads) == []
    assert taken(combined) == [] and len(kept_combinations(job)) == 2

    # A new part of rank 1 (another trace file of it): rank 1 alone is read again.
    path = DATA_DIR / "gpu_training_rank0.pt.trace.json.gz"
    with path.open("rb") as stream:
        part, _ = store_part(job, PartSource("node-1", 1, "kineto", path.name), stream)
    parse_stored(part.id)
    grown = run(job)
    assert taken(reads) == [1] and grown != changed and taken(combined) == [1]

    # What the kept results gave equals a run that kept nothing.
    storage.remove_kept(job.id)
    assert run(job) == grown and taken(reads) == [0, 1]


@pytest.mark.django_db
def test_an_unreadable_kept_result_is_computed_again(user, reads, combined):
    job = parse_job(user, "cut short", RANKS[:1], window=COMPLETE_STEPS)
    first = run(job)
    [path] = kept(job)
    path.write_bytes(path.read_bytes()[:100])  # a write cut short
    forget_combinations(job)
    taken(reads)
    assert run(job) == first and taken(reads) == [0]
    assert kept(job) == [path]

    # The job's combination cut short, or its analyses' JSON: combined again from the rank's
    # kept facts.
    taken(combined)
    for [path] in (kept_combinations(job), kept_analyses(job)):
        path.write_bytes(path.read_bytes()[:100])
        assert run(job) == first and taken(reads) == [] and taken(combined) == [1]


UNPICKLED: list[str] = []


def _unpickled() -> None:
    UNPICKLED.append("code ran")


class Hostile:
    """What a pickle not written by the server may hold: code run when it is loaded."""

    def __reduce__(self):
        return (_unpickled, ())


@pytest.mark.django_db
def test_a_kept_result_not_signed_by_this_server_is_never_unpickled(user, reads, settings):
    job = parse_job(user, "unsigned", RANKS[:1], window=COMPLETE_STEPS)
    first = run(job)
    [path] = kept(job)
    path.write_bytes(bytes(32) + pickle.dumps(Hostile()))  # no signature, or a wrong one
    forget_combinations(job)
    taken(reads)
    assert run(job) == first and taken(reads) == [0] and UNPICKLED == []

    # Signed with another server's key: not this one's, computed again too.
    signed = path.read_bytes()
    settings.SECRET_KEY = "another server's secret key, long enough to be one"
    path.write_bytes(signed)
    forget_combinations(job)
    assert run(job) == first and taken(reads) == [0]


@pytest.mark.django_db
def test_kept_results_count_in_the_job_s_bytes_and_go_with_it(
    user, django_capture_on_commit_callbacks
):
    job = parse_job(user, "deleted", RANKS[:1], window=COMPLETE_STEPS)
    before = retention.job_bytes(job.id)
    run(job)
    paths = kept(job) + kept_combinations(job) + kept_analyses(job)
    assert len(paths) == 3
    assert retention.job_bytes(job.id) == before + sum(path.stat().st_size for path in paths)
    with django_capture_on_commit_callbacks(execute=True):
        delete_job(job)
    assert not kept_folder(job).exists()


@pytest.mark.django_db
def test_a_rank_read_by_a_worker_of_the_parses_is_not_read_again_by_the_run(user, reads):
    job = parse_job(user, "prepared", RANKS, window=COMPLETE_STEPS)
    logic.prepare_rank(job.id, 0, COMPLETE_STEPS)  # as the task queued by rank 0's parse does
    assert taken(reads) == [0]
    run(job)
    assert taken(reads) == [1]
    logic.prepare_rank(job.id, 0, COMPLETE_STEPS)  # already kept: nothing read
    assert taken(reads) == []
    # As the parse of rank 1 queues it: both windows, in one read of the rank; the other
    # window's run then reads only the rank not read so.
    logic.prepare_rank(job.id, 1)
    assert taken(reads) == [1]
    run(job, WHOLE_TRACE)
    assert taken(reads) == [0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_worker_of_the_parses_reads_each_rank_once_its_part_is_parsed(
    api, user, celery_worker_process
):
    """Uploaded as a user does, parsed by a real worker: each rank is read for the insights by
    the ``prepare_rank`` its parse queued, and the insights are done."""
    from profiler_app.core.models import PartState, TrainingJob
    from tests.conftest import wait_for
    from tests.ingest.helpers import upload, wait_parsed

    job = TrainingJob.objects.create(name="read ahead", owner=user, window=COMPLETE_STEPS)
    for node, rank, trace in RANKS:
        [part] = wait_parsed(upload(api, job, DATA_DIR / trace, rank=rank, node=node)["id"])
        assert part.state == PartState.DONE, part.error
    log = celery_worker_process.log_path

    def read_ahead() -> list[str]:
        lines = log.read_text().splitlines()
        mine = [line for line in lines if f"of job {job.id} read for its insights" in line]
        return mine if len(mine) >= len(RANKS) else []

    lines = wait_for(read_ahead, timeout=120)
    assert {line.split("Rank ")[1].split(" ")[0] for line in lines} == {"0", "1"}
    assert len(kept(job)) == 2 * len(RANKS)  # both windows
    wait_for(lambda: JobInsights.objects.filter(job=job, status=InsightsStatus.DONE).exists(), 120)


@pytest.mark.django_db
def test_a_result_from_other_code_is_computed_again(user, reads, combined, monkeypatch):
    """A new release may compute a rank's figures differently: its results are not reused;
    one that writes the analyses' JSON differently combines the kept facts again."""
    job = parse_job(user, "new code", RANKS[:1], window=COMPLETE_STEPS)
    first = run(job)
    assert taken(reads) == [0] and taken(combined) == [1]
    real = rank_results.code_digest
    monkeypatch.setattr(
        rank_results,
        "code_digest",
        lambda folders: "new JSON" if folders == rank_results._JOB_CODE else real(folders),
    )
    assert run(job) == first and taken(reads) == [] and taken(combined) == [1]
    monkeypatch.setattr(rank_results, "code_digest", lambda folders: "another release")
    assert run(job) == first and taken(reads) == [0] and taken(combined) == [1]
    assert run(job) == first and taken(reads) == [] and taken(combined) == []


@pytest.mark.django_db
def test_a_rank_read_while_its_job_is_deleted_leaves_nothing_kept(user, monkeypatch):
    from profiler_app.core.models import TrainingJob
    from profiler_app.insights.inputs import rank_parts
    from profiler_app.insights.pure.rules import params_from_overrides

    job = parse_job(user, "deleted meanwhile", RANKS[:1], window=COMPLETE_STEPS)
    real = rank_results.read_rank

    def deleted_meanwhile(rank, parts, params, window):
        result = real(rank, parts, params, window)
        TrainingJob.objects.filter(pk=job.pk).delete()  # and its stores went, on commit
        return result

    monkeypatch.setattr(rank_results, "read_rank", deleted_meanwhile)
    [(rank, parts)] = rank_parts(job.id)
    params = params_from_overrides(None)
    rank_results.kept_or_read(job.id, rank, parts, params, (COMPLETE_STEPS,))
    assert not kept_folder(job).exists()


# Every recommendation's parameters moved far from their defaults, so each judges otherwise.
MOVED = {
    "DataLoading_threshold_pct": 0,
    "Synchronization_threshold_pct": 0,
    "LaunchOverhead_min_launches": 1,
    "LaunchOverhead_short_kernel_pct": 0,
    "LaunchOverhead_gpu_idle_pct": 0,
    "TensorCores_threshold_pct": 0,
    "HostToDeviceCopies_small_copy_bytes": 1 << 40,
    "HostToDeviceCopies_small_copies_per_step": 0,
    "HostToDeviceCopies_pageable_pct": 0,
    "Communication_overlap_pct": 0,
}


@pytest.mark.django_db
def test_kept_facts_judged_with_other_parameters_equal_a_run_that_kept_nothing(user, reads):
    job = parse_job(user, "judged again", RANKS, window=COMPLETE_STEPS)
    run(job)
    defaults = JobInsights.objects.get(job=job, window=COMPLETE_STEPS).report
    logic.set_overrides(job, MOVED, job.owner)
    taken(reads)
    judged = run(job)
    assert taken(reads) == []
    report = JobInsights.objects.get(job=job, window=COMPLETE_STEPS).report
    assert report["recommendations"] != defaults["recommendations"]
    storage.remove_kept(job.id)
    assert run(job) == judged and taken(reads) == [0, 1]
    assert JobInsights.objects.get(job=job, window=COMPLETE_STEPS).report == report


@pytest.mark.django_db(transaction=True)
def test_a_rank_being_read_is_waited_for_not_read_again(user, monkeypatch):
    """A run that comes while another process reads the rank (a worker of the parses, in
    ``prepare_rank``) waits for what that one keeps: the rank is read once."""
    import threading

    from django.db import connection, connections

    from profiler_app.insights.inputs import rank_parts
    from profiler_app.insights.pure.rules import params_from_overrides
    from tests.conftest import wait_for

    job = parse_job(user, "read once", RANKS[:1], window=COMPLETE_STEPS)
    [(rank, parts)] = rank_parts(job.id)
    params = params_from_overrides(None)
    real = rank_results.read_rank
    reads, reading, go_on = [], threading.Event(), threading.Event()

    def held_up(*args):
        reads.append(args[0])
        reading.set()
        assert go_on.wait(600)
        return real(*args)

    monkeypatch.setattr(rank_results, "read_rank", held_up)
    found = {}

    def read_in_a_thread(name: str) -> None:  # a session of its own, as another process has
        try:
            found[name] = rank_results.kept_or_read(job.id, rank, parts, params, [COMPLETE_STEPS])
        finally:
            connections.close_all()

    def waiting() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            )
            return cursor.fetchone()[0] > 0

    first = threading.Thread(target=read_in_a_thread, args=("first",))
    second = threading.Thread(target=read_in_a_thread, args=("second",))
    first.start()
    try:
        assert reading.wait(600)  # the first reads the rank...
        second.start()
        wait_for(waiting)  # ...and the second waits for it
    finally:
        go_on.set()
        first.join()
        if second.ident is not None:  # started
            second.join()
    assert reads == [rank]
    assert found["second"][COMPLETE_STEPS].rank == rank  # what the first kept
