"""DataLoading on a collector job of a real CPU training loop fed by a DataLoader with two worker
processes (tests/collector/jobs/dataloader_job.py). The loop fetches each batch before its
``step_<n>`` annotation begins, as ``for batch in loader: with annotate(...)`` does, so the wait
lies between the collector's steps, inside Kineto's ProfilerStep of the same iteration.

The expected figures are computed here from the job's own chunks: the data loader's
``enumerate(DataLoader)#...__next__`` annotations in the Kineto windows and the collector's
captured ``step_<n>`` events.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from tests import h200
from tests.collector.helpers import JOBS, job_env, python
from tests.insights.helpers import compute_here, rules_by_name
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEPS = 12
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@pytest.fixture(scope="module")
def spool(tmp_path_factory) -> Path:
    spool = tmp_path_factory.mktemp("dataloader") / "spool"
    env = job_env(
        spool,
        PROFILER_JOB_NAME="dataloader",
        PROFILER_CPU_OPERATORS="1",
        # One window, fixed: step 0 skipped, step 1 warms up, steps 2-5 recorded.
        PROFILER_KINETO_SKIP_FIRST_STEPS="1",
        PROFILER_KINETO_WARMUP_STEPS="1",
        PROFILER_KINETO_ACTIVE_STEPS="4",
        PROFILER_KINETO_WAIT_STEPS=str(STEPS),
        PROFILER_KINETO_REPEAT="1",
    )
    done = subprocess.run(
        [python(), str(JOBS / "dataloader_job.py"), "--steps", str(STEPS), "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return spool


def ns(value: float | Decimal) -> int:
    return int(Decimal(str(value)) * 1000)


def raw_figures(chunks: list[Path]) -> tuple[int, int, int]:
    """(data-loader wait, time in the captured steps, captured steps) from the chunks: the
    captured steps are the collector's ``step_<n>`` whose iteration a window recorded
    (Kineto's ProfilerStep#<n>, from the end of the step before to the end of this one); the
    wait, the data-loader annotations that start in those iterations."""
    step_ns: dict[int, int] = {}
    iterations: dict[int, tuple[Decimal, Decimal]] = {}
    loads: list[tuple[Decimal, Decimal]] = []
    for path in chunks:
        chunk = read_chunk(path)
        names = chunk.event_names()
        for name, kind, dur in zip(
            names, chunk.events["ev_kind"], chunk.events["ev_dur_ns"], strict=True
        ):
            if kind == EventKind.STEP:
                step_ns[int(name.removeprefix("step_"))] = int(dur)
        for window in chunk.kineto:
            out = io.BytesIO()
            window.write_trace(out, 1 << 30)
            data = out.getvalue() if window.packed else gzip.decompress(out.getvalue())
            for event in json.loads(data, parse_float=Decimal)["traceEvents"]:
                name = event.get("name", "")
                if event.get("ph") != "X":
                    continue
                if name.startswith("enumerate(DataLoader)"):
                    loads.append((event["ts"], event["dur"]))
                if found := PROFILER_STEP.match(name):
                    iterations[int(found.group(1))] = (event["ts"], event["ts"] + event["dur"])
    captured = [n for n in iterations if n in step_ns]  # the last window's is cut at the stop
    wait_ns = sum(
        ns(dur)
        for start, dur in loads
        if any(iterations[n][0] <= start < iterations[n][1] for n in captured)
    )
    return wait_ns, sum(step_ns[n] for n in captured), len(captured)


def judged(user, name: str, chunks: list[Path]) -> dict:
    job = h200.stored_job(name, chunks, "collector", owner=user)
    return rules_by_name(compute_here(job))


def test_it_reads_the_data_loader_wait_before_each_captured_step(user, spool):
    chunks = sorted(spool.rglob("*.pcol"))
    wait_ns, step_ns, steps = raw_figures(chunks)
    assert steps == 4 and wait_ns > 0
    loading = judged(user, "dataloader", chunks)["DataLoading"]
    assert loading["status"] in ("issue_found", "no_issue"), loading["not_evaluated_reason"]
    figures = loading["evidence"]["ranks"]["0"]
    assert (figures["steps"], figures["step_ns"]) == (steps, step_ns)
    # Every fetch lies before its step's annotation: all of the wait is before the steps.
    assert figures["data_loading_ns"] == figures["before_steps_ns"] == wait_ns
    assert figures["share_pct"] == pytest.approx(100 * wait_ns / (step_ns + wait_ns))
    assert len(loading["evidence"]["top_events"]) > 0


def test_captures_without_data_loader_events_lack_the_data(user, tmp_path):
    """The H200 job's chunks (the collector of 2026-11-26 kept no CPU operators or torch
    annotations) hold no data-loader event: DataLoading says it cannot tell, never 0 %."""
    chunks = h200.spool_chunks(h200.unpack(tmp_path))
    for path in chunks:
        names = read_chunk(path).event_names()
        assert not any(str(n).startswith("enumerate(DataLoader)") for n in names)
        assert not read_chunk(path).kineto
    loading = judged(user, "h200", chunks)["DataLoading"]
    assert loading["status"] == "not_evaluated"
    assert "no data-loader events in the steps" in loading["not_evaluated_reason"]
