"""Collector configuration: a dataclass whose defaults come from ``PROFILER_*`` variables.

``Config()`` reads the environment at construction, so a job launcher can configure every rank
through variables while the script's own ``Config(...)`` arguments still win (those given; an
argument passed as None leaves the variable's value). Bad values fail
loudly here (``ValueError``); the profiler turns that into one log line and leaves training alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# The frameworks whose own profilers capture windows (collector.capture, collector.xla_capture).
PYTORCH, JAX, TENSORFLOW = "pytorch", "jax", "tensorflow"
FRAMEWORKS = (PYTORCH, JAX, TENSORFLOW)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def envbool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    raw = (environ if environ is not None else os.environ).get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def envint(name: str, default: T, environ: Mapping[str, str] | None = None) -> int | T:
    raw = (environ if environ is not None else os.environ).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


def envfloat(name: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    raw = (environ if environ is not None else os.environ).get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None


def envstr(name: str, default: str | None = None) -> str | None:
    raw = os.environ.get(name)
    return raw if raw else default


def default_spool_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return str(Path(cache) / "profiler-app" / "spool")


def _env(name: str, parse: Callable[[str, T], T], default: T) -> Any:
    return field(default_factory=lambda: parse(name, default), metadata={"env": name})


def _env_str(name: str, default: str | None = None) -> Any:
    return field(default_factory=lambda: envstr(name, default), metadata={"env": name})


@dataclass
class Config:
    """What to capture and where to send it. Each field's variable is in ``ENV_VARS``."""

    # The framework whose profiler captures the windows; None: JAX or TensorFlow when the
    # script imported it and not torch, else PyTorch (collector.xla_capture.job_framework).
    framework: str | None = _env_str("PROFILER_FRAMEWORK")
    # Capture GPU kernels, memcpy/memset and synchronisation through Kineto/CUPTI.
    enable_cuda: bool = _env("PROFILER_ENABLE_CUDA", envbool, True)
    # Record CPU operators (aten ops) in the Kineto windows; costs far more than GPU capture.
    cpu_operators: bool = _env("PROFILER_CPU_OPERATORS", envbool, False)
    # With cpu_operators: record each operator's input shapes and types, and the allocator's
    # [memory] events (torch.profiler's record_shapes and profile_memory; both cost time).
    record_shapes: bool = _env("PROFILER_RECORD_SHAPES", envbool, False)
    profile_memory: bool = _env("PROFILER_PROFILE_MEMORY", envbool, False)
    cpu_sampling: bool = _env("PROFILER_CPU_SAMPLING", envbool, True)
    gpu_sampling: bool = _env("PROFILER_GPU_SAMPLING", envbool, True)
    perf_counters: bool = _env("PROFILER_PERF_COUNTERS", envbool, True)
    # With no step marked by the script (collector.step() or annotate("step_<n>")), each
    # optimizer.step() ends a training step (collector/auto_steps.py).
    auto_steps: bool = _env("PROFILER_AUTO_STEPS", envbool, True)
    # NVML averages GPU utilisation over 1/6-1 s anyway; 5 Hz keeps charts smooth and cheap.
    sampling_interval_ms: int = _env("PROFILER_SAMPLING_INTERVAL_MS", envint, 200)
    server_url: str | None = _env_str("PROFILER_SERVER_URL")
    token: str | None = _env_str("PROFILER_TOKEN")
    job_name: str | None = _env_str("PROFILER_JOB_NAME")
    # The model or experiment the job is a run of (History page); None: the server names it
    # after the job without its run suffix.
    series: str | None = _env_str("PROFILER_SERIES")
    # Only an explicit value overrides the torchrun/SLURM node name; PROFILER_NODE_NAME is
    # consulted after them (see identity.detect).
    node_name: str | None = None
    instance_type: str | None = _env_str("PROFILER_INSTANCE_TYPE")
    spool_dir: str = field(
        default_factory=lambda: envstr("PROFILER_SPOOL_DIR") or default_spool_dir(),
        metadata={"env": "PROFILER_SPOOL_DIR"},
    )
    # A chunk is cut every flush_interval_s (the first after at most 5 s, so a new job shows
    # data quickly). Each chunk costs ~4 KB of archive overhead; longer chunks amortise it.
    flush_interval_s: float = _env("PROFILER_FLUSH_INTERVAL_S", envfloat, 30.0)
    max_buffered_events: int = _env("PROFILER_MAX_BUFFERED_EVENTS", envint, 200_000)
    # Memory for chunks that could neither be spooled (disk full) nor uploaded yet.
    max_memory_queue_bytes: int = _env("PROFILER_MAX_MEMORY_QUEUE_BYTES", envint, 64 << 20)
    # Kineto windows: each warms up, then records active steps. When they open is decided by
    # the overhead budget: the collector measures what each window costs the training and
    # opens the next only while its cumulative cost stays within this share of the wall time.
    # Half of the 1 % promise: what the collector cannot see from inside (the training's caches
    # and memory bandwidth its work takes, noise in its own estimate) must fit the other half.
    overhead_budget_pct: float = _env("PROFILER_OVERHEAD_BUDGET_PCT", envfloat, 0.5)
    kineto_skip_first_steps: int = _env("PROFILER_KINETO_SKIP_FIRST_STEPS", envint, 1)
    kineto_warmup_steps: int = _env("PROFILER_KINETO_WARMUP_STEPS", envint, 1)
    kineto_active_steps: int = _env("PROFILER_KINETO_ACTIVE_STEPS", envint, 4)
    # A fixed schedule instead: after skip, repeat [warmup, active, wait] (wait=0: every step).
    # Setting it wins over the budget (whose cost is still measured and reported).
    kineto_wait_steps: int | None = field(
        default_factory=lambda: envint("PROFILER_KINETO_WAIT_STEPS", None),
        metadata={"env": "PROFILER_KINETO_WAIT_STEPS"},
    )
    # At most this many windows (0: no limit), in either mode.
    kineto_repeat: int = _env("PROFILER_KINETO_REPEAT", envint, 0)
    # How long stop/exit waits for the last uploads before leaving them in the spool.
    shutdown_timeout_s: float = _env("PROFILER_SHUTDOWN_TIMEOUT_S", envfloat, 30.0)
    request_timeout_s: float = _env("PROFILER_REQUEST_TIMEOUT_S", envfloat, 30.0)
    # Report how the process ends (completed / failed / stopped) through atexit, sys.excepthook
    # and a SIGTERM handler. Off for frameworks that manage the job status themselves.
    exit_hooks: bool = _env("PROFILER_EXIT_HOOKS", envbool, True)
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    resource_ids: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # An argument left None ("not given", e.g. an optional command-line flag passed through)
        # never hides the environment's value.
        for f in fields(self):
            if (
                getattr(self, f.name) is None
                and "env" in f.metadata
                and callable(f.default_factory)
            ):
                setattr(self, f.name, f.default_factory())
        self.validate()

    def validate(self) -> None:
        if self.sampling_interval_ms < 10:
            raise ValueError("sampling_interval_ms must be at least 10")
        if self.flush_interval_s <= 0:
            raise ValueError("flush_interval_s must be positive")
        if self.kineto_active_steps < 1:
            raise ValueError("kineto_active_steps must be at least 1")
        if not 0 < self.overhead_budget_pct <= 100:
            raise ValueError("overhead_budget_pct must be above 0 and at most 100")
        for name in ("kineto_skip_first_steps", "kineto_warmup_steps", "kineto_wait_steps"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative")
        if self.kineto_repeat < 0:
            raise ValueError("kineto_repeat must not be negative (0 repeats for ever)")
        if self.framework is not None:
            self.framework = self.framework.lower()
            if self.framework not in FRAMEWORKS:
                raise ValueError(f"framework must be one of {', '.join(FRAMEWORKS)}")
        if self.server_url:
            self.server_url = self.server_url.rstrip("/")

    def update(self, values: Mapping[str, Any]) -> Config:
        """Set fields from snake_case names or the SageMaker-style keys in ``ALIASES``."""
        known = {f.name: f for f in fields(self)}
        for key, value in values.items():
            name = ALIASES.get(key, key)
            if name not in known:
                raise ValueError(f"unknown profiler setting {key!r}")
            setattr(self, name, _coerce(name, value, getattr(self, name)))
        self.validate()
        return self

    # Mirrors `smppy.Config().profiler = {"EnableCuda": "1"}` from SageMaker Profiler scripts.
    @property
    def profiler(self) -> dict[str, Any]:
        return {alias: getattr(self, name) for alias, name in ALIASES.items()}

    @profiler.setter
    def profiler(self, values: Mapping[str, Any]) -> None:
        self.update(values)


ALIASES = {
    "EnableCuda": "enable_cuda",
    "CpuOperators": "cpu_operators",
    "RecordShapes": "record_shapes",
    "ProfileMemory": "profile_memory",
    "CpuSampling": "cpu_sampling",
    "GpuSampling": "gpu_sampling",
    "PerfCounters": "perf_counters",
    "AutoSteps": "auto_steps",
    "Framework": "framework",
    "SamplingIntervalMs": "sampling_interval_ms",
    "OverheadBudgetPct": "overhead_budget_pct",
    "ServerUrl": "server_url",
    "Token": "token",
    "JobName": "job_name",
    "Series": "series",
    "NodeName": "node_name",
    "SpoolDir": "spool_dir",
}

_OPTIONAL_INTS = {"kineto_wait_steps"}
ENV_VARS = {f.name: f.metadata["env"] for f in fields(Config) if "env" in f.metadata}


def _coerce(name: str, value: Any, current: Any) -> Any:
    """Accept strings such as "1" or "250" for typed fields, as SageMaker configs use them."""
    env = {name: value}
    if isinstance(value, str) and name in _OPTIONAL_INTS:
        return envint(name, None, env)
    if not isinstance(value, str) or isinstance(current, str) or current is None:
        return value
    if isinstance(current, bool):
        return envbool(name, current, env)
    if isinstance(current, int):
        return envint(name, current, env)
    if isinstance(current, float):
        return envfloat(name, current, env)
    return value
