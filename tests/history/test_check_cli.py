"""``profiler-collect upload --series`` and ``check`` against the real server (live server,
Celery worker, PostgreSQL): the exit code CI branches on, and the causes it prints."""

import json
import subprocess

import pytest

from profiler_app.history.models import RunVerdict, SeriesRun
from tests.collector.helpers import python
from tests.conftest import wait_for
from tests.history.traces import ALLREDUCE, NCCL, NEW_KERNEL, raw_figures
from tests.traces.expected import DATA

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def cli(server, *args: str) -> subprocess.CompletedProcess:
    command = [
        python(),
        "-m",
        "collector.cli",
        *args,
        "--server",
        server.url,
        "--token",
        server.token,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def upload(server, path, job: str) -> None:
    done = cli(
        server, "upload", str(path), "--job", job, "--series", "nccl-model", "--rank", "0", "--wait"
    )
    assert done.returncode == 0, done.stderr


def test_check_exits_1_on_a_regression_and_0_on_the_same_run(server, slower_trace):
    upload(server, DATA / NCCL, "nccl-1")
    # The worker judges each run once its parts are parsed: the first has no baseline.
    first = wait_for(lambda: RunVerdict.objects.filter(job__name="nccl-1").first())
    assert (first.status, first.baseline) == ("unjudged", None)
    upload(server, slower_trace, "nccl-2")
    judged = wait_for(lambda: RunVerdict.objects.filter(job__name="nccl-2").first())
    assert (judged.status, judged.baseline.name) == ("regression", "nccl-1")
    upload(server, DATA / NCCL, "nccl-3")
    assert set(SeriesRun.objects.values_list("series__name", "chosen")) == {("nccl-model", True)}

    slower = cli(server, "check", "--job", "nccl-2", "--baseline", "nccl-1", "--json")
    assert slower.returncode == 1, slower.stderr
    verdict = json.loads(slower.stdout)
    raw_a, raw_b = raw_figures(NCCL), raw_figures(slower_trace)
    assert (verdict["status"], verdict["baseline_name"]) == ("regression", "nccl-1")
    assert (verdict["baseline_median_ns"], verdict["run_median_ns"]) == (
        raw_a["median_ns"],
        raw_b["median_ns"],
    )
    top = verdict["causes"][0]
    assert top["name"].startswith(ALLREDUCE)
    assert (top["baseline_ns"], top["run_ns"]) == (
        round(raw_a["allreduce_ns"] / 3),
        round(raw_b["allreduce_ns"] / 3),
    )
    [new] = [c for c in verdict["causes"] if c["kind"] == "kernel_new"]
    assert (new["name"], new["run_ns"]) == (NEW_KERNEL, raw_b["new_ns"] // 3)

    same = cli(server, "check", "--job", "nccl-3", "--baseline", "nccl-1")
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("nccl-3 against nccl-1: no regression")

    # A threshold above the growth (12.4 %): no regression either.
    lenient = cli(server, "check", "--job", "nccl-2", "--baseline", "nccl-1", "--threshold", "20")
    assert lenient.returncode == 0, lenient.stdout
    assert "below the 20 % threshold" in lenient.stdout

    text = cli(server, "check", "--job", "nccl-2", "--baseline", "nccl-1")
    assert text.stdout.splitlines()[0] == "nccl-2 against nccl-1: REGRESSION"
    assert f"- {NEW_KERNEL}: New kernel: 120 runs" in text.stdout


def test_check_exits_2_when_it_cannot_judge(server):
    upload(server, DATA / NCCL, "alone-1")
    first = cli(server, "check", "--job", "alone-1")
    assert first.returncode == 2, first.stdout + first.stderr
    assert "could not judge" in first.stdout and "No baseline" in first.stdout

    unknown = cli(server, "check", "--job", "no-such-job")
    assert unknown.returncode == 2
    assert "no job named 'no-such-job'" in unknown.stderr
