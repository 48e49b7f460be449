"""Capture windows of a JAX or TensorFlow job with the framework's own profiler.

The windows open and close on the step boundaries and the overhead budget the Kineto windows
use (``collector.budget``), and each writes an XPlane profile (``<host>.xplane.pb``), which
the chunk carries as the window (``tracefmt.chunk``); the server reads it as it reads an
uploaded ``.xplane.pb``. The collector's annotations are the framework's trace annotations
while a window records (``jax.profiler.TraceAnnotation`` / ``StepTraceAnnotation``,
``tf.profiler.experimental.Trace``), so the profile's steps are the collector's steps.

jax and tensorflow are imported lazily: the collector imports without either.
"""

from __future__ import annotations

import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from collector.budget import CPU, FULL, WindowPlanner
from collector.capture import window_planner
from collector.config import JAX, PYTORCH, TENSORFLOW, Config

log = logging.getLogger("collector")

# The name each framework's jobs carry on the server (what an uploaded profile names).
DISPLAY_NAMES = {PYTORCH: "PyTorch", JAX: "JAX", TENSORFLOW: "TensorFlow"}


def job_framework(config: Config) -> str:
    """The framework whose profiler captures the job: the configured one, else JAX or
    TensorFlow where the process imported it and not torch, else PyTorch. Where both are
    imported (Keras imports jax where it is installed; a JAX job may read its data with
    tf.data), the one the script imported itself, else JAX."""
    if config.framework:
        return config.framework
    if "torch" in sys.modules:
        return PYTORCH
    imported = [name for name in (JAX, TENSORFLOW) if name in sys.modules]
    if len(imported) == 2:
        imported = [name for name in imported if _in_script(name)] or imported
    return imported[0] if imported else PYTORCH


def _in_script(package: str) -> bool:
    """Whether the script's own module holds ``package`` or one of its modules."""
    script = sys.modules.get("__main__")
    return any(
        isinstance(value, ModuleType)
        and (value.__name__ == package or value.__name__.startswith(f"{package}."))
        for value in list(vars(script).values() if script is not None else ())
    )


def framework_facts(framework: str) -> tuple[str, list[dict[str, Any]]]:
    """The framework's version and its accelerators (as the chunk's devices)."""
    if framework == JAX:
        import jax

        devices = [
            {"index": d.id, "name": d.device_kind, "total_memory_bytes": _memory_limit(d)}
            for d in jax.devices()
            if d.platform != "cpu"
        ]
        return str(jax.__version__), devices
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return str(tf.__version__), [
        {"index": i, "name": gpu.name, "total_memory_bytes": 0} for i, gpu in enumerate(gpus)
    ]


def _memory_limit(device: Any) -> int:
    try:
        return int((device.memory_stats() or {}).get("bytes_limit", 0))
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        return 0


class _Jax:
    def __init__(self) -> None:
        import jax.profiler

        self.profiler = jax.profiler
        self.has_accelerator = any(d.platform != "cpu" for d in __import__("jax").devices())

    def start(self, log_dir: Path) -> None:
        options = None
        if hasattr(self.profiler, "ProfileOptions"):  # jax 0.4.36 and later
            options = self.profiler.ProfileOptions()
            # No Python call stacks: the Kineto windows record none either (they cost the most).
            options.python_tracer_level = 0
        self.profiler.start_trace(str(log_dir), profiler_options=options)

    def stop(self) -> None:
        self.profiler.stop_trace()

    def annotation(self, name: str, step: int | None) -> Any:
        if step is None:
            return self.profiler.TraceAnnotation(name)
        return self.profiler.StepTraceAnnotation(name, step_num=step)


class _TensorFlow:
    def __init__(self) -> None:
        import tensorflow as tf

        self.profiler = tf.profiler.experimental
        self.has_accelerator = bool(tf.config.list_physical_devices("GPU"))

    def start(self, log_dir: Path) -> None:
        self.profiler.start(str(log_dir))

    def stop(self) -> None:
        self.profiler.stop()

    def annotation(self, name: str, step: int | None) -> Any:
        if step is None:
            return self.profiler.Trace(name)
        return self.profiler.Trace(name, step_num=step, _r=1)  # _r=1: a step marker


class XlaCapture:
    """A JAX or TensorFlow job's windows, each one profiler session of the framework's own
    (``start_trace`` / ``stop_trace``), opened at step boundaries when the planner allows it:
    the planner's warm-up steps pass first (the profiler has no warm-up of its own), then its
    active steps are recorded."""

    def __init__(
        self,
        config: Config,
        framework: str,
        work_dir: Path,
        pid: int,
        on_window: Callable[[Path, Callable[[Path], None]], None],
    ) -> None:
        self.config = config
        self.framework = framework
        self.work_dir = work_dir
        self.pid = pid
        self.on_window = on_window
        self.status = "off"
        self.windows = 0
        self.planner: WindowPlanner | None = None
        self._backend: _Jax | _TensorFlow | None = None
        self._open_window = False
        self._warmup_left = 0
        self._active_left = 0
        self._log_dir: Path | None = None
        self._warned: set[str] = set()

    @property
    def recording(self) -> bool:
        return self._log_dir is not None

    def start(self, now_ns: int) -> None:
        self._backend = _Jax() if self.framework == JAX else _TensorFlow()
        name = "jax.profiler" if self.framework == JAX else "tf.profiler"
        self.status = f"ok ({name})"
        if self.planner is None:
            kinds = (FULL,) if self._backend.has_accelerator else (CPU,)
            self.planner = window_planner(self.config, kinds)
        self.planner.resume(now_ns)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        if self.planner.should_open(now_ns):
            self._open(now_ns)

    def step(self, now_ns: int, step: int | None) -> None:
        """A step ended at ``now_ns``: advance the window in progress, or open one."""
        planner = self.planner
        if planner is None:
            return
        planner.step_ended(now_ns, step, self.recording)
        if self._open_window:
            if not self.recording:
                self._warmup_left -= 1
                if self._warmup_left <= 0:
                    self._record()
            else:
                self._active_left -= 1
                if self._active_left <= 0:
                    self._save()
        if not self._open_window and planner.should_open(now_ns):
            self._open(now_ns)

    def stop(self) -> None:
        """Profiling stops: a recording window is saved, a warming-up one dropped."""
        if self.recording:
            self._save()
        elif self._open_window and self.planner is not None:
            self._open_window = False
            self.planner.abandoned()

    def enter_annotation(self, name: str, step: int | None) -> Any:
        """The framework's annotation of ``name`` entered (a step marker for a step)."""
        assert self._backend is not None
        annotation = self._backend.annotation(name, step)
        annotation.__enter__()
        return annotation

    @staticmethod
    def exit_annotation(annotation: Any) -> None:
        annotation.__exit__(None, None, None)

    def _open(self, now_ns: int) -> None:
        assert self.planner is not None
        self.planner.opened(now_ns, self.planner.next_kind())
        self._open_window = True
        self._warmup_left = self.config.kineto_warmup_steps
        self._active_left = self.config.kineto_active_steps
        if self._warmup_left <= 0:
            self._record()

    def _record(self) -> None:
        assert self._backend is not None
        log_dir = self.work_dir / f"xplane-p{self.pid}-{self.windows + 1}"
        try:
            self._backend.start(log_dir)
        except Exception as exc:  # noqa: BLE001 - the script's own profiler session is running
            self._open_window = False
            if self.planner is not None:
                self.planner.abandoned()
            self._warn_once("busy", f"the profiler could not start ({exc}); skipping a window")
            return
        self._log_dir = log_dir

    def _save(self) -> None:
        assert self._backend is not None and self._log_dir is not None
        log_dir, self._log_dir = self._log_dir, None
        self._open_window = False
        try:
            self._backend.stop()  # writes <log_dir>/plugins/profile/<run>/<host>.xplane.pb
            [written] = log_dir.glob("plugins/profile/*/*.xplane.pb")
        except Exception as exc:  # noqa: BLE001 - another session ended ours; nothing written
            shutil.rmtree(log_dir, ignore_errors=True)
            if self.planner is not None:
                self.planner.abandoned()
            self._warn_once("lost", f"a profiler window was not written ({exc!r}); dropped")
            return
        path = log_dir.with_name(f"{log_dir.name}.xplane.pb")
        written.replace(path)
        shutil.rmtree(log_dir, ignore_errors=True)  # JAX's trace-viewer copy of the same events
        self.windows += 1
        if self.planner is not None:
            self.planner.saved()
        self.on_window(path, _written_already)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)


def _written_already(path: Path) -> None:
    """The profiler wrote the window when it stopped: nothing is left to export."""
