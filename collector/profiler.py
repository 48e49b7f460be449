"""``Profiler``: annotations, steps, and the threads that capture, chunk and upload.

Hot path: an annotation costs two ``time.time_ns()`` calls and one deque append (plus an NVTX
push/pop on CUDA machines and a ``record_function`` inside Kineto windows). Everything else runs
on the flusher, sampler and uploader threads. Every public entry point swallows its own
failures: a broken profiler logs once and the training job carries on.

One class on purpose (near 660 lines): its state (open job, steps, windows, threads) is shared
by the training thread and the background ones, and is read in one place.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import platform
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from collector.api import ApiClient
from collector.auto_steps import OptimizerSteps
from collector.budget import WindowPlanner
from collector.capture import KinetoCapture
from collector.chunker import Annotation, ChunkBuilder, PackingChild, pack_window
from collector.config import PYTORCH, Config
from collector.identity import Identity, default_job_name, detect, resource_ids, safe_name
from collector.lifecycle import Hooks
from collector.sampler import Sampler
from collector.spool import ProcessSpool
from collector.uploader import Uploader
from collector.xla_capture import DISPLAY_NAMES, XlaCapture, framework_facts, job_framework
from tracefmt.kinds import EventKind

log = logging.getLogger("collector")

F = TypeVar("F", bound=Callable[..., Any])

STEP = int(EventKind.STEP)
FIRST_FLUSH_S = 5.0
USER_ANNOTATION = int(EventKind.USER_ANNOTATION)

# The profiler that annotations record into; None while not profiling (annotations are no-ops).
_active: Profiler | None = None


def _forget_in_child() -> None:
    """A forked child (a DataLoader worker) must not buffer into a profiler it cannot flush."""
    global _active
    if _active is not None:
        _active._packer.forget_after_fork()
    _active = None


os.register_at_fork(after_in_child=_forget_in_child)


def is_step_name(name: str) -> bool:
    return name.startswith("step_") and name[5:].isdigit()


def _never_raise(what: str) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(self: Profiler, *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the training job must never die of us
                self.warn_once(what, f"{what} failed, training continues: {exc!r}")
                return None

        return guarded  # type: ignore[return-value]

    return wrap


class Profiler:
    _instance: Profiler | None = None
    _instance_lock = threading.Lock()

    @classmethod
    def instance(cls) -> Profiler:
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        self.config: Config | None = None
        self.identity: Identity | None = None
        self.job_name: str | None = None
        self.spool: ProcessSpool | None = None
        self.sources: dict[str, str] = {}
        self.uploader: Uploader | None = None
        self._events: deque[Annotation] = deque()
        # Names the collector recorded into the Kineto window being captured (record_function):
        # Kineto's host copies of them are dropped on the server, the collector has its own.
        self._window_names: set[str] = set()
        # Windows stopped and not exported yet: where to, how, and the names recorded into them.
        self._kineto_files: deque[tuple[Path, Callable[[Path], None], frozenset[str]]] = deque()
        # When the Kineto window being recorded began (None: none is): a chunk cut inside a
        # window keeps that window's rows for the next chunk, the one its trace will be in.
        self._window_start_ns: int | None = None
        # Taken where a window starts or stops and where a chunk drains its rows and windows,
        # so a chunk never holds a window's rows without its trace (or the trace without them).
        self._window_lock = threading.Lock()
        self._tls = threading.local()
        self._warned: set[str] = set()
        self._builder: ChunkBuilder | None = None
        self._packer = PackingChild()
        self._sampler: Sampler | None = None
        self._capture: KinetoCapture | XlaCapture | None = None
        self._framework = PYTORCH
        self._planner: WindowPlanner | None = None
        self._stopping_since_ns = 0
        # The flusher thread's CPU time as it last reported it, and each thread's as last counted.
        self._flusher_cpu_ns = 0
        self._cpu_seen: dict[str, int] = {}
        self._recording = False
        self._nvtx: Any = None
        self._rf_enter: Any = None
        self._rf_exit: Any = None
        self._hooks: Hooks | None = None
        self._flush_lock = threading.RLock()
        self._flush_wake = threading.Event()
        self._flusher: threading.Thread | None = None
        self._stop_flusher = threading.Event()
        self._max_events = 200_000
        self._step_n = 0
        self._step_start_ns = 0
        self._auto_steps = OptimizerSteps(self._mark_step)
        self._finished = False

    # ---- configuration and lifecycle -------------------------------------------------------

    @_never_raise("profiler configuration")
    def configure(self, config: Config | None = None) -> None:
        self.config = config if config is not None else Config()
        self.config.validate()

    @_never_raise("start_profiling")
    def start_profiling(self) -> None:
        global _active
        if _active is self:
            return
        _ensure_log_handler()
        if self.config is None:
            self.config = Config()
        config = self.config
        self._max_events = config.max_buffered_events
        if self.uploader is None:
            self._framework = job_framework(config)
            self._open_job(config)
        assert self.spool is not None and self.identity is not None
        self._sampler = Sampler(
            config.sampling_interval_ms,
            cpu=config.cpu_sampling,
            gpu=config.gpu_sampling,
            perf=config.perf_counters,
            node_level=self.identity.local_rank == 0,
        )
        self._start_part("sampler", self._sampler.start, "psutil")
        self.sources.update(self._sampler.sources)
        if self._framework == PYTORCH:
            self._capture = KinetoCapture(
                config, self.spool.scratch, self.identity.pid, self._kineto_window_done
            )
        else:
            self._capture = XlaCapture(
                config,
                self._framework,
                self.spool.scratch,
                self.identity.pid,
                self._kineto_window_done,
            )
        # One job's windows are planned over all its profiling sessions.
        self._capture.planner = self._planner
        capture = self._capture
        if self._start_part("Kineto capture", lambda: capture.start(time.monotonic_ns()), "kineto"):
            self._planner = capture.planner
            self.sources["kineto"] = self._capture.status
        else:
            self._capture = None
        self._setup_annotation_backends()
        self._recording = bool(self._capture and self._capture.recording and self._rf_enter)
        if self._capture is not None and self._capture.recording:
            self._window_start_ns = time.time_ns()
        self._stop_flusher.clear()
        self._flusher = threading.Thread(
            target=self._flush_loop, name="profiler-flusher", daemon=True
        )
        self._flusher.start()
        self._step_start_ns = time.time_ns()
        self._listen_for_optimizer_steps(config)
        if self._hooks is None and config.exit_hooks:
            self._hooks = Hooks(self._finish, self._announce)
            self._hooks.install()
        _active = self
        self._report_sources()

    @_never_raise("stop_profiling")
    def stop_profiling(self) -> None:
        global _active
        if _active is not self:
            return
        _active = None
        self._stopping_since_ns = time.monotonic_ns()
        self._auto_steps.remove()
        if self._capture is not None:
            self._start_part("stopping Kineto capture", self._capture.stop, "kineto")
            self._capture = None
        self._recording = False
        if self._sampler is not None:
            self._sampler.stop()
        self._stop_flusher.set()
        self._flush_wake.set()
        if self._flusher is not None:
            self._flusher.join(timeout=60)
        self.flush(final=True)
        # The packing child stays for the job's next profiling session (a start of Python and
        # numpy costs more CPU than a window's packing); it ends at finish, or with this process.
        assert self.uploader is not None and self.config is not None
        if not self.uploader.drain(self.config.shutdown_timeout_s):
            self._report_leftovers()

    # ---- annotations and steps ---------------------------------------------------------------

    def step(self) -> None:
        """Marks the end of a training step (call once per iteration, like ``prof.step()``)."""
        if _active is not self:
            return
        self._auto_steps.explicit_step_seen()
        self._mark_step(time.time_ns())

    def restart_step(self) -> None:
        """The step in progress starts now: the time since the last step ended (a trainer's
        evaluation or checkpoint between training steps) belongs to no step."""
        if _active is self:
            self._step_start_ns = time.time_ns()

    @property
    def profiling(self) -> bool:
        return _active is self

    def _mark_step(self, now: int) -> None:
        """The step in progress (``step_<n>``, since the last boundary) ended at ``now``."""
        if _active is not self:
            return
        self._events.append(
            (
                STEP,
                f"step_{self._step_n}",
                self._step_start_ns,
                now - self._step_start_ns,
                threading.get_native_id(),
            )
        )
        self._step_n += 1
        self._step_start_ns = now
        self._at_step_end(now, self._step_n - 1)

    def annotation_begin(self, name: str) -> None:
        token = self.begin(name)
        stack = getattr(self._tls, "stack", None)
        if stack is None:
            stack = self._tls.stack = []
        stack.append((name, token))

    def annotation_end(self, name: str) -> None:
        stack = getattr(self._tls, "stack", None) or []
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == name:
                _, token = stack.pop(i)
                self.end(name, STEP if is_step_name(name) else USER_ANNOTATION, token)
                return
        self.warn_once(f"end:{name}", f"annotation_end({name!r}) without annotation_begin; ignored")

    def begin(self, name: str) -> tuple[int, Any] | None:
        if _active is not self:
            return None
        try:
            if self._nvtx is not None:
                self._nvtx.range_push(name)
            handle = None
            if self._recording:
                # record_function's second argument is its args; a framework's annotation's
                # is the step number its step marker carries.
                step = None
                if self._framework != PYTORCH and is_step_name(name):
                    step = int(name[5:])
                handle = self._rf_enter(name, step)
                self._window_names.add(name)
        except Exception as exc:  # noqa: BLE001
            self._drop_annotation_backends(exc)
            handle = None
        return (time.time_ns(), handle)

    def end(self, name: str, kind: int, token: tuple[int, Any] | None) -> None:
        if token is None:
            return
        end_ns = time.time_ns()
        start_ns, handle = token
        try:
            if handle is not None:
                self._rf_exit(handle)
            if self._nvtx is not None:
                self._nvtx.range_pop()
        except Exception as exc:  # noqa: BLE001
            self._drop_annotation_backends(exc)
        self._events.append((kind, name, start_ns, end_ns - start_ns, threading.get_native_id()))
        if kind == STEP:
            self._auto_steps.explicit_step_seen()
            self._at_step_end(end_ns, int(name[5:]))
        if len(self._events) >= self._max_events:
            self._flush_wake.set()

    # ---- chunks --------------------------------------------------------------------------------

    def flush(self, final: bool = False) -> None:
        """Build a chunk from everything buffered and hand it to the uploader."""
        with self._flush_lock:
            if self._builder is None or self.uploader is None:
                return
            with self._window_lock:
                finished = _drain(self._kineto_files)
                window_start = None if final else self._window_start_ns
                events = _drain(self._events)
            # The rows of the window being recorded wait for the chunk its trace will be in
            # (unless the window's rows alone pass max_buffered_events).
            if window_start is not None:
                later = [e for e in events if e[2] >= window_start]
                if len(later) < self._max_events:
                    events = [e for e in events if e[2] < window_start]
                    self._events.extendleft(reversed(later))
            samples = self._sampler.drain() if self._sampler is not None else []
            windows = []
            planner = self._planner
            for path, export, names in finished:
                packing_ns = 0
                try:
                    export(path)
                    window, child_ns = pack_window(path, names, self._packer)
                    windows.append(window)
                    packing_ns = int(child_ns * _cores_busy_share())
                except (OSError, RuntimeError) as exc:
                    self.warn_once("kineto-load", f"a Kineto window could not be read: {exc}")
                finally:
                    path.unlink(missing_ok=True)
                    if planner is not None:
                        planner.handed_over(packing_ns)
            if planner is not None:
                planner.add_background(self._background_cpu_ns())
                if final:  # the last window's export and packing count too
                    planner.pause(time.monotonic_ns(), self._stopping_since_ns)
            if not (events or samples or windows or final):
                return
            capture = planner.report() if planner is not None else None
            chunk = self._builder.build(events, windows, samples, self.sources, final, capture)
            self.uploader.submit(chunk.name, chunk.data)

    def _background_cpu_ns(self) -> int:
        """CPU time the collector's threads spent since the last call (each thread's counter
        starts again when its thread does)."""
        now = {
            "flusher": self._flusher_cpu_ns,
            "sampler": self._sampler.cpu_ns if self._sampler is not None else 0,
            "uploader": self.uploader.cpu_ns if self.uploader is not None else 0,
        }
        spent = 0
        for name, value in now.items():
            last = self._cpu_seen.get(name, 0)
            spent += value - last if value >= last else value
            self._cpu_seen[name] = value
        return spent

    def _kineto_window_done(self, path: Path, export: Callable[[Path], None]) -> None:
        """Kineto stopped a window (on the thread that ended it): pair it with the names the
        collector recorded into it, for the flusher to export to ``path``."""
        names, self._window_names = self._window_names, set()
        with self._window_lock:
            self._window_start_ns = None
            self._kineto_files.append((path, export, frozenset(names)))

    def _flush_loop(self) -> None:
        assert self.config is not None
        interval = min(FIRST_FLUSH_S, self.config.flush_interval_s)
        while not self._stop_flusher.is_set():
            self._flush_wake.wait(interval)
            self._flush_wake.clear()
            interval = self.config.flush_interval_s
            if self._stop_flusher.is_set():
                return
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - keep flushing later chunks
                self.warn_once("flush", f"building a chunk failed: {exc!r}")
            self._flusher_cpu_ns = time.thread_time_ns()

    # ---- internals -----------------------------------------------------------------------------

    def _open_job(self, config: Config) -> None:
        detected = detect(node_name=config.node_name)
        # The server accepts node names of letters, digits, '.', '_' and '-' only.
        self.identity = dataclasses.replace(detected, node=safe_name(detected.node))
        self.job_name = config.job_name or default_job_name()
        if self._framework == PYTORCH:
            torch_version, cuda, devices = _torch_facts(config)
            version = torch_version
        else:  # a JAX or TensorFlow job: torch is not imported for it
            torch_version, cuda = None, False
            version, devices = framework_facts(self._framework)
        self.spool = ProcessSpool.for_process(config.spool_dir, self.job_name, self.identity)
        ident = self.identity
        job_info = {
            "job": {
                "name": self.job_name,
                "series": config.series,
                "status": "in_progress",
                "instance_type": config.instance_type or _instance_type(devices),
                "instance_count": ident.node_count,
                "framework": DISPLAY_NAMES[self._framework] if version else "",
                "framework_version": version or "",
                "hyperparameters": config.hyperparameters,
                "resource_ids": {**resource_ids(), **config.resource_ids},
                "started_at": datetime.now(UTC).isoformat(),
            },
            "source": {
                "node": ident.node,
                "rank": ident.rank,
                "pid": ident.pid,
                "hostname": ident.hostname,
            },
            "server_url": config.server_url,
            "final_status": None,
        }
        client = None
        if config.server_url:
            client = ApiClient(config.server_url, config.token, config.request_timeout_s)
        else:
            self.warn_once(
                "no-server",
                f"no server_url (PROFILER_SERVER_URL): keeping the profile in {self.spool.path}; "
                "upload it later with `profiler-collect flush --server URL`",
            )
        self.uploader = Uploader(self.spool, client, job_info, config.max_memory_queue_bytes)
        self.uploader.start()
        self._builder = ChunkBuilder(self.job_name, ident, torch_version, cuda, devices)

    def _setup_annotation_backends(self) -> None:
        torch = sys.modules.get("torch")
        self._nvtx = None
        self._rf_enter = self._rf_exit = None
        if isinstance(self._capture, XlaCapture):  # the framework's own trace annotations
            self._rf_enter = self._capture.enter_annotation
            self._rf_exit = self._capture.exit_annotation
            return
        if self._framework != PYTORCH or torch is None or self.config is None:
            return
        try:
            if self.config.enable_cuda and torch.cuda.is_available():
                self._nvtx = torch.cuda.nvtx
            ops = torch.ops.profiler
            self._rf_enter = ops._record_function_enter_new
            self._rf_exit = ops._record_function_exit._RecordFunction
        except Exception as exc:  # noqa: BLE001
            self._drop_annotation_backends(exc)

    def _listen_for_optimizer_steps(self, config: Config) -> None:
        if "torch" not in sys.modules or not config.auto_steps:
            return
        try:
            self._auto_steps.install()
        except Exception as exc:  # noqa: BLE001 - an old torch without the global hook
            self.warn_once("auto-steps", f"steps are not found by themselves: {exc!r}")

    def _drop_annotation_backends(self, exc: Exception) -> None:
        self._nvtx = None
        self._rf_enter = None
        self._recording = False
        self.warn_once(
            "annotation-backends",
            f"NVTX/record_function failed, annotations are "
            f"still recorded by the collector: {exc!r}",
        )

    def _at_step_end(self, step_end_ns: int, step: int) -> None:
        """A step ended: the sampler samples if due, the Kineto window advances or opens."""
        now = time.monotonic_ns()
        if self._sampler is not None:
            self._sampler.at_step_boundary(now)
        capture = self._capture
        if capture is None:
            return
        try:
            capture.step(now, step)
            self._recording = capture.recording and self._rf_enter is not None
            if capture.recording == (self._window_start_ns is None):  # a window began or ended
                with self._window_lock:
                    self._window_start_ns = step_end_ns if capture.recording else None
            self.sources["kineto"] = capture.status
        except Exception as exc:  # noqa: BLE001
            self._capture = None
            self._recording = False
            self._window_start_ns = None
            self.sources["kineto"] = f"failed: {exc!r}"
            self.warn_once("kineto", f"Kineto capture failed and is off from now on: {exc!r}")
        if self._kineto_files:
            self._flush_wake.set()

    def _start_part(self, what: str, fn: Callable[[], None], source: str) -> bool:
        """Run one component's start/stop; a failure turns only that component off."""
        try:
            fn()
            return True
        except Exception as exc:  # noqa: BLE001
            self.sources[source] = f"failed: {exc!r}"
            self.warn_once(what, f"{what} failed, continuing without it: {exc!r}")
            return False

    @_never_raise("finish")
    def finish(self, status: str = "completed") -> None:
        """Stop profiling and report the job's final status from this process (what the exit
        hooks do; call it yourself when ``exit_hooks`` is off)."""
        self._finish(status)

    def _finish(self, status: str) -> None:
        """The job's last word from this process (idempotent; called by the exit hooks)."""
        if self._finished or (self.identity is not None and self.identity.pid != os.getpid()):
            return  # already done, or a forked child that inherited the exit hooks
        self._finished = True
        try:
            self.stop_profiling()
            self._packer.close()
            uploader, ident, config = self.uploader, self.identity, self.config
            if uploader is None or ident is None or config is None:
                return
            # Any rank can fail or be stopped; only rank 0 declares the whole job completed.
            if status != "completed" or ident.rank == 0:
                uploader.set_status(status, datetime.now(UTC).isoformat())
            if uploader.close(config.shutdown_timeout_s):
                uploader.spool.remove_if_empty()
            else:
                self._report_leftovers()
        except Exception as exc:  # noqa: BLE001
            self.warn_once("finish", f"finishing the job failed: {exc!r}")

    def _announce(self, status: str) -> None:
        if self.uploader is not None:
            self.uploader.set_status(status)

    def _report_sources(self) -> None:
        lines = ", ".join(f"{k}: {v}" for k, v in sorted(self.sources.items()))
        log.info(
            "profiler: job %r node %s rank %s; %s",
            self.job_name,
            self.identity.node if self.identity else "?",
            self.identity.rank if self.identity else "?",
            lines,
        )

    def _report_leftovers(self) -> None:
        if self.spool is None or self.uploader is None or self.uploader.sender is None:
            return
        left = len(self.spool.pending())
        if left:
            self.warn_once(
                "leftovers",
                f"{left} chunk(s) not uploaded yet, kept in {self.spool.path}; they are sent "
                "when the server is back, or run `profiler-collect flush`",
            )

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("profiler: %s", message)


def _cores_busy_share() -> float:
    """How much of the packing child's CPU time the training is likely to have lost: all of it
    on a machine whose cores are all busy, little where most are idle (a GPU node's many cores)
    although it runs in the idle scheduling class (it still shares caches and memory)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    return min(1.0, max(0.25, load / (os.cpu_count() or 1)))


def _drain(queue: deque[Any]) -> list[Any]:
    out = []
    while queue:
        out.append(queue.popleft())
    return out


def _torch_facts(config: Config) -> tuple[str | None, bool, list[dict[str, Any]]]:
    try:
        import torch
    except ImportError:
        return None, False, []
    cuda = bool(config.enable_cuda and torch.cuda.is_available())
    devices = []
    if cuda:
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            devices.append(
                {"index": i, "name": props.name, "total_memory_bytes": props.total_memory}
            )
    return str(torch.__version__), cuda, devices


def _instance_type(devices: list[dict[str, Any]]) -> str:
    if devices:
        return f"{len(devices)}x {devices[0]['name']}"
    return f"{os.cpu_count()}x CPU {platform.machine()}"


def _ensure_log_handler() -> None:
    """Show the profiler's few messages when the script has not configured logging."""
    if log.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


class annotate:  # noqa: N801 - reads like the SageMaker API it mirrors: `with annotate("x"):`
    """A named range: ``with annotate("Forward"):`` or ``@annotate("train_step")``.

    ``step_<n>`` names mark training steps. Outside ``start_profiling()`` it does nothing.
    """

    __slots__ = ("name", "kind", "_token", "_prof")

    def __init__(self, name: str) -> None:
        self.name = name
        self.kind = STEP if is_step_name(name) else USER_ANNOTATION
        self._token: tuple[int, Any] | None = None
        self._prof: Profiler | None = None

    def __enter__(self) -> annotate:
        prof = _active
        if prof is not None:
            self._prof = prof
            self._token = prof.begin(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        prof, self._prof = self._prof, None
        if prof is not None:
            prof.end(self.name, self.kind, self._token)

    def __call__(self, func: F) -> F:
        name = self.name

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with annotate(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
