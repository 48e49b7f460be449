"""The local spool: every chunk is written here before it is uploaded, and stays until the
server has it. A process owns one folder, so ranks sharing a disk never race::

    <spool_dir>/<job>/<node>-r<rank>-p<pid>/
        job.json        what the job should look like on the server, and its final status
        *.pcol          chunks not yet uploaded (uploaded ones are deleted)
        uploaded.sha256 contents the server already has (a crash between upload and delete
                        must not upload twice)
        rejected/       chunks the server refused for good, kept for inspection
        scratch/        Kineto exports waiting for conversion
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from collector.identity import Identity, safe_name
from tracefmt.chunk import FILE_SUFFIX, ChunkFormatError, chunk_written_at

JOB_FILE = "job.json"
LEDGER_FILE = "uploaded.sha256"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def chunk_file_name(job: str, identity: Identity, seq: int) -> str:
    return (
        f"{safe_name(job)}-{safe_name(identity.node)}-r{identity.rank}-p{identity.pid}-"
        f"{seq:06d}{FILE_SUFFIX}"
    )


class ProcessSpool:
    """The spool folder of one process (or, for ``flush``, of one earlier process)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_process(cls, spool_dir: str | Path, job: str, identity: Identity) -> ProcessSpool:
        folder = f"{safe_name(identity.node)}-r{identity.rank}-p{identity.pid}"
        return cls(Path(spool_dir) / safe_name(job) / folder)

    @property
    def scratch(self) -> Path:
        return self.path / "scratch"

    def create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def write_job(self, info: dict[str, Any]) -> None:
        self._write_atomic(self.path / JOB_FILE, json.dumps(info, indent=1).encode())

    def read_job(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.path / JOB_FILE).read_text())
        return result

    def update_job(self, **changes: Any) -> dict[str, Any]:
        info = self.read_job()
        info.update(changes)
        self.write_job(info)
        return info

    def write_chunk(self, name: str, data: bytes) -> Path:
        path = self.path / name
        self._write_atomic(path, data)
        return path

    def pending(self) -> list[Path]:
        """Chunks still to upload, oldest first (names carry a zero-padded sequence number)."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.iterdir() if p.suffix == FILE_SUFFIX and p.is_file())

    def last_recorded_at(self) -> datetime | None:
        """When the process last recorded anything here: its newest waiting chunk's creation
        time, else its last upload (the ledger's) or its start (the job file's). A job whose
        process died ended then, not when its spool is flushed, days later maybe."""
        for path in reversed(self.pending()):
            with contextlib.suppress(ChunkFormatError, OSError):
                return chunk_written_at(path)
        written = [
            path.stat().st_mtime
            for path in (self.path / LEDGER_FILE, self.path / JOB_FILE)
            if path.exists()
        ]
        return datetime.fromtimestamp(max(written), UTC) if written else None

    def uploaded(self) -> set[str]:
        ledger = self.path / LEDGER_FILE
        if not ledger.exists():
            return set()
        return {line.strip() for line in ledger.read_text().splitlines() if line.strip()}

    def mark_uploaded(self, path: Path | None, digest: str) -> None:
        with (self.path / LEDGER_FILE).open("a") as fh:
            fh.write(digest + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if path is not None:
            path.unlink(missing_ok=True)

    def reject(self, path: Path, reason: str) -> Path:
        folder = self.path / "rejected"
        folder.mkdir(exist_ok=True)
        target = folder / path.name
        path.replace(target)
        (folder / f"{path.name}.reason.txt").write_text(reason + "\n")
        return target

    def remove_if_empty(self) -> None:
        """Drop the folder once nothing is left to upload (keeps rejected chunks)."""
        if self.pending() or (self.path / "rejected").exists():
            return
        for name in (JOB_FILE, LEDGER_FILE):
            (self.path / name).unlink(missing_ok=True)
        for leftover in self.scratch.glob("*") if self.scratch.exists() else []:
            leftover.unlink(missing_ok=True)
        for folder in (self.scratch, self.path, self.path.parent):
            with contextlib.suppress(OSError):
                folder.rmdir()

    def _write_atomic(self, path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            with tmp.open("wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def iter_spools(spool_dir: str | Path) -> Iterator[ProcessSpool]:
    """Every process folder under ``spool_dir`` that has a job description."""
    root = Path(spool_dir)
    if not root.is_dir():
        return
    for job_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for proc_dir in sorted(p for p in job_dir.iterdir() if p.is_dir()):
            if (proc_dir / JOB_FILE).exists():
                yield ProcessSpool(proc_dir)
