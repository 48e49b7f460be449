"""Trainer callbacks: a tiny model trained on CPU by the real Lightning and Hugging Face trainers
through the collector's callbacks gets one step per optimizer step, its Forward, Backward and
Optimizer annotations and the trainer's hyperparameters in its job; an Accelerate loop needs none."""

import json
from pathlib import PurePosixPath

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

import collector
from collector.profiler import Profiler
from tracefmt.chunk import read_chunk

from .helpers import annotation_counts, settled_parts, spooled_chunks, step_names

pytestmark = pytest.mark.slow  # each trains a model with a framework that takes seconds to import

STEPS = [f"step_{i}" for i in range(12)]


@pytest.fixture
def config(tmp_path, monkeypatch):
    """A fresh profiler (the callbacks use the process's one) spooling to tmp_path."""
    for name in ("PROFILER_SERVER_URL", "PROFILER_JOB_NAME", "PROFILER_CPU_OPERATORS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(Profiler, "_instance", None)
    yield collector.Config(
        job_name="trainer", spool_dir=str(tmp_path), exit_hooks=False, perf_counters=False
    )
    Profiler.instance().finish()  # what the exit hooks would do: its uploader thread ends


def job_hyperparameters(spool):
    """The job as the collector sends it to the server (the spool's job.json)."""
    (path,) = spool.rglob("job.json")
    return json.loads(path.read_text())["job"]["hyperparameters"]


def ranges(chunks, *names):
    """(start_ns, end_ns, name) of the named events, in time order."""
    found = []
    for chunk in chunks:
        events = chunk.events
        for name, start, dur in zip(
            chunk.event_names(), events["ev_start_ns"], events["ev_dur_ns"], strict=True
        ):
            if name in names or name.startswith("step_") and "step" in names:
                found.append((int(start), int(start + dur), str(name)))
    return sorted(found)


def inside(inner, outer):
    return outer[0] <= inner[0] and inner[1] <= outer[1]


# ---- Lightning ---------------------------------------------------------------------------------


def lightning_module():
    import lightning.pytorch as pl

    class Tiny(pl.LightningModule):
        def __init__(self, lr: float = 0.05) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    return Tiny()


def lightning_fit(config, batches, epochs, **trainer_args):
    import lightning.pytorch as pl

    from collector.integrations.lightning import ProfilerCallback

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(8 * batches, 4), torch.randn(8 * batches, 1))
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        callbacks=[ProfilerCallback(config)],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **trainer_args,
    )
    trainer.fit(lightning_module(), DataLoader(data, batch_size=8), DataLoader(data, batch_size=24))
    return trainer


def test_a_lightning_fit_gets_its_steps_phases_and_hyperparameters(config, tmp_path):
    trainer = lightning_fit(config, batches=6, epochs=2, precision="bf16-mixed")

    assert not Profiler.instance().profiling  # stopped with the fit
    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == STEPS
    # Validation runs once an epoch (two epochs of 6 batches), each outside every step.
    assert annotation_counts(chunks) == {
        "Forward": 12,
        "Backward": 12,
        "Optimizer": 12,
        "Validation": 2,
    }
    steps = [r for r in ranges(chunks, "step") if r[2].startswith("step_")]
    validations = ranges(chunks, "Validation")
    for start, end, _ in validations:
        assert all(end <= step[0] or step[1] <= start for step in steps)
    # The second epoch's first step starts when the first epoch's validation has ended.
    assert steps[6][0] >= validations[0][1]
    # Each step holds its batch's phases, in order.
    phases = ranges(chunks, "Forward", "Backward", "Optimizer")
    for i, step in enumerate(steps):
        forward, backward, optimizer = phases[3 * i : 3 * i + 3]
        assert [p[2] for p in (forward, backward, optimizer)] == [
            "Forward",
            "Backward",
            "Optimizer",
        ]
        assert forward[1] <= backward[0] and backward[1] <= optimizer[0]
        assert all(inside(p, step) for p in (forward, backward, optimizer))
    assert job_hyperparameters(tmp_path) == {
        "lr": 0.05,  # the module's own hparams
        "batch_size": 8,
        "global_batch_size": 8,
        "learning_rate": 0.05,
        "optimizer": "SGD",
        "precision": "bf16-mixed",
        "world_size": 1,
        "num_nodes": 1,
        "devices": 1,
        "accelerator": "cpu",
        "strategy": "SingleDeviceStrategy",
        "max_epochs": 2,
        "total_steps": 12,
        "gradient_accumulation_steps": 1,
    }
    assert trainer.global_step == 12


def test_with_gradient_accumulation_a_lightning_step_is_an_optimizer_step(config, tmp_path):
    config.hyperparameters = {"dataset": "random-288", "batch_size": 24}
    lightning_fit(config, batches=36, epochs=1, accumulate_grad_batches=3, limit_val_batches=0)

    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == STEPS
    assert annotation_counts(chunks) == {"Forward": 36, "Backward": 36, "Optimizer": 12}
    hyperparameters = job_hyperparameters(tmp_path)
    assert hyperparameters["gradient_accumulation_steps"] == 3
    assert hyperparameters["global_batch_size"] == 24  # 8 a batch, 3 batches a step
    assert hyperparameters["total_steps"] == 12
    # The script's own hyperparameters are kept, and win over the trainer's.
    assert hyperparameters["dataset"] == "random-288"
    assert hyperparameters["batch_size"] == 24


# ---- Hugging Face Transformers -----------------------------------------------------------------


class TinyRegression(torch.nn.Module):
    """What the Trainer needs of a model: keyword inputs in, a dict with the loss out."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def forward(self, x, labels):
        return {"loss": torch.nn.functional.mse_loss(self.net(x), labels)}


class Pairs(Dataset):
    def __init__(self, n: int) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=generator)
        self.y = torch.randn(n, 1, generator=generator)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def test_a_hugging_face_trainer_gets_its_steps_phases_and_hyperparameters(config, tmp_path):
    from transformers import Trainer, TrainingArguments

    from collector.integrations.huggingface import ProfilerCallback

    config.hyperparameters = {"seed": 7}
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        learning_rate=0.01,
        max_steps=12,
        bf16=True,
        use_cpu=True,
        eval_strategy="steps",
        eval_steps=6,
        per_device_eval_batch_size=8,
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
    )
    trainer = Trainer(
        model=TinyRegression(),
        args=args,
        train_dataset=Pairs(96),
        eval_dataset=Pairs(16),
        callbacks=[ProfilerCallback(config)],
    )
    trainer.train()

    assert not Profiler.instance().profiling  # stopped with the training
    chunks = spooled_chunks(tmp_path)
    assert step_names(chunks) == STEPS
    # Two micro-batches a step, each with its forward and backward pass; the evaluations'
    # forward passes (after steps 6 and 12) are no training's.
    assert annotation_counts(chunks) == {"Forward": 24, "Backward": 24, "Optimizer": 12}
    steps = [r for r in ranges(chunks, "step") if r[2].startswith("step_")]
    optimizers = ranges(chunks, "Optimizer")
    assert all(inside(o, s) for o, s in zip(optimizers, steps, strict=True))
    assert job_hyperparameters(tmp_path) == {
        "batch_size": 4,
        "global_batch_size": 8,
        "learning_rate": 0.01,
        "optimizer": "adamw_torch_fused",
        "lr_scheduler": "linear",
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "precision": "bf16",
        "world_size": 1,
        "gradient_accumulation_steps": 2,
        "max_steps": 12,
        "seed": 7,  # the script's Config.hyperparameters win
        "model": "TinyRegression",
    }


# ---- Accelerate --------------------------------------------------------------------------------


def test_an_accelerate_loop_gets_its_steps_from_the_optimizer_alone(config, tmp_path):
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(96, 4), torch.randn(96, 1))
    model, optimizer, loader = accelerator.prepare(model, optimizer, DataLoader(data, batch_size=4))

    collector.configure(config)
    collector.start_profiling()
    for x, y in loader:
        with accelerator.accumulate(model):
            accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
            optimizer.step()
            optimizer.zero_grad()
    collector.stop_profiling()

    # 24 batches, an optimizer step every second one.
    assert step_names(spooled_chunks(tmp_path)) == STEPS


@pytest.mark.django_db(transaction=True)
def test_a_lightning_job_reaches_the_server_with_its_steps_and_hyperparameters(config, server):
    from profiler_app.core.models import JobStatus, PartState, TrainingJob
    from tests.conftest import wait_for

    config.server_url, config.token, config.job_name = server.url, server.token, "lightning-run"
    lightning_fit(config, batches=12, epochs=1, limit_val_batches=0)

    job = wait_for(lambda: TrainingJob.objects.filter(name="lightning-run").first(), timeout=120)
    assert job.hyperparameters["batch_size"] == 8
    assert job.hyperparameters["learning_rate"] == 0.05
    assert job.hyperparameters["precision"] == "32-true"
    assert job.hyperparameters["world_size"] == 1

    parts = settled_parts(job)
    assert [p.state for p in parts] == [PartState.DONE] * len(parts)
    chunks = []
    for part in parts:
        with part.file.open("rb") as fh:
            chunks.append(read_chunk(fh.read()))
    chunks.sort(key=lambda c: c.meta["seq"])
    assert step_names(chunks) == STEPS
    assert annotation_counts(chunks) == {"Forward": 12, "Backward": 12, "Optimizer": 12}
    # The script's end (its exit hooks, here called by hand) completes the job.
    Profiler.instance().finish()
    job = wait_for(
        lambda: TrainingJob.objects.filter(pk=job.pk, status=JobStatus.COMPLETED).first(),
        timeout=120,
    )
    assert job.hyperparameters["total_steps"] == 12


# ---- What every callback shares ----------------------------------------------------------------


def test_a_trainer_whose_settings_cannot_be_read_is_still_profiled(config, tmp_path):
    from collector.integrations.session import TrainingSession

    def unreadable():
        raise AttributeError("no optimizers yet")

    config.hyperparameters = {
        "model": torch.nn.Linear(4, 1),
        "data": PurePosixPath("/" + "d" * 300),
        "name": "x" * 300,
    }
    session = TrainingSession(config)
    session.start(unreadable)
    session.begin("Forward")
    session.step_ended()
    session.stop()

    assert step_names(spooled_chunks(tmp_path)) == ["step_0"]
    assert annotation_counts(spooled_chunks(tmp_path)) == {"Forward": 1}
    # Only the script's own, as JSON carries them (an object as its text, cut at 200 characters).
    assert job_hyperparameters(tmp_path) == {
        "model": "Linear(in_features=4, out_features=1, bias=True)",
        "data": "/" + "d" * 199,
        "name": "x" * 300,  # a string is text already
    }
