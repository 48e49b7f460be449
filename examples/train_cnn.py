"""A small CNN trained on synthetic CIFAR-sized images, annotated for profiler-app.

Runs on CPU here and on a GPU where there is one:

    PROFILER_SERVER_URL=http://127.0.0.1:8000 PROFILER_TOKEN=<token> \\
        python examples/train_cnn.py --steps 200

The lines a training script adds are marked "profiler-app".
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import collector  # profiler-app


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def synthetic_loader(samples: int, batch_size: int, seed: int = 0) -> DataLoader:
    gen = torch.Generator().manual_seed(seed)
    images = torch.randn(samples, 3, 32, 32, generator=gen)
    labels = torch.randint(0, 10, (samples,), generator=gen)
    return DataLoader(
        TensorDataset(images, labels),
        batch_size=batch_size,
        shuffle=True,
        generator=gen,
        drop_last=True,
    )


class Trainer:
    """The training loop, one step at a time (the overhead benchmark times it per step)."""

    def __init__(self, device: str, batch_size: int = 32, samples: int = 1024) -> None:
        torch.manual_seed(0)
        self.device = torch.device(device)
        self.net = SmallCNN().to(self.device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        self.loader = synthetic_loader(samples, batch_size)
        self._batches = iter(self.loader)

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        try:
            return next(self._batches)
        except StopIteration:
            self._batches = iter(self.loader)
            return next(self._batches)

    def step(self, step: int) -> float:
        with collector.annotate(f"step_{step}"):  # profiler-app
            inputs, labels = self.next_batch()
            inputs = inputs.to(self.device, non_blocking=True)
            labels = labels.to(self.device, non_blocking=True)
            self.optimizer.zero_grad()
            with collector.annotate("Forward"):  # profiler-app
                outputs = self.net(inputs)
            with collector.annotate("Loss"):  # profiler-app
                loss = self.criterion(outputs, labels)
            with collector.annotate("Backward"):  # profiler-app
                loss.backward()
            with collector.annotate("Optimizer"):  # profiler-app
                self.optimizer.step()
        return float(loss.detach())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--job-name", help="job name on the server (default: script-time)")
    parser.add_argument("--no-profiler", action="store_true", help="train without profiling")
    args = parser.parse_args(argv)

    trainer = Trainer(args.device, args.batch_size)
    if not args.no_profiler:
        config = collector.Config(job_name=args.job_name)  # profiler-app
        config.profiler = {"EnableCuda": "1"}  # profiler-app (SageMaker-style keys work too)
        config.hyperparameters = {"batch_size": args.batch_size, "lr": 0.01, "steps": args.steps}
        prof = collector.Profiler.instance()  # profiler-app
        prof.configure(config)  # profiler-app
        prof.start_profiling()  # profiler-app

    started = time.perf_counter()
    for step in range(args.steps):
        loss = trainer.step(step)
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss:.4f}", flush=True)
    elapsed = time.perf_counter() - started
    print(f"trained {args.steps} steps on {args.device} in {elapsed:.1f} s", flush=True)

    if not args.no_profiler:
        prof.stop_profiling()  # profiler-app


if __name__ == "__main__":
    main()
