"""Kineto capture windows through ``torch.profiler``, opened when ``collector.budget`` says so.

Each window is a ``torch.profiler.profile`` of its own (warm-up, then active steps), so that
windows can record different activities: GPU activity only, or CPU operators too. Each finished window is exported as a Chrome trace by Kineto's C++ writer into the spool's
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
from pathlib import Path
from typing import Any

from collector.budget import CPU, FULL, GPU, FixedSchedule, WindowPlanner
from collector.config import Config

log = logging.getLogger("collector")


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
    """The collector's Kineto windows: one ``torch.profiler.profile`` each, opened at step
    boundaries when the planner allows it."""

    def __init__(
        self, config: Config, work_dir: Path, pid: int, on_window: Callable[[Path], None]
    ) -> None:
        self.config = config
        self.work_dir = work_dir
        self.pid = pid
        self.on_window = on_window
        self.status = "off"
        self.windows = 0
        self.planner: WindowPlanner | None = None
        self._activities: dict[str, list[Any]] = {}
        self._prof: Any = None
        self._torch: Any = None
        self._lost = False
        self._ours = False
        self._warned: set[str] = set()

    def activities(self, torch: Any) -> tuple[dict[str, list[Any]], str]:
        """The activities of each kind of window this machine and config allow (``budget``'s
        kinds), or none with the reason."""
        from torch.profiler import ProfilerActivity

        if not torch.autograd.kineto_available():
            return {}, "unavailable: this torch build has no Kineto"
        cpu, cuda = ProfilerActivity.CPU, ProfilerActivity.CUDA
        has_cuda = self.config.enable_cuda and torch.cuda.is_available()
        if has_cuda and self.config.cpu_operators:
            return {FULL: [cpu, cuda], GPU: [cuda]}, "ok"
        if has_cuda:
            return {GPU: [cuda]}, "ok"
        if self.config.cpu_operators:
            return {CPU: [cpu]}, "ok"
        if self.config.enable_cuda:
            return {}, "off: no CUDA device (enable cpu_operators to capture CPU operators)"
        return {}, "off: enable_cuda and cpu_operators are both disabled"

    def start(self, now_ns: int) -> None:
        global _guard_owner
        import torch

        self._torch = torch
        self._activities, self.status = self.activities(torch)
        if not self._activities:
            return
        if self.planner is None:
            self.planner = _planner(self.config, tuple(self._activities))
        self.planner.resume(now_ns)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        # Clearing events between windows is what bounds memory; torch warns about it once.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", module="torch")
        _install_guard()
        _guard_owner = self

    @property
    def recording(self) -> bool:
        if self._prof is None:
            return False
        return self._prof.current_action.name in ("RECORD", "RECORD_AND_SAVE")

    def step(self, now_ns: int, step: int | None) -> None:
        """A step ended at ``now_ns``: advance the window in progress, or open one."""
        planner = self.planner
        if planner is None or not self._activities:
            return
        planner.step_ended(now_ns, step, self.recording)
        if self._prof is not None:
            self._check_not_clobbered()
            self._call(self._prof.step)
            if self._prof is not None and self._prof.current_action.name == "NONE":
                self._prof = None  # its last step saved it
        if self._prof is None and planner.should_open(now_ns):
            self._open(planner, now_ns)

    def stop(self) -> None:
        global _guard_owner
        if _guard_owner is self:
            _guard_owner = None
        if self._prof is None:
            return
        prof, self._prof = self._prof, None
        self._check_not_clobbered(prof)
        was_recording = prof.current_action.name in ("RECORD", "RECORD_AND_SAVE")
        self._call(prof.stop)
        if not was_recording and self.planner is not None:
            self.planner.abandoned()  # stopped while warming up: nothing was exported

    def yield_to_foreign_session(self) -> None:
        """Another profiler is starting: finish our window cleanly and stay off from now on."""
        global _guard_owner
        self.status = "off: the script started its own torch.profiler session"
        self._activities = {}
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
        if self._prof is not None and self.planner is not None:
            self.planner.abandoned()
        self._prof = None

    def _open(self, planner: WindowPlanner, now_ns: int) -> None:
        from torch.profiler import profile, schedule

        # Two Kineto sessions in one process end each other; exporting a session that another
        # ended crashes the process. So the collector yields to a profiler the user runs.
        if self._torch.autograd._profiler_enabled():
            self._warn_once("busy", "another torch.profiler session is running; skipping a window")
            return
        kind = planner.next_kind()
        c = self.config
        prof = profile(
            activities=self._activities[kind],
            schedule=schedule(
                wait=0, warmup=c.kineto_warmup_steps, active=c.kineto_active_steps, repeat=1
            ),
            on_trace_ready=self._trace_ready,
            record_shapes=c.record_shapes and kind != GPU,
            profile_memory=c.profile_memory and kind != GPU,
            with_stack=False,
        )
        planner.opened(now_ns, kind)
        self._prof = prof
        self._call(prof.start)

    def _call(self, fn: Callable[[], None]) -> None:
        self._ours = True
        try:
            fn()
        finally:
            self._ours = False

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
            if self.planner is not None:
                self.planner.abandoned()
            return
        self.windows += 1
        path = self.work_dir / f"kineto-p{self.pid}-{self.windows}.json"
        prof.export_chrome_trace(str(path))
        if self.planner is not None:
            self.planner.saved()
        self.on_window(path)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)


def _planner(config: Config, kinds: tuple[str, ...]) -> WindowPlanner:
    """Windows spaced by the budget, or by the user's schedule where they set its wait."""
    fixed = None
    if config.kineto_wait_steps is not None:
        fixed = FixedSchedule(
            config.kineto_skip_first_steps, config.kineto_wait_steps, config.kineto_repeat
        )
    return WindowPlanner(
        config.overhead_budget_pct,
        config.kineto_warmup_steps,
        config.kineto_active_steps,
        config.kineto_skip_first_steps,
        kinds,
        fixed,
        0 if fixed is not None else config.kineto_repeat,
    )
