"""The real H200 collector job of tests/data (README there): its spool and the torch.profiler
trace of the same loop, unpacked, and stored as a job the way a worker parses it."""

from __future__ import annotations

import tarfile
from pathlib import Path

from profiler_app.core.logic import PartSource, store_part
from profiler_app.core.models import TrainingJob
from tests.conftest import DATA_DIR
from tests.timeline.jobs import parse_stored

TARBALL = DATA_DIR / "h200_resnet50_collector_2026-11-26.tar.gz"


def unpack(folder: Path) -> Path:
    with tarfile.open(TARBALL) as archive:
        archive.extractall(folder, filter="data")
    return folder


def spool_chunks(folder: Path) -> list[Path]:
    """The collector's chunks in an unpacked ``folder``."""
    return sorted((folder / "spool").glob("*/*/*.pcol"))


def tb_traces(folder: Path) -> list[Path]:
    """The torch.profiler trace files in an unpacked ``folder``."""
    return sorted((folder / "tb").glob("*.json.gz"))


def stored_job(name: str, paths: list[Path], kind: str, owner=None) -> TrainingJob:
    """A completed job of ``paths`` (parts of ``kind``, rank 0 of node "vm"), each parsed."""
    job = TrainingJob.objects.create(name=name, owner=owner, status="completed")
    for path in paths:
        with path.open("rb") as stream:
            part, _ = store_part(job, PartSource("vm", 0, kind, path.name), stream)
        parse_stored(part.id)
    return job
