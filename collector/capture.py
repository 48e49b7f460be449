"""Kineto capture windows through ``torch.profiler`` on a step schedule.

Each finished window is exported as a Chrome trace by Kineto's C++ writer into the spool's
scratch folder and handed to the flusher thread, which has a child process pack it into the
next chunk (``collector.chunker.kineto_window``): the server unpacks it into the same JSON and
reads it with the same parser as an uploaded trace file, so a collector job keeps everything
such a file keeps (memory events, shapes, collective sizes, flows), and the training process
never parses JSON (a Python JSON parse would hold its GIL).

torch is imported lazily: the package must import on machines without it (the server).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

from collector.config import Config

log = logging.getLogger("collector")


class Phase(Enum):
    NONE = "none"
    WARMUP = "warmup"
    RECORD = "record"
    RECORD_AND_SAVE = "record_and_save"


def schedule_phase(
    step: int, skip_first: int, warmup: int, active: int, wait: int, repeat: int
) -> Phase:
    """Which part of the capture cycle step ``step`` is in.

    After ``skip_first`` steps the cycle is warm-up, active, wait: capture starts as early as
    possible so a short run still gets a window, and the wait keeps a week-long job's output
    proportional to ``active / (warmup + active + wait)`` of its steps.
    """
    if step < skip_first:
        return Phase.NONE
    pos = step - skip_first
    cycle = warmup + active + wait
    if repeat and pos // cycle >= repeat:
        return Phase.NONE
    pos %= cycle
    if pos < warmup:
        return Phase.WARMUP
    if pos < warmup + active - 1:
        return Phase.RECORD
    if pos == warmup + active - 1:
        return Phase.RECORD_AND_SAVE
    return Phase.NONE


def cycle_index(step: int, skip_first: int, warmup: int, active: int, wait: int) -> int:
    return max(0, step - skip_first) // (warmup + active + wait)


# The capture whose window a foreign Kineto session would collide with (see _install_guard).
_guard_owner: KinetoCapture | None = None


def _install_guard() -> None:
    """Notice when the script (or a library) starts its own torch.profiler session.

    Two Kineto sessions in one process end each other, and exporting a session another one
    ended crashes the process (SIGSEGV in torch 2.13). torch has no hook for "a profiler is
    starting", so the collector wraps ``torch.autograd.profiler._enable_profiler``, which every
    torch.profiler / emit_nvtx / emit_itt session calls, and ends its own window first.
    """
    import torch.autograd.profiler as autograd_profiler

    original = autograd_profiler._enable_profiler
    if getattr(original, "_collector_guard", False):
        return

    def enable(*args: Any, **kwargs: Any) -> Any:
        owner = _guard_owner
        if owner is not None and not owner._ours:
            try:
                owner.yield_to_foreign_session()
            except Exception as exc:  # noqa: BLE001 - never break the script's own profiler
                log.warning("profiler: ending the collector's Kineto window failed: %r", exc)
        return original(*args, **kwargs)

    enable._collector_guard = True  # type: ignore[attr-defined]
    autograd_profiler._enable_profiler = enable


class KinetoCapture:
    """One ``torch.profiler.profile`` driven by the collector's steps."""

    def __init__(
        self, config: Config, work_dir: Path, pid: int, on_window: Callable[[Path], None]
    ) -> None:
        self.config = config
        self.work_dir = work_dir
        self.pid = pid
        self.on_window = on_window
        self.status = "off"
        self.windows = 0
        self._prof: Any = None
        self._torch: Any = None
        self._skipped_cycle = -1
        self._lost = False
        self._ours = False
        self._warned: set[str] = set()

    def activities(self, torch: Any) -> tuple[list[Any], str]:
        """The activities to capture, or none with the reason."""
        from torch.profiler import ProfilerActivity

        if not torch.autograd.kineto_available():
            return [], "unavailable: this torch build has no Kineto"
        acts = []
        if self.config.cpu_operators:
            acts.append(ProfilerActivity.CPU)
        cuda = torch.cuda.is_available()
        if self.config.enable_cuda and cuda:
            acts.append(ProfilerActivity.CUDA)
        if acts:
            return acts, "ok"
        if self.config.enable_cuda and not cuda:
            return [], "off: no CUDA device (enable cpu_operators to capture CPU operators)"
        return [], "off: enable_cuda and cpu_operators are both disabled"

    def start(self) -> None:
        global _guard_owner
        import torch
        from torch.profiler import profile

        self._torch = torch
        acts, self.status = self.activities(torch)
        if not acts:
            return
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # Clearing events between windows is what bounds memory; torch warns about it once.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", module="torch")
        _install_guard()
        self._prof = profile(
            activities=acts,
            schedule=self._schedule,
            on_trace_ready=self._trace_ready,
            record_shapes=self.config.record_shapes,
            profile_memory=self.config.profile_memory,
            with_stack=False,
        )
        _guard_owner = self
        self._call(self._prof.start)

    @property
    def recording(self) -> bool:
        if self._prof is None:
            return False
        return self._prof.current_action.name in ("RECORD", "RECORD_AND_SAVE")

    def step(self) -> None:
        if self._prof is None:
            return
        self._check_not_clobbered()
        self._call(self._prof.step)

    def stop(self) -> None:
        global _guard_owner
        if _guard_owner is self:
            _guard_owner = None
        if self._prof is None:
            return
        prof, self._prof = self._prof, None
        self._check_not_clobbered(prof)
        self._call(prof.stop)

    def yield_to_foreign_session(self) -> None:
        """Another profiler is starting: finish our window cleanly and stay off from now on."""
        global _guard_owner
        self.status = "off: the script started its own torch.profiler session"
        self._warn_once(
            "foreign",
            "the script started its own torch.profiler session; the collector's Kineto capture "
            "ends here so the two sessions do not collide (annotations and sampling go on)",
        )
        if self.recording:
            self.stop()  # our session is the live one: end it and keep what it captured
            return
        # Warming up, our session is only prepared and the script's own preparation has
        # replaced it; stopping it now would start and stop *their* trace. Just let it go.
        _guard_owner = None
        self._prof = None

    def _call(self, fn: Callable[[], None]) -> None:
        self._ours = True
        try:
            fn()
        finally:
            self._ours = False

    def _schedule(self, step: int) -> Any:
        from torch.profiler import ProfilerAction

        c = self.config
        phase = schedule_phase(
            step,
            c.kineto_skip_first_steps,
            c.kineto_warmup_steps,
            c.kineto_active_steps,
            c.kineto_wait_steps,
            c.kineto_repeat,
        )
        if phase is Phase.NONE:
            return ProfilerAction.NONE
        cycle = cycle_index(
            step,
            c.kineto_skip_first_steps,
            c.kineto_warmup_steps,
            c.kineto_active_steps,
            c.kineto_wait_steps,
        )
        starting = self._prof is None or self._prof.current_action == ProfilerAction.NONE
        # Two Kineto sessions in one process end each other; exporting a session that another
        # ended crashes the process. So the collector yields to a profiler the user runs.
        if starting and self._torch.autograd._profiler_enabled():
            self._skipped_cycle = cycle
            self._warn_once("busy", "another torch.profiler session is running; skipping a window")
        if cycle == self._skipped_cycle:
            return ProfilerAction.NONE
        return getattr(ProfilerAction, phase.name)

    def _check_not_clobbered(self, prof: Any = None) -> None:
        prof = prof or self._prof
        recording = prof.current_action.name in ("RECORD", "RECORD_AND_SAVE")
        if recording and not self._torch.autograd._profiler_enabled():
            self._lost = True
            self._warn_once(
                "lost", "another torch.profiler session ended the collector's window; dropped"
            )

    def _trace_ready(self, prof: Any) -> None:
        if self._lost:
            self._lost = False
            return
        self.windows += 1
        path = self.work_dir / f"kineto-p{self.pid}-{self.windows}.json"
        prof.export_chrome_trace(str(path))
        self.on_window(path)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)
