"""A Hugging Face Transformers ``TrainerCallback`` that profiles ``Trainer.train``.

    from collector.integrations.huggingface import ProfilerCallback
    trainer = transformers.Trainer(model, args, callbacks=[ProfilerCallback()])

Profiling starts when training begins and stops when it ends. Each optimizer step is a training
step (``step_<n>``; with ``gradient_accumulation_steps`` a step spans its micro-batches). The
Trainer's callbacks see the optimizer's update (Optimizer) but not the forward or backward pass:
the model's own forward hooks annotate Forward (in training mode only), and Backward runs from the
forward's end to the micro-batch's end, so it holds the loss scaling and, before the optimizer
steps, the gradient clipping too. The job's hyperparameters come from ``TrainingArguments`` (batch
size, learning rate, precision, world size, gradient accumulation...) and the
``Config.hyperparameters`` given, which win.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from collector.config import Config
from collector.integrations.session import (
    BACKWARD,
    FORWARD,
    OPTIMIZER,
    TrainingSession,
    without_none,
)


class ProfilerCallback(TrainerCallback):
    def __init__(self, config: Config | None = None) -> None:
        self.session = TrainingSession(config)
        self._hooks: list[Any] = []

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        self.session.start(lambda: arguments_hyperparameters(args, state, kwargs.get("model")))
        model = kwargs.get("model")
        if isinstance(model, torch.nn.Module):
            self._hooks = [
                model.register_forward_pre_hook(self._forward_begins),
                model.register_forward_hook(self._forward_ends),
            ]

    def _forward_begins(self, module: torch.nn.Module, inputs: Any) -> None:
        if module.training:  # evaluation runs the model too, in eval mode
            self.session.begin(FORWARD)

    def _forward_ends(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        if module.training:
            self.session.end(FORWARD)
            self.session.begin(BACKWARD)

    def on_epoch_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.training_resumes()

    def on_substep_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.end(BACKWARD)

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.end(BACKWARD)
        self.session.begin(OPTIMIZER)

    def on_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.end(OPTIMIZER)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.step_ended()

    # Evaluation and checkpoints run between steps; the next step starts after them.
    def on_evaluate(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.training_resumes()

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.session.training_resumes()

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        self.session.stop()


def arguments_hyperparameters(
    args: TrainingArguments, state: TrainerState, model: Any
) -> dict[str, Any]:
    """What the Trainer was asked to do, as the job's hyperparameters."""
    accumulate = args.gradient_accumulation_steps
    precision = "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"
    model_config = getattr(model, "config", None)
    facts = {
        "batch_size": args.per_device_train_batch_size,
        "global_batch_size": args.per_device_train_batch_size * accumulate * args.world_size,
        "learning_rate": args.learning_rate,
        "optimizer": str(getattr(args.optim, "value", args.optim)),
        "lr_scheduler": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
        "warmup_steps": args.warmup_steps or None,
        "weight_decay": args.weight_decay,
        "max_grad_norm": args.max_grad_norm,
        "precision": precision,
        "world_size": args.world_size,
        "gradient_accumulation_steps": accumulate,
        "num_train_epochs": args.num_train_epochs if args.max_steps <= 0 else None,
        "max_steps": state.max_steps or None,
        "seed": args.seed,
        "model": getattr(model_config, "model_type", None) or type(model).__name__,
    }
    return without_none(facts)
