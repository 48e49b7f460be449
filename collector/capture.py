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

import json
import logging
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
        self,
        config: Config,
        work_dir: Path,
        pid: int,
        on_window: Callable[[Path, Callable[[Path], None]], None],
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
            self.planner = window_planner(self.config, tuple(self._activities))
        self.planner.resume(now_ns)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        _install_guard()
        _guard_owner = self
        if self.planner.should_open(now_ns):  # a fixed schedule that skips no step
            self._open(self.planner, now_ns)

    @property
    def recording(self) -> bool:
        if self._prof is None:
            return False
        return self._prof.recording

    def step(self, now_ns: int, step: int | None) -> None:
        """A step ended at ``now_ns``: advance the window in progress, or open one."""
        planner = self.planner
        if planner is None or not self._activities:
            return
        planner.step_ended(now_ns, step, self.recording)
        if self._prof is not None:
            self._check_not_clobbered()
            self._call(self._prof.step)
            if self._prof is not None and self._prof.done:
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
        was_recording = prof.recording
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
        # Two Kineto sessions in one process end each other; exporting a session that another
        # ended crashes the process. So the collector yields to a profiler the user runs.
        if self._torch.autograd._profiler_enabled():
            self._warn_once("busy", "another torch.profiler session is running; skipping a window")
            return
        kind = planner.next_kind()
        c = self.config
        window = _Window(
            self._torch,
            self._activities[kind],
            c.kineto_warmup_steps,
            c.kineto_active_steps,
            record_shapes=c.record_shapes and kind != GPU,
            profile_memory=c.profile_memory and kind != GPU,
            first_step=planner.steps_run,
            on_done=self._trace_ready,
        )
        planner.opened(now_ns, kind)
        self._prof = window
        self._call(window.start)

    def _call(self, fn: Callable[[], None]) -> None:
        self._ours = True
        try:
            fn()
        finally:
            self._ours = False

    def _check_not_clobbered(self, prof: Any = None) -> None:
        prof = prof or self._prof
        if prof.recording and not self._torch.autograd._profiler_enabled():
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
        if self.planner is not None:
            self.planner.saved()
        # The flusher thread exports it: off the training thread, which on a GPU is mostly
        # waiting for the device then, without the GIL.
        self.on_window(self.work_dir / f"kineto-p{self.pid}-{self.windows}.json", prof.export)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)


def window_planner(config: Config, kinds: tuple[str, ...]) -> WindowPlanner:
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


class _Window:
    """One Kineto window, driven a step at a time: prepared for its warm-up steps, then
    recording its active steps, each inside a ``ProfilerStep#n`` range (as torch.profiler marks
    them, and as the server finds a window's steps), then stopped and handed to ``on_done``.

    It drives ``torch.autograd.profiler.profile`` itself rather than ``torch.profiler.profile``,
    whose first window imports ``torch._inductor`` on the training thread (3 s of CPU on a
    job that never compiles) to ask whether CUDA graphs are on.
    """

    def __init__(
        self,
        torch: Any,
        activities: list[Any],
        warmup: int,
        active: int,
        *,
        record_shapes: bool,
        profile_memory: bool,
        first_step: int,
        on_done: Callable[[_Window], None],
    ) -> None:
        from torch.profiler import ProfilerActivity

        self.torch = torch
        self.warmup_left = warmup
        self.active_left = active
        self.step_number = first_step
        self.on_done = on_done
        self.recording = False
        self.done = False
        self._step_range: Any = None
        self._prof = torch.autograd.profiler.profile(
            use_cpu=ProfilerActivity.CPU in activities,
            use_device="cuda" if ProfilerActivity.CUDA in activities else None,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=False,
            use_kineto=True,
        )

    def start(self) -> None:
        self._prof._prepare_trace()
        if not self.warmup_left:
            self._record()

    def step(self) -> None:
        """The step in progress ended."""
        self.step_number += 1
        if not self.recording:
            self.warmup_left -= 1
            if self.warmup_left <= 0:
                self._record()
            return
        self._end_step_range()
        self.active_left -= 1
        if self.active_left > 0:
            self._begin_step_range()
        else:
            self._save()

    def stop(self) -> None:
        """Profiling stops: a recording window is saved, a warming-up one dropped."""
        if self.done:
            return
        if self.recording:
            self._end_step_range()
            self._save()
            return
        self._prof._start_trace()  # what a prepared session needs before it can be ended
        self._prof.__exit__(None, None, None)
        self.done = True

    def export(self, path: Path) -> None:
        self._prof.export_chrome_trace(str(path))

    def _record(self) -> None:
        self._prof._start_trace()
        self.recording = True
        info = _distributed_info(self.torch)
        if info:
            self.torch.autograd._add_metadata_json("distributedInfo", json.dumps(info))
        self._begin_step_range()

    def _begin_step_range(self) -> None:
        self._step_range = self.torch.autograd.profiler.record_function(
            f"ProfilerStep#{self.step_number}"
        )
        self._step_range.__enter__()

    def _end_step_range(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def _save(self) -> None:
        self._prof.__exit__(None, None, None)  # synchronises the device, then stops Kineto
        self.recording = False
        self.done = True
        self.on_done(self)


def _distributed_info(torch: Any) -> dict[str, Any] | None:
    """What torch.profiler writes as a trace's ``distributedInfo`` (the cluster view reads the
    rank and world size from it)."""
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized():
        return None
    backend = dist.get_backend()
    info = {
        "backend": backend,
        "rank": dist.get_rank(),
        "world_size": dist.get_world_size(),
        "pg_count": dist.get_pg_count(),
        "pg_config": dist.distributed_c10d._get_all_pg_configs(),
    }
    if backend == "nccl":
        info["nccl_version"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    return info
