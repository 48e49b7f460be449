"""Verdicts of runs parsed by the real ingest, against numbers taken from the raw JSON."""

import gzip
import itertools
import json
import math
import statistics
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from profiler_app.core.models import TrainingJob
from profiler_app.history import logic
from profiler_app.history.models import RunVerdict, Series, SeriesRun
from profiler_app.history.pure.regression import TEST_NAME, Thresholds
from profiler_app.profiles.figures import step_time
from profiler_app.profiles.queries import job_summary
from tests.history.traces import ALLREDUCE, NCCL, NEW_KERNEL, raw_figures, raw_steps_ns
from tests.ingest.helpers import broker_down
from tests.timeline.jobs import TWO_RANKS, parse_job, parse_paths
from tests.traces.expected import DATA, expected

A100 = "gpu_training_rank0.pt.trace.json.gz"
RESNET_PT18 = "resnet50_pt18_workers4.pt.trace.json.gz"
TRACES = (RESNET_PT18, A100)  # in the order they were recorded


def judged(owner, name, path, series="nccl-model", **fields):
    job = parse_paths(owner, name, [("algo-1", 0, path)], **fields)
    logic.assign(job, series)
    logic.judge_job(job.pk)
    return job, RunVerdict.objects.get(job=job)


@pytest.mark.django_db
def test_it_flags_a_slower_run_with_its_causes(user, slower_trace):
    base, first = judged(user, "nccl-1", DATA / NCCL)
    run, verdict = judged(user, "nccl-2", slower_trace)
    raw_a, raw_b = raw_figures(NCCL), raw_figures(slower_trace)

    assert (first.status, first.baseline) == ("unjudged", None)  # the series' first run
    assert verdict.status == "regression" and verdict.baseline == base
    result = verdict.result
    assert result["baseline_median_ns"] == raw_a["median_ns"] == 222_442_191
    assert result["run_median_ns"] == raw_b["median_ns"] == 249_952_679
    assert result["change_pct"] == round(100 * (249_952_679 - 222_442_191) / 222_442_191, 2)
    # The one step time, named as the Dashboard names it.
    assert result["reason"] == (
        "Step time 249.95 ms (median of 3 steps) against 222.44 ms (median of 3 steps): "
        "+12.4 %, threshold 5 %, significant (p = 0.05 ≤ 0.05)."
    )
    assert step_time(run, "whole_trace")["label"] == "median of 3 steps"
    # 3 steps against 3, every one longer: the exact one-sided p is 1 / C(6, 3).
    assert result["test"] == {
        "name": TEST_NAME,
        "u": 9.0,
        "p_value": 0.05,
        "method": "exact",
        "n_baseline": 3,
        "n_run": 3,
    }
    causes = result["causes"]
    # The AllReduce kernel grew most, per step of the one rank: 15.59 ms → 43.64 ms.
    top = causes[0]
    assert top["kind"] == "kernel_grew" and top["name"].startswith(ALLREDUCE)
    assert top["baseline_ns"] == round(raw_a["allreduce_ns"] / 3) == 15_587_386
    assert top["run_ns"] == round(raw_b["allreduce_ns"] / 3) == 43_644_681
    assert "communication kernel" in top["detail"].lower()
    [new] = [c for c in causes if c["kind"] == "kernel_new"]
    assert new["name"] == NEW_KERNEL
    assert raw_b["new_runs"] == 120
    assert (new["baseline_ns"], new["run_ns"]) == (0, raw_b["new_ns"] // 3)
    assert new["extra"]["run_calls"] == 40.0
    deltas = [c["delta_ns"] for c in causes if c["kind"] != "kernel_gone"]
    assert deltas == sorted(deltas, reverse=True)
    # Figures for the History page, per step of the one rank.
    figures = SeriesRun.objects.get(job=run).figures
    assert (figures["steps"], figures["rank_steps"], figures["ranks"]) == (3, 3, 1)
    assert figures["step_p50_ns"] == raw_b["median_ns"]
    assert figures["kernel_ns_per_step"]["COMM"] >= round(raw_b["allreduce_ns"] / 3)


@pytest.mark.django_db
def test_it_finds_no_regression_in_the_same_run_twice(user):
    judged(user, "same-1", DATA / NCCL)
    _, verdict = judged(user, "same-2", DATA / NCCL)
    result = verdict.result
    assert verdict.status == "no_regression"
    assert result["change_pct"] == 0.0
    assert result["reason"].startswith(
        "Step time 222.44 ms (median of 3 steps) against 222.44 ms (median of 3 steps): "
        "+0.0 %, below the 5 % threshold."
    )
    assert result["test"]["method"] == "asymptotic"  # every step is tied with its copy
    assert result["test"]["p_value"] > 0.5
    assert result["causes"] == []


@pytest.mark.django_db
def test_steps_numbered_otherwise_are_the_same_steps_not_new_operators(user, tmp_path):
    """The same run profiled later in the training: its ProfilerStep#n are other numbers, but
    the steps are one operator ("ProfilerStep*", as key_averages() lists them), so no step
    turns up as a new operator among the causes."""
    with gzip.open(DATA / NCCL, "rt") as f:
        trace = json.load(f)
    renamed = 0
    for event in trace["traceEvents"]:
        if event.get("name", "").startswith("ProfilerStep#"):
            event["name"] = f"ProfilerStep#{int(event['name'].split('#')[1]) + 1000}"
            renamed += 1
    assert renamed == 3
    later = tmp_path / "nccl_later_steps.json.gz"
    with gzip.open(later, "wt") as f:
        json.dump(trace, f)
    first, _ = judged(user, "steps-1", DATA / NCCL, series="renumbered")
    # Any change of 22 µs a step is a cause here: a step's own time, named anew, would be one.
    Series.objects.filter(name="renumbered").update(cause_min_pct=0.01)
    _, verdict = judged(user, "steps-2", later, series="renumbered")
    assert verdict.status == "no_regression" and verdict.baseline == first
    assert verdict.result["causes"] == []


@pytest.mark.django_db
def test_it_cannot_judge_two_steps_against_two(user, slower_trace):
    judged(user, "cut-1", DATA / NCCL, window="complete_steps")
    _, verdict = judged(user, "cut-2", slower_trace, window="complete_steps")
    assert verdict.status == "unjudged"
    assert "2 steps against 2" in verdict.result["reason"]
    assert verdict.result["test"] is None
    # The causes are still there for a reader.
    assert any(c["name"].startswith(ALLREDUCE) for c in verdict.result["causes"])


@pytest.mark.django_db
def test_it_takes_the_previous_run_that_passed_as_baseline(user, slower_trace):
    good, _ = judged(user, "b-1", DATA / NCCL)
    _, slow = judged(user, "b-2", slower_trace)
    _, again = judged(user, "b-3", DATA / NCCL)
    assert slow.status == "regression"
    assert again.baseline == good  # not the regressed b-2
    series = SeriesRun.objects.get(job=good).series
    series.baseline = good
    series.save()
    assert logic.default_baseline(good, series) is None  # its own baseline: the first run


@pytest.mark.django_db
def test_it_names_the_series_after_the_job_when_nobody_chose(user):
    job = parse_job(user, "resnet-run-7", [("algo-1", 0, "multirank_sampled/rank-0.json.gz")])
    logic.judge_job(job.pk)
    run = SeriesRun.objects.get(job=job)
    assert (run.series.name, run.chosen, run.series.owner) == ("resnet", False, user)


@pytest.mark.django_db
def test_it_divides_by_rank_steps(user):
    """Two ranks of one job against one rank: every cause per step per rank."""
    two = parse_job(user, "ranks-1", TWO_RANKS)
    one = parse_job(user, "ranks-2", [("algo-1", 0, "multirank_sampled/rank-0.json.gz")])
    a = logic.run_figures(two, "whole_trace")
    b = logic.run_figures(one, "whole_trace")
    assert (a.ranks, a.rank_steps, b.ranks, b.rank_steps) == (2, 4, 1, 2)
    verdict = logic.verdict_of(one, two, Thresholds())
    for cause in verdict.causes:
        assert cause.delta_ns == cause.run_ns - cause.baseline_ns


@pytest.mark.django_db
def test_the_sweep_finds_ended_parsed_jobs_without_a_current_verdict(user):
    job = parse_job(user, "swept-1", [("algo-1", 0, "multirank_sampled/rank-0.json.gz")])
    assert logic.missing_verdicts() == []  # in progress: not judged yet
    TrainingJob.objects.filter(pk=job.pk).update(status="completed")
    assert logic.missing_verdicts() == [job.pk]  # parsed by hand: no part_parsed was sent
    logic.judge_job(job.pk)
    assert logic.missing_verdicts() == []
    # A part parsed after the verdict makes it stale.
    RunVerdict.objects.filter(job=job).update(computed_at=job.created_at)
    assert logic.missing_verdicts() == [job.pk]


@pytest.mark.django_db
def test_a_run_is_judged_once_it_ended_and_its_parts_are_parsed(
    user, django_capture_on_commit_callbacks
):
    job = parse_job(user, "ending-1", [("algo-1", 0, "multirank_sampled/rank-0.json.gz")])
    part = job.parts.get()
    with django_capture_on_commit_callbacks() as sent:
        logic.on_part_parsed(None, part_id=part.pk)  # a collector job still training
        job.notes = "still training"
        job.save()
    assert sent == []
    with django_capture_on_commit_callbacks() as sent:
        job.status = "completed"
        job.save()  # the upload's last step, after its parts were parsed
    assert len(sent) == 1
    logic.judge_job(job.pk)
    with django_capture_on_commit_callbacks() as sent:
        job.notes = "judged already"
        job.save()
        logic.on_part_parsed(None, part_id=part.pk)
    assert sent == []


@pytest.mark.django_db
def test_a_new_threshold_judges_the_series_again_oldest_first(user, slower_trace):
    judged(user, "t-1", DATA / NCCL)
    _, slow = judged(user, "t-2", slower_trace)
    _, after = judged(user, "t-3", DATA / NCCL)
    assert (slow.status, after.baseline.name) == ("regression", "t-1")
    series = SeriesRun.objects.get(job=slow.job).series
    series.step_threshold_pct = 20.0
    series.save()
    assert logic.judge_series(series.pk) == 3
    slow.refresh_from_db()
    after.refresh_from_db()
    # t-2 now passes, so t-3 is judged against it: the same run again, 11 % faster.
    assert slow.status == "no_regression"
    assert (after.status, after.baseline.name) == ("no_regression", "t-2")
    assert after.result["change_pct"] < 0


@pytest.mark.django_db
def test_a_run_parsed_during_a_broker_outage_is_left_to_the_sweep(
    user, caplog, django_capture_on_commit_callbacks
):
    job = parse_paths(user, "nccl-1", [("algo-1", 0, DATA / NCCL)], status="completed")
    with broker_down(), django_capture_on_commit_callbacks(execute=True) as sent:
        logic.send_judge(job.pk)
    assert len(sent) == 1  # queued on commit, and the broker's refusal did not escape it
    [warning] = [r for r in caplog.records if r.name == "profiler_app.history.logic"]
    assert warning.levelname == "WARNING"
    assert f"Could not queue job {job.pk} to be judged (the history sweep will)" in warning.message
    assert logic.missing_verdicts() == [job.pk]
    assert not RunVerdict.objects.filter(job=job).exists()


RANK_0, RANK_1 = "multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz"


@pytest.mark.django_db
def test_step_time_per_rank_and_a_verdict_that_compares_each_rank_with_itself(user):
    """Two ranks against the same two traces with the ranks swapped: each rank's steps are
    divided by the baseline's median step of that rank before they are pooled."""
    base = parse_job(user, "ranks-1", [("algo-1", 0, RANK_0), ("algo-2", 1, RANK_1)])
    run = parse_job(user, "ranks-2", [("algo-1", 0, RANK_1), ("algo-2", 1, RANK_0)])
    r0, r1 = raw_steps_ns(DATA / RANK_0), raw_steps_ns(DATA / RANK_1)
    assert (r0, r1) == ([607_312_000, 622_928_000], [607_904_000, 630_639_000])

    logic.assign(base, "ranks")
    logic.judge_job(base.pk)
    figures = SeriesRun.objects.get(job=base).figures
    # Two steps each: the median is their mean, the p95 lies 95 % of the way between them.
    assert figures["step_per_rank"] == [
        {"rank": 0, "steps": 2, "p50_ns": 615_120_000, "p95_ns": 622_147_200},
        {"rank": 1, "steps": 2, "p50_ns": 619_271_500, "p95_ns": 629_502_250},
    ]
    assert (r0[0] + r0[1]) / 2 == 615_120_000 and r0[0] + (r0[1] - r0[0]) * 0.95 == 622_147_200
    assert r1[0] + (r1[1] - r1[0]) * 95 / 100 == 629_502_250

    verdict = logic.verdict_of(run, base, Thresholds())
    med0, med1 = statistics.median(r0), statistics.median(r1)
    base_rel = [s / med0 for s in r0] + [s / med1 for s in r1]
    run_rel = [s / med0 for s in r1] + [s / med1 for s in r0]  # run's rank 0 ran rank 1's trace
    change = 100 * (statistics.median(run_rel) - statistics.median(base_rel))
    assert verdict.change_pct == round(change / statistics.median(base_rel), 2) == -0.29
    u = sum(x > y for x in run_rel for y in base_rel)
    assert verdict.test.u == u == 8
    # Exact one-sided p: the share of the C(8, 4) ways to pick the run's 4 steps with U ≥ 8.
    pooled = sorted(base_rel + run_rel)
    at_least = sum(
        sum(pooled[i] > pooled[j] for i in pick for j in set(range(8)) - set(pick)) >= u
        for pick in itertools.combinations(range(8), 4)
    )
    assert verdict.test.p_value == at_least / math.comb(8, 4)
    # Pooled raw, the two runs' steps would be the same four numbers (all tied).
    assert verdict.test.method == "exact"
    assert verdict.status == "no_regression"
    assert "Steps compared per rank (2 against 2)" in verdict.reason
    # The pooled medians stay the raw all-rank ones.
    assert verdict.baseline_median_ns == int(statistics.median(r0 + r1)) == 615_416_000


@pytest.mark.django_db
def test_a_run_flushed_days_later_takes_its_place_by_when_it_ran(user):
    """A collector's spool flushed after a later run was uploaded: its process started first,
    so it comes first, and is the later run's baseline rather than judged against it."""
    later, first_verdict = judged(user, "f-2", DATA / NCCL, started_at=timezone.now())
    assert (first_verdict.status, first_verdict.baseline) == ("unjudged", None)
    days_before = later.started_at - timedelta(days=3)
    flushed, verdict = judged(user, "f-1", DATA / NCCL, started_at=days_before)
    assert flushed.created_at > later.created_at  # uploaded last
    series = SeriesRun.objects.get(job=later).series
    assert [run.job.name for run in logic.series_runs(series)] == ["f-1", "f-2"]
    assert [run.ran_at for run in logic.series_runs(series)] == [days_before, later.started_at]
    assert (verdict.status, verdict.baseline) == ("unjudged", None)  # nothing ran before it
    assert logic.default_baseline(later, series) == flushed
    # The later run, judged when it arrived with nothing before it, is judged again against
    # the run that turned out to come first (the same trace: no regression).
    again = RunVerdict.objects.get(job=later)
    assert (again.status, again.baseline) == ("no_regression", flushed)
    assert again.result["run_median_ns"] == again.result["baseline_median_ns"] == 222_442_191


@pytest.mark.django_db
def test_traces_imported_today_take_their_place_by_when_they_were_recorded(user):
    """Imported traces have no process start: each run is placed by its first event (the
    trace's clock says when), not by its upload. The A100 trace (April 2024) is uploaded
    first, the ResNet-50 one (January 2021) second; the 2021 run comes first."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    newer, _ = judged(user, "i-2024", DATA / A100, series="imports")
    older, verdict = judged(user, "i-2021", DATA / RESNET_PT18, series="imports")
    assert older.created_at > newer.created_at  # uploaded last
    series = SeriesRun.objects.get(job=older).series
    runs = list(logic.series_runs(series))
    assert [run.job.name for run in runs] == ["i-2021", "i-2024"]
    recorded = [epoch + timedelta(microseconds=expected(t).start_ns // 1000) for t in TRACES]
    assert [run.ran_at for run in runs] == recorded
    assert [f"{run.ran_at:%Y-%m-%d %H:%M:%S}" for run in runs] == [
        "2021-01-11 12:05:28",
        "2024-04-04 01:51:35",
    ]
    assert logic.ran_at(older) == recorded[0]
    assert job_summary(older)["recorded_start_ns"] == expected(RESNET_PT18).start_ns
    assert (verdict.status, verdict.baseline) == ("unjudged", None)  # nothing ran before it
    assert RunVerdict.objects.get(job=newer).baseline == older  # judged again against it


@pytest.mark.django_db
def test_a_trace_whose_clock_does_not_say_when_is_placed_by_its_upload(user, tmp_path):
    """A trace aligned on its own start (no baseTimeNanoseconds, times from 0) does not say
    when it ran: its run is placed by its upload, and its summary says no recorded start."""
    raw = json.loads(gzip.decompress((DATA / NCCL).read_bytes()))
    raw.pop("baseTimeNanoseconds")
    relative = tmp_path / "relative.json"
    relative.write_text(json.dumps(raw))
    job, _ = judged(user, "relative", relative, series="relative")
    assert logic.ran_at(job) == job.created_at
    assert job_summary(job)["recorded_start_ns"] is None
