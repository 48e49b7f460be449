"""Records ``cpu_memory_profile.json.gz``: a tiny CNN trained on the CPU for a few steps under
``torch.profiler.profile(profile_memory=True, record_shapes=True, with_stack=True)``.

Run from the repository root (needs ``torch``; the fixture is committed, tests never run this)::

    python tests/data/record_memory_trace.py

The trace holds Kineto's ``[memory]`` instant events (``Addr``, ``Bytes``, ``Total Allocated``,
``Total Reserved``, ``Device Type``, ``Device Id``) beside the CPU operators that allocated them.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

OUT = Path(__file__).resolve().parent / "cpu_memory_profile.json.gz"


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(16 * 16, 10),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(16, 3, 32, 32)
    y = torch.randint(0, 10, (16,))
    with profile(
        activities=[ProfilerActivity.CPU],
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
        schedule=schedule(wait=1, warmup=1, active=4, repeat=1),
    ) as prof:
        for _ in range(6):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            prof.step()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(raw))
        with raw.open("rb") as src, gzip.open(OUT, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
    print(OUT, OUT.stat().st_size)


if __name__ == "__main__":
    main()
