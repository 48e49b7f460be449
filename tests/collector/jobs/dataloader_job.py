"""A small CPU training loop fed by a DataLoader with worker processes, annotated the usual way:
the batch is fetched by the ``for`` loop, before the step's annotation begins."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

import collector


class Images(Dataset):
    """Synthetic images each made by some work in the worker (a blur), as decoding would."""

    def __init__(self, samples: int) -> None:
        self.samples = samples
        self.kernel = torch.ones(3, 1, 5, 5) / 25

    def __len__(self) -> int:
        return self.samples

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        gen = torch.Generator().manual_seed(index)
        image = torch.randn(1, 3, 96, 96, generator=gen)
        for _ in range(8):
            image = nn.functional.conv2d(image, self.kernel, padding=2, groups=3)
        return image[0], index % 10


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--workers", type=int, default=2)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
net = nn.Sequential(
    nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
loader = DataLoader(Images(16 * args.steps), batch_size=16, num_workers=args.workers)

collector.start_profiling()
for step, (images, labels) in enumerate(loader):
    with collector.annotate(f"step_{step}"):
        optimizer.zero_grad()
        with collector.annotate("Forward"):
            loss = nn.functional.cross_entropy(net(images), labels)
        with collector.annotate("Backward"):
            loss.backward()
        with collector.annotate("Optimizer"):
            optimizer.step()
collector.stop_profiling()
print("TRAINING DONE", flush=True)
