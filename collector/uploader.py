"""Background upload of spooled chunks, with retries, backoff and sha256 de-duplication.

The same ``SpoolSender`` also serves ``profiler-collect flush``, so what a training process
could not deliver is delivered later by exactly the same rules.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from pathlib import Path
from typing import Any

from collector.api import ApiClient, ApiError, ProgressFn
from collector.spool import ProcessSpool, sha256_file, sha256_hex

log = logging.getLogger("collector")

FINAL_STATUSES = ("completed", "failed", "stopped")
MAX_BACKOFF_S = 30.0
# The longest Retry-After the live uploader honours (its chunks stay spooled meanwhile).
MAX_RETRY_AFTER_S = 300.0
# How long an idle uploader sleeps between looks at its spool (new chunks wake it at once).
IDLE_WAIT_S = 10.0


class SpoolSender:
    """Sends one process spool's job, chunks and statuses to one server."""

    def __init__(
        self, spool: ProcessSpool, client: ApiClient, info: dict[str, Any] | None = None
    ) -> None:
        self.spool = spool
        self.client = client
        # A live process keeps its job description in memory: its spool may be unwritable.
        self.info = info
        self.job_id: int | None = None
        self.sent_chunks = 0
        self.known_chunks = 0  # the server (or our ledger) already had them

    def ensure_job(self) -> int:
        if self.job_id is None:
            job, created = self.client.ensure_job(self._info()["job"])
            if not created and job.get("status") in FINAL_STATUSES:
                log.warning(
                    "profiler: job %r already exists with status %s; adding parts to it",
                    job["name"],
                    job["status"],
                )
            self.job_id = int(job["id"])
        return self.job_id

    def send_chunk(
        self, path: Path | None, data: bytes | None = None, progress: ProgressFn | None = None
    ) -> None:
        """Upload a spooled file (``path``) or an in-memory chunk (``data`` with ``path``'s name)."""
        if path is None:
            raise ValueError("a chunk needs a name")
        digest = sha256_hex(data) if data is not None else sha256_file(path)
        if digest in self.spool.uploaded():
            self.known_chunks += 1
            self._forget(path if data is None else None, digest)
            return
        job_id = self.ensure_job()
        source = self._info()["source"]
        try:
            _, created = self.client.upload_part(
                job_id,
                data if data is not None else path,
                path.name,
                {**source, "kind": "collector"},
                progress,
            )
        except ApiError as err:
            if err.retryable or err.status in (401, 403, 404):
                raise
            if data is None:
                target = self.spool.reject(path, str(err))
                log.error("profiler: server refused %s (%s); kept in %s", path.name, err, target)
            else:
                log.error("profiler: server refused %s (%s); dropped", path.name, err)
            return
        if created:
            self.sent_chunks += 1
        else:
            self.known_chunks += 1
        self._forget(path if data is None else None, digest)

    def send_status(self, status: str, ended_at: str | None = None) -> None:
        fields: dict[str, Any] = {"status": status}
        if ended_at:
            fields["ended_at"] = ended_at
        self.client.update_job(self.ensure_job(), fields)

    def flush(self, progress: ProgressFn | None = None) -> None:
        """Everything pending in the spool, then the recorded final status (``flush`` CLI)."""
        for path in self.spool.pending():
            self.send_chunk(path, progress=progress)
        info = self.spool.read_job()
        if info.get("final_status") and not info.get("final_status_sent"):
            self.send_status(info["final_status"], info.get("ended_at"))
            self.spool.update_job(final_status_sent=True)

    def _info(self) -> dict[str, Any]:
        return self.info if self.info is not None else self.spool.read_job()

    def _forget(self, path: Path | None, digest: str) -> None:
        try:
            self.spool.mark_uploaded(path, digest)
        except OSError as exc:
            # The server de-duplicates by sha256 too; a full disk only costs a re-send.
            log.debug("profiler: could not record upload of %s: %s", digest[:12], exc)


class Uploader:
    """The training process's upload thread. Never raises into the caller."""

    def __init__(
        self,
        spool: ProcessSpool,
        client: ApiClient | None,
        job_info: dict[str, Any],
        max_memory_bytes: int,
    ) -> None:
        self.spool = spool
        self.sender = SpoolSender(spool, client, job_info) if client is not None else None
        self.job_info = job_info
        self.max_memory_bytes = max_memory_bytes
        self.server_down = False
        self.disabled_reason: str | None = None
        # Failed tries since the last one that went through (the backoff grows with them).
        self.failed_tries = 0
        # CPU time of the upload thread so far (the overhead budget counts it).
        self.cpu_ns = 0
        self._memory: list[tuple[Path, bytes]] = []
        self._memory_bytes = 0
        self._statuses: list[tuple[str, str | None]] = []
        self._cond = threading.Condition()
        self._busy = False
        self._closing = False
        self._retry_now = False  # drain() cuts the backoff short for one last try
        self._asked_wait_s = 0.0  # the Retry-After of the last refusal (0: none)
        self._warned: set[str] = set()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            self.spool.create()
            self.spool.write_job(self.job_info)
        except OSError as exc:
            self._warn_once(
                "spool",
                f"cannot write to the spool {self.spool.path} ({exc}); "
                "keeping chunks in memory until they are uploaded",
            )
        if self.sender is None:
            return
        self._thread = threading.Thread(target=self._run, name="profiler-uploader", daemon=True)
        self._thread.start()

    def submit(self, name: str, data: bytes) -> None:
        """Spool a chunk (or keep it in memory when the disk refuses) and wake the thread."""
        try:
            self.spool.write_chunk(name, data)
        except OSError as exc:
            self._warn_once(
                "spool",
                f"cannot write to the spool {self.spool.path} ({exc}); "
                "keeping chunks in memory until they are uploaded",
            )
            with self._cond:
                if self.sender is None or self._memory_bytes + len(data) > self.max_memory_bytes:
                    self._warn_once(
                        "dropped",
                        "chunk dropped: spool unavailable and memory "
                        "queue full (or no server configured)",
                    )
                    return
                self._memory.append((self.spool.path / name, data))
                self._memory_bytes += len(data)
        with self._cond:
            self._cond.notify_all()

    def set_status(self, status: str, ended_at: str | None = None) -> None:
        if status in FINAL_STATUSES:
            try:
                self.spool.update_job(final_status=status, ended_at=ended_at)
            except OSError as exc:
                self._warn_once("status", f"cannot record the job status in the spool: {exc}")
        with self._cond:
            self._statuses.append((status, ended_at))
            self._cond.notify_all()

    def drain(self, timeout_s: float) -> bool:
        """Wait until everything is sent. While the server is unreachable it tries once more at
        once, not after the backoff (the server may be back since the last try), and gives up
        if that fails too; a server that asked to be left alone (Retry-After) is not asked."""
        if self.sender is None:
            return False
        deadline = time.monotonic() + timeout_s
        tried_again = False
        with self._cond:
            while self._has_work() or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or self.disabled_reason:
                    return False
                if self.server_down and not self._busy:
                    if tried_again or self._asked_wait_s > 0:
                        return False
                    tried_again = True
                    self._retry_now = True  # cleared by the thread as that try starts
                    self._cond.notify_all()
                    self._cond.wait_for(lambda: not (self._retry_now or self._busy), left)
                    continue
                self._cond.wait(min(left, 0.2))
        return True

    def close(self, timeout_s: float) -> bool:
        done = self.drain(timeout_s)
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        return done

    def _has_work(self) -> bool:
        return bool(self._statuses or self._memory or self.spool.pending())

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closing and (self.disabled_reason or not self._has_work()):
                    # submit() and close() notify; waking more often only costs the training.
                    self._cond.wait(IDLE_WAIT_S)
                if self._closing:
                    return
                self._busy = True
                self._retry_now = False
            try:
                self._round()
                self.cpu_ns = time.thread_time_ns()
                self.failed_tries = 0
                if self.server_down:
                    log.warning("profiler: server reachable again; spooled chunks uploaded")
                self.server_down = False
            except ApiError as err:
                if not err.retryable:
                    self.disabled_reason = str(err)
                    log.error(
                        "profiler: uploads stopped, chunks stay in %s: %s", self.spool.path, err
                    )
                else:
                    if not self.server_down:
                        log.warning(
                            "profiler: %s; spooling to %s and retrying", err, self.spool.path
                        )
                    self.server_down = True
                    self.failed_tries += 1
                    self._asked_wait_s = err.retry_after_s or 0.0
            except Exception as exc:  # noqa: BLE001 - the thread must survive anything
                self._warn_once("crash", f"upload failed unexpectedly: {exc!r}")
                self.failed_tries += 1
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            if failures := self.failed_tries:
                delay = min(MAX_BACKOFF_S, 0.5 * 2 ** (failures - 1)) * random.uniform(0.8, 1.2)
                # A busy server (429/503) says when to come back; sooner would only be refused.
                delay = max(delay, min(self._asked_wait_s, MAX_RETRY_AFTER_S))
                with self._cond:
                    self._cond.wait_for(lambda: self._closing or self._retry_now, timeout=delay)

    def _round(self) -> None:
        assert self.sender is not None
        self.sender.ensure_job()
        while self._statuses and self._statuses[0][0] not in FINAL_STATUSES:
            self.sender.send_status(*self._statuses[0])
            self._pop_status()
        for path in self.spool.pending():
            self.sender.send_chunk(path)
        while self._memory:
            path, data = self._memory[0]
            self.sender.send_chunk(path, data)
            with self._cond:
                self._memory.pop(0)
                self._memory_bytes -= len(data)
        while self._statuses:
            status, ended_at = self._statuses[0]
            self.sender.send_status(status, ended_at)
            if status in FINAL_STATUSES:
                with contextlib.suppress(OSError):
                    self.spool.update_job(final_status_sent=True)
            self._pop_status()

    def _pop_status(self) -> None:
        with self._cond:
            self._statuses.pop(0)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)
