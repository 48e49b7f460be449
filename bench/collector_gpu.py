"""Collector on a real CUDA training loop: do kernels, launches, memcpys and NVML samples arrive?

Trains ``examples/train_cnn.py`` on the GPU under the collector (spool only, no server), then
reads back every chunk the way the server does (``ingest_trace``: its Kineto windows through the
one Kineto parser) and checks what a user's dashboard and timeline will need:

  - kernels with device, stream, grid/block and a correlation id,
  - a runtime or driver launch (cudaLaunchKernel, cuLaunchKernel) with the same correlation id for each kernel,
  - host-to-device memcpys with their byte counts,
  - NVML utilisation and memory samples for every visible GPU, and psutil CPU samples,
  - the user's annotations (``step_<n>``, Forward/Backward...) around the GPU work.

With ``--keep DIR`` the chunks and a plain torch.profiler Kineto trace of a few steps of the
same loop are written to DIR (to ingest them through the server elsewhere). The last line is
machine-readable:

  RESULT kernels=<n> launches_matched_pct=<n> memcpy_bytes=<n> nvml_samples=<n> gpus=<n>

    python bench/collector_gpu.py [--steps 300] [--keep DIR]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from examples.train_cnn import Trainer  # noqa: E402
from profiler_app.traces import TimelineReader, ingest_trace  # noqa: E402
from tests.collector.helpers import spool_profiler  # noqa: E402
from tracefmt.chunk import Chunk, read_chunk  # noqa: E402
from tracefmt.kinds import EventKind, MemcpyKind, SampleKind  # noqa: E402


def train_under_collector(trainer: Trainer, steps: int, spool: Path) -> float:
    prof = spool_profiler(
        spool, job_name="gpu-check", server_url=None, flush_interval_s=2.0, kineto_wait_steps=20
    )
    prof.start_profiling()
    t0 = time.perf_counter()
    for step in range(steps):
        trainer.step(step)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    prof.stop_profiling()
    return elapsed


def kineto_trace(trainer: Trainer, first_step: int, out: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        for step in range(first_step, first_step + 5):
            trainer.step(step)
        torch.cuda.synchronize()
    raw = out.with_suffix("")
    p.export_chrome_trace(str(raw))
    with raw.open("rb") as src, gzip.open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()


COLUMNS = [
    "kind",
    "name",
    "dur_ns",
    "device",
    "stream",
    "correlation",
    "bytes",
    "memcpy_kind",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
]


def stored_events(path: Path, store: Path) -> tuple[dict[str, np.ndarray], list[str]]:
    """A chunk's events as the server stores them, and the store's strings."""
    ingest_trace(path, "collector", store)
    reader = TimelineReader(store)
    table = reader.read_all(COLUMNS)
    return {c: table.column(c).to_numpy() for c in COLUMNS}, reader.strings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="write the chunks and a Kineto trace here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: this check needs a GPU machine", file=sys.stderr)
        return 2

    trainer = Trainer("cuda", args.batch_size)
    for step in range(5):  # cuDNN autotuning and allocator warm-up stay out of the capture
        trainer.step(step)
    with tempfile.TemporaryDirectory(prefix="collector-gpu-") as tmp:
        spool = Path(tmp) / "spool"
        elapsed = train_under_collector(trainer, args.steps, spool)
        paths = sorted(spool.rglob("*.pcol"))
        chunks: list[Chunk] = [read_chunk(p) for p in paths]
        parts = [stored_events(p, Path(tmp) / f"store-{i}") for i, p in enumerate(paths)]
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for i, path in enumerate(paths):
                shutil.copy(path, args.keep / f"chunk-{i:03d}.pcol")
            kineto_trace(trainer, args.steps, args.keep / "h100_cnn_kineto.json.gz")

    if not chunks:
        print("no chunks were written", file=sys.stderr)
        return 1
    meta = chunks[0].meta
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, {args.steps} steps in "
        f"{elapsed:.2f} s, {len(chunks)} chunks, devices {meta.get('devices')}, "
        f"sources {meta.get('sources')}"
    )

    kinds: Counter[str] = Counter()
    sample_kinds: Counter[str] = Counter()
    kernel_corr: list[np.ndarray] = []
    launch_corr: list[np.ndarray] = []
    memcpy_bytes = 0
    kernel_names: Counter[str] = Counter()
    streams: set[tuple[int, int]] = set()
    bad_kernels = 0
    gpu_samples_per_device: Counter[int] = Counter()
    annotations: Counter[str] = Counter()
    for chunk, (ev, strings) in zip(chunks, parts, strict=True):
        s = chunk.samples
        for kind in EventKind:
            kinds[kind.name] += int((ev["kind"] == kind).sum())
        for kind in SampleKind:
            sample_kinds[kind.name] += int((s["s_kind"] == kind).sum())
        k = ev["kind"] == EventKind.KERNEL
        kernel_corr.append(ev["correlation"][k])
        # cuDNN launches some kernels through the driver API (cuLaunchKernel).
        launch = (ev["kind"] == EventKind.CUDA_RUNTIME) | (ev["kind"] == EventKind.CUDA_DRIVER)
        launch_corr.append(ev["correlation"][launch])
        geometry = np.stack([ev[f"{g}_{a}"][k] for g in ("grid", "block") for a in "xyz"])
        bad_kernels += int(
            (
                (ev["device"][k] < 0)
                | (ev["stream"][k] < 0)
                | (ev["dur_ns"][k] < 0)
                | (geometry.min(axis=0) < 1)
            ).sum()
        )
        for dev, stream in zip(ev["device"][k], ev["stream"][k], strict=True):
            streams.add((int(dev), int(stream)))
        for name_id in ev["name"][k]:
            kernel_names[strings[name_id]] += 1
        htod = (ev["kind"] == EventKind.GPU_MEMCPY) & (ev["memcpy_kind"] == MemcpyKind.HTOD)
        memcpy_bytes += int(ev["bytes"][htod].sum())
        for name_id in ev["name"][ev["kind"] == EventKind.USER_ANNOTATION]:
            name = strings[name_id]
            annotations["step_<n>" if name.startswith("step_") else name] += 1
        util = s["s_kind"] == SampleKind.GPU_UTIL_PCT
        for dev in s["s_device"][util]:
            gpu_samples_per_device[int(dev)] += 1

    kernels = np.concatenate(kernel_corr)
    launches = np.concatenate(launch_corr)
    matched = np.isin(kernels, launches).mean() * 100 if len(kernels) else 0.0
    print("events:", dict(kinds))
    print("samples:", dict(sample_kinds))
    print(
        f"kernels {len(kernels)}, distinct names {len(kernel_names)}, (device, stream) "
        f"{sorted(streams)}, kernels with a bad device/stream/grid/block/duration {bad_kernels}"
    )
    print(f"kernels whose launch has the same correlation id: {matched:.1f}%")
    print(
        f"host-to-device bytes {memcpy_bytes}, NVML utilisation samples per GPU "
        f"{dict(gpu_samples_per_device)}, annotations {dict(annotations)}"
    )
    print("top kernels:")
    for name, count in kernel_names.most_common(5):
        print(f"  {count:6d}  {name[:100]}")
    nvml = sample_kinds["GPU_UTIL_PCT"] + sample_kinds["GPU_MEM_USED_BYTES"]
    print(
        f"RESULT kernels={len(kernels)} launches_matched_pct={matched:.1f} "
        f"memcpy_bytes={memcpy_bytes} nvml_samples={nvml} gpus={len(gpu_samples_per_device)}"
    )
    ok = len(kernels) > 0 and matched >= 99 and nvml > 0 and memcpy_bytes > 0 and not bad_kernels
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
