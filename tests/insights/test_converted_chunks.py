"""A real job of the older collector (chunk format 1, Kineto's events converted into the chunk's
columns) is read over the steps Kineto recorded, not over every annotated step.

``h200_resnet50_collector_2026-11-26.tar.gz`` (tests/data/README.md) is the spool of a ResNet-50
loop on an NVIDIA H200: 160 annotated steps in 8 chunks, Kineto recording 4 steps of every 50.
The job is built from the spool's chunks through the server's path (stored, parsed, analysed as
a worker does); every expected figure comes from the chunks' arrays (``tests.insights.converted``).
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from profiler_app.core.logic import PartSource, delete_job, store_part
from profiler_app.core.models import TrainingJob
from profiler_app.insights.models import InsightsStatus, JobInsights
from profiler_app.profiles.figures import window_info
from profiler_app.profiles.models import Step
from tests.conftest import DATA_DIR
from tests.insights.converted import Converted, GpuOp, read_converted
from tests.insights.helpers import compute_here
from tests.timeline.jobs import parse_stored
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind, MemcpyKind

pytestmark = pytest.mark.django_db

TARBALL = DATA_DIR / "h200_resnet50_collector_2026-11-26.tar.gz"


@pytest.fixture(scope="module")
def chunks(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("h200")
    with tarfile.open(TARBALL) as archive:
        archive.extractall(folder, filter="data")
    return sorted((folder / "spool").glob("*/*/*.pcol"))


@pytest.fixture(scope="module")
def raw(chunks) -> Converted:
    return read_converted(chunks)


@pytest.fixture(scope="module")
def job(chunks, django_db_setup, django_db_blocker):
    """The job of the spool's chunks, parsed and analysed as a worker does."""
    with django_db_blocker.unblock():
        job = TrainingJob.objects.create(name="h200-resnet50-bf16", status="completed")
        for path in chunks:
            with path.open("rb") as stream:
                part, _ = store_part(job, PartSource("vm", 0, "collector", path.name), stream)
            parse_stored(part.id)
        compute_here(job)  # computed here, as the worker would
        yield job
        delete_job(job)


def in_steps(raw: Converted) -> list[GpuOp]:
    """The GPU ops launched in the captured steps (what a share of step time counts)."""
    return [op for op in raw.gpu_ops if op.step is not None]


def pageable_copies(raw: Converted) -> list[int]:
    """The durations of the pageable host-to-device copies launched in the captured steps."""
    return [
        op.dur_ns
        for op in in_steps(raw)
        if op.memcpy_kind == MemcpyKind.HTOD and "Pageable" in op.name
    ]


def test_the_spool_is_what_the_test_assumes(chunks, raw):
    assert len(chunks) == 8
    assert all(read_chunk(path).meta["version"] == 1 for path in chunks)
    assert len(raw.steps) == 160
    assert raw.captured == [s for first in (57, 177, 297, 417) for s in range(first, first + 4)]
    assert 840e6 < raw.step_ns < 850e6 and len(pageable_copies(raw)) == 32


def test_it_marks_the_steps_kineto_recorded(job, raw):
    captured = Step.objects.filter(job=job, captured=True).values_list("step", flat=True)
    assert sorted(captured) == raw.captured
    assert Step.objects.filter(job=job).count() == len(raw.steps)
    info = window_info(job)
    assert info["label"] == "captured steps 57–60, 177–180, 297–300, 417–420 (16 of 160)"
    assert (info["steps_kept"], info["steps_total"]) == (16, 160)


def test_it_takes_copy_shares_and_kernel_time_over_the_captured_steps(job, raw):
    row = JobInsights.objects.get(job=job)
    assert row.status == InsightsStatus.DONE, row.error
    found = row.report["recommendations"]
    rank = next(r for r in found if r["rule"] == "HostToDeviceCopies")["evidence"]["ranks"]["0"]
    assert rank["steps"] == 16
    assert rank["step_ns"] == raw.step_ns
    assert rank["window"] == "captured steps 57–60, 177–180, 297–300, 417–420 (16 of 160)"
    copies = pageable_copies(raw)
    assert rank["pageable_copies"] == len(copies) == 32
    assert rank["pageable_ns"] == sum(copies)
    # About 22 % of the captured steps' time (dividing by all 160 steps gave 1.8 %).
    assert rank["pageable_pct_of_steps"] == pytest.approx(100 * sum(copies) / raw.step_ns)
    assert 20 < rank["pageable_pct_of_steps"] < 24
    kernel_ns = sum(op.dur_ns for op in in_steps(raw) if op.kind == EventKind.KERNEL)
    assert rank["kernel_ns"] == kernel_ns
    assert 450e6 < kernel_ns < 460e6
