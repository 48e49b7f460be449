"""A Lightning (``lightning.pytorch``) callback that profiles ``Trainer.fit``.

    from collector.integrations.lightning import ProfilerCallback
    trainer = lightning.pytorch.Trainer(callbacks=[ProfilerCallback()])

Profiling starts when fitting starts and stops when it ends. Each optimizer step is a training step
(``step_<n>``; with ``accumulate_grad_batches`` a step spans its batches); each batch's training
step is annotated Forward, its backward pass Backward (``on_before_backward`` to
``on_after_backward``), the optimizer's update Optimizer and each validation run Validation
(outside every step: the next step starts when training resumes). The job's hyperparameters are
what the trainer knows (batch size, learning rates, precision, world size, epochs...), the
module's own ``hparams`` and the ``Config.hyperparameters`` given, which win.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
from torch.optim import Optimizer

from collector.config import Config
from collector.integrations.session import (
    BACKWARD,
    FORWARD,
    OPTIMIZER,
    TrainingSession,
    one_or_all,
    without_none,
)


class ProfilerCallback(pl.Callback):
    def __init__(self, config: Config | None = None) -> None:
        self.session = TrainingSession(config)
        self._global_step = 0
        self._hooks: list[Any] = []

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.session.start(lambda: trainer_hyperparameters(trainer, pl_module))
        self._global_step = trainer.global_step
        # Lightning has no hook after the optimizer's update; the optimizer itself has one.
        self._hooks = [
            opt.register_step_post_hook(self._optimizer_stepped) for opt in trainer.optimizers
        ]

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.session.training_resumes()

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self.session.begin(FORWARD)

    def on_before_zero_grad(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Optimizer
    ) -> None:
        self.session.end(FORWARD)

    def on_before_backward(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, loss: Any
    ) -> None:
        self.session.end(FORWARD)
        self.session.begin(BACKWARD)

    def on_after_backward(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.session.end(BACKWARD)

    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Optimizer
    ) -> None:
        self.session.begin(OPTIMIZER)

    def _optimizer_stepped(self, optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        self.session.end(OPTIMIZER)

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        # Lightning counts optimizer steps: a batch that only accumulated gradients ends none.
        if trainer.global_step != self._global_step:
            self._global_step = trainer.global_step
            self.session.step_ended()
        else:
            self.session.end(FORWARD)

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.session.begin("Validation")

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.session.end("Validation")
        self.session.training_resumes()

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._stop()

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.session.stop()


def trainer_hyperparameters(trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict[str, Any]:
    """The module's ``hparams`` and what the trainer knows at fit start (its optimizers are set
    up by then; its training data loader is loaded here, as Lightning does for
    ``estimated_stepping_batches``)."""
    optimizers = trainer.optimizers
    learning_rates = [group["lr"] for opt in optimizers for group in opt.param_groups]
    total_steps = _total_steps(trainer)  # first: it loads the training data
    batch_size = _batch_size(trainer)
    accumulate = trainer.accumulate_grad_batches
    facts = {
        "batch_size": batch_size,
        "global_batch_size": batch_size * accumulate * trainer.world_size if batch_size else None,
        "learning_rate": one_or_all(learning_rates),
        "optimizer": one_or_all([type(opt).__name__ for opt in optimizers]),
        "precision": str(trainer.precision),
        "world_size": trainer.world_size,
        "num_nodes": trainer.num_nodes,
        "devices": trainer.num_devices,
        "accelerator": type(trainer.accelerator).__name__.removesuffix("Accelerator").lower(),
        "strategy": type(trainer.strategy).__name__,
        "max_epochs": trainer.max_epochs,
        "max_steps": trainer.max_steps if trainer.max_steps >= 0 else None,
        "total_steps": total_steps,
        "gradient_accumulation_steps": accumulate,
        "gradient_clip_val": trainer.gradient_clip_val,
    }
    return {**dict(pl_module.hparams), **without_none(facts)}


def _total_steps(trainer: pl.Trainer) -> int | None:
    try:
        steps = trainer.estimated_stepping_batches
    except Exception:  # noqa: BLE001 - an unsized dataset, or data Lightning cannot load yet
        return None
    return int(steps) if steps != float("inf") else None


def _batch_size(trainer: pl.Trainer) -> int | None:
    """The training data loader's batch size (the first loader's, with several)."""
    loaders = trainer.train_dataloader
    if isinstance(loaders, dict):
        loaders = next(iter(loaders.values()), None)
    elif isinstance(loaders, list | tuple):
        loaders = loaders[0] if loaders else None
    size = getattr(loaders, "batch_size", None)
    if size is None:
        size = getattr(getattr(loaders, "batch_sampler", None), "batch_size", None)
    return size if isinstance(size, int) else None
