"""Training steps found without code: one optimizer step is one training step.

Every PyTorch training loop calls ``optimizer.step()`` once per step (with gradient accumulation,
once per accumulated step, which is the step this counts). A global optimizer post-hook marks the
step boundaries when the script marks none itself. Explicit steps win: ``collector.step()`` or an
``annotate("step_<n>")`` seen before the second optimizer step turns the hook off for the job, so
a script that marks its own steps never gets them twice. The first optimizer step only arms the
hook (an explicit marker may still come at the end of that iteration); the second records both.
With several optimizers (a GAN's two) the first one to step marks the steps.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any


class OptimizerSteps:
    def __init__(self, mark_step: Callable[[int], None]) -> None:
        self._mark_step = mark_step
        self.explicit = False
        self._handle: Any = None
        self._optimizer_id: int | None = None
        self._armed_at_ns: int | None = None  # the first optimizer step, not recorded yet
        self._confirmed = False

    def install(self) -> None:
        """Start listening (a profiling session starts); nothing when steps are explicit."""
        if self.explicit or self._handle is not None:
            return
        self._armed_at_ns = None
        optim = importlib.import_module("torch.optim.optimizer")
        self._handle = optim.register_optimizer_step_post_hook(self._stepped)

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def explicit_step_seen(self) -> None:
        if not self.explicit:
            self.explicit = True
            self.remove()

    def _stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.explicit:
            return
        if self._optimizer_id is None:
            self._optimizer_id = id(optimizer)
        elif id(optimizer) != self._optimizer_id:
            return
        now = time.time_ns()
        if not self._confirmed:
            if self._armed_at_ns is None:
                self._armed_at_ns = now
                return
            self._confirmed = True
        if self._armed_at_ns is not None:
            first, self._armed_at_ns = self._armed_at_ns, None
            self._mark_step(first)
        self._mark_step(now)
