"""What every trainer callback does with the profiler, whatever the trainer.

A step is one optimizer step, as for a plain loop (``collector.auto_steps``). Steps run back to
back, so the data loading before a batch belongs to its step, except where the trainer leaves
training (an epoch's end, an evaluation, a checkpoint): the next step starts when training
resumes. Phase annotations (Forward, Backward, Optimizer) are opened and closed by the trainer's
hooks; one still open when its step ends is closed there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from collector.config import Config
from collector.profiler import Profiler

FORWARD = "Forward"
BACKWARD = "Backward"
OPTIMIZER = "Optimizer"
# A hyperparameter that is an object (a module's repr can be pages long) keeps this much text.
MAX_TEXT = 200


class TrainingSession:
    def __init__(self, config: Config | None = None) -> None:
        self.config = config
        self.profiler: Profiler | None = None
        self._started_here = False
        self._open: list[str] = []

    def start(self, hyperparameters: Callable[[], Mapping[str, Any]]) -> None:
        """Profile from now on, the job described by the trainer's ``hyperparameters()`` (the
        script's own ``Config.hyperparameters`` win). A session the script started itself is
        only stepped and annotated, and left running at the end. Like every collector entry
        point, it never stops the training: what fails is logged once and left out."""
        prof = self.profiler = Profiler.instance()
        if prof.profiling:
            return
        try:
            facts = dict(hyperparameters())
        except Exception as exc:  # noqa: BLE001 - a trainer set up in a way we do not know
            prof.warn_once("trainer-facts", f"the trainer's settings could not be read: {exc!r}")
            facts = {}
        try:
            config = self.config or prof.config or Config()
        except ValueError as exc:  # a bad PROFILER_* variable
            prof.warn_once("trainer-config", f"not profiling: {exc}")
            self.profiler = None
            return
        config.hyperparameters = json_safe({**facts, **config.hyperparameters})
        prof.configure(config)
        prof.start_profiling()
        self._started_here = prof.profiling

    def begin(self, name: str) -> None:
        if self.profiler is not None and name not in self._open:
            self._open.append(name)
            self.profiler.annotation_begin(name)

    def end(self, name: str) -> None:
        if self.profiler is not None and name in self._open:
            self._open.remove(name)
            self.profiler.annotation_end(name)

    def step_ended(self) -> None:
        if self.profiler is not None:
            self._end_all()
            self.profiler.step()

    def training_resumes(self) -> None:
        if self.profiler is not None:
            self._end_all()
            self.profiler.restart_step()

    def stop(self) -> None:
        if self.profiler is None:
            return
        self._end_all()
        prof, self.profiler = self.profiler, None
        if self._started_here:
            self._started_here = False
            prof.stop_profiling()

    def _end_all(self) -> None:
        for name in reversed(list(self._open)):
            self.end(name)


def json_safe(value: Any) -> Any:
    """The value as JSON can carry it (the job's metadata is JSON): numbers, strings, lists and
    objects as they are, anything else (a dtype, a path, a module) as the start of its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)[:MAX_TEXT]


def one_or_all(values: list[Any]) -> Any:
    """One value when all agree (one optimizer, one parameter group), else the list."""
    if values and all(v == values[0] for v in values):
        return values[0]
    return values or None


def without_none(facts: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in facts.items() if v is not None}
