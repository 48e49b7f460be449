"""Collector overhead and output size, against no profiler and plain torch.profiler.

Runs the training loop of ``examples/train_cnn.py`` in one process, interleaving the modes
round by round so that drift in machine load hits every mode alike:

  none            no profiler (the script's annotations are no-ops)
  torch.profiler  torch.profiler.profile(activities=[CPU]) on every step, exported as JSON
  collector       the collector in its default mode (what `start_profiling()` does)
  collector+ops   the collector recording CPU operators on every step (one Kineto window
                  per round), to compare bytes per event with torch.profiler's JSON for the
                  same kind of events

Overhead is the increase of the median step time over "none", paired round by round. Bytes
are what would be uploaded (chunks left in a scratch spool: no server needed). A chunk's events
are its own rows plus the complete events of its Kineto windows that the server keeps (not
torch.profiler's ProfilerStep#n nor its copies of the collector's annotations).

Before the live run, the real traces of ``--traces`` (default ../shared/traces) are each put
into a chunk as one Kineto window, the way the collector stores it: gzipped JSON (chunk format
2) and packed into columns with each codec of ``tracefmt.kineto_columns.CODECS`` (format 3).
The codec the collector uses is the one that wins this measurement. The last line is
machine-readable:

  RESULT overhead_pct=<n> bytes_per_event=<n> codec=<name> gzip_bytes_per_event=<n>
         live_ops_bytes_per_event=<n> live_default_bytes_per_event=<n>
         torch_profiler_bytes_per_event=<n> pack_parent_us_per_event=<n>
         pack_child_us_per_event=<n>

where bytes_per_event is over the real traces packed (format 3), gzip_bytes_per_event the same
traces gzipped (format 2), live_*_bytes_per_event the live modes, and pack_*_us_per_event the
CPU time packing the largest trace takes on the collector's flusher thread (in the training
process) and in its packing child.

    python bench/collector_overhead.py [--rounds 8] [--steps 150] [--device cpu] [--sizes-only]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import io
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import collector  # noqa: E402
from collector.chunker import kineto_window  # noqa: E402
from collector.profiler import Profiler  # noqa: E402
from tests.traces.synthetic import chunk_meta  # noqa: E402
from tracefmt import kineto_columns  # noqa: E402
from tracefmt.chunk import (  # noqa: E402
    KinetoWindow,
    chunk_bytes,
    empty_events,
    empty_samples,
    read_chunk,
)

DEFAULT_TRACES = REPO.parent / "shared" / "traces"
CHUNK_META = chunk_meta(job="bench", hostname="bench", pid=1, torch_version=None)


def load_example():
    spec = importlib.util.spec_from_file_location("train_cnn", REPO / "examples" / "train_cnn.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Mode:
    name: str
    step_s: list[float] = field(default_factory=list)
    bytes_out: int = 0
    events: int = 0
    steps_captured: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def mean_ms(self) -> float:
        return 1000 * statistics.fmean(self.step_s)

    @property
    def median_ms(self) -> float:
        return 1000 * statistics.median(self.step_s)


def timed_steps(trainer, first: int, steps: int, sync, after_step=None) -> list[float]:
    times = []
    for i in range(first, first + steps):
        t0 = time.perf_counter()
        trainer.step(i)
        if after_step is not None:
            after_step()
        sync()
        times.append(time.perf_counter() - t0)
    return times


def run_torch_profiler(trainer, mode: Mode, first: int, steps: int, sync, scratch: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if trainer.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        mode.step_s += timed_steps(trainer, first, steps, sync)
    path = scratch / f"torch-{first}.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    mode.bytes_out += path.stat().st_size
    mode.events += sum(1 for e in trace["traceEvents"] if e.get("ph") == "X")
    mode.steps_captured += steps
    path.unlink()


def run_collector(
    trainer, mode: Mode, first: int, steps: int, sync, spool: Path, **settings
) -> None:
    prof = Profiler()
    prof.configure(
        collector.Config(
            job_name=f"bench-{mode.name}",
            spool_dir=str(spool),
            server_url=None,
            exit_hooks=False,
            **settings,
        )
    )
    prof.start_profiling()
    mode.step_s += timed_steps(trainer, first, steps, sync)
    prof.stop_profiling()
    for path in spool.rglob("*.pcol"):
        chunk = read_chunk(path)
        mode.bytes_out += path.stat().st_size
        mode.events += chunk.n_events + sum(map(window_events, chunk.kineto))
        mode.extra["samples"] = mode.extra.get("samples", 0) + chunk.n_samples
        mode.extra["kernels"] = mode.extra.get("kernels", 0) + int(
            (chunk.events["ev_kind"] == 5).sum()
        )
        path.unlink()
    mode.steps_captured += steps


def window_events(window: KinetoWindow) -> int:
    """The complete events of a Kineto window that the server keeps."""
    text = io.BytesIO()
    window.write_trace(text, 1 << 34)
    data = text.getvalue()
    return kept_events(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data, window)


def kept_events(text: bytes, window: KinetoWindow | None = None) -> int:
    own = set(window.annotations) if window is not None else set()
    return sum(
        1
        for e in json.loads(text)["traceEvents"]
        if e.get("ph") == "X"
        and not str(e.get("name", "")).startswith("ProfilerStep#")
        and not (e.get("cat") == "user_annotation" and e.get("name") in own)
    )


@dataclass
class Sizes:
    events: int = 0
    bytes: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, encoding: str, size: int, seconds: float) -> None:
        self.bytes[encoding] = self.bytes.get(encoding, 0) + size
        self.seconds[encoding] = self.seconds.get(encoding, 0.0) + seconds


def real_trace_sizes(folder: Path) -> Sizes:
    """Each real trace as one window of a chunk: gzipped (format 2) and packed with each codec
    (format 3); checks that every packed window unpacks to the trace's JSON."""
    traces = sorted(p for p in folder.rglob("*.json.gz"))
    if not traces:
        raise SystemExit(f"no *.json.gz traces under {folder}")
    encodings = ["gzip", *kineto_columns.CODECS.values()]
    total = Sizes()
    print(f"real traces under {folder}, each as one Kineto window of a chunk (bytes per event)")
    print(f"{'trace':<42}{'events':>8}" + "".join(f"{e:>9}" for e in encodings))
    for path in traces:
        text = gzip.decompress(path.read_bytes())
        events = kept_events(text)
        total.events += events
        row = f"{path.relative_to(folder).as_posix():<42}{events:>8}"
        expected = kineto_columns.parse(text)
        for encoding in encodings:
            t0 = time.perf_counter()
            if encoding == "gzip":
                window = KinetoWindow(gzip.compress(text, 6))
            else:
                window = KinetoWindow(kineto_columns.pack_trace(text, codec=encoding))
            seconds = time.perf_counter() - t0
            if encoding != "gzip":
                back = io.BytesIO()
                window.write_trace(back, 1 << 34)
                assert kineto_columns.parse(back.getvalue()) == expected, (path, encoding)
            data = chunk_bytes(CHUNK_META, [""], empty_events(), empty_samples(), [window])
            total.add(encoding, len(data), seconds)
            row += f"{len(data) / max(events, 1):>9.2f}"
        print(row)
    print(
        f"{'all':<42}{total.events:>8}"
        + "".join(f"{total.bytes[e] / total.events:>9.2f}" for e in encodings)
    )
    print(
        f"{'encoding seconds (one core)':<50}"
        + "".join(f"{total.seconds[e]:>9.2f}" for e in encodings)
    )
    return total


def packing_cost(folder: Path) -> tuple[float, float]:
    """CPU microseconds per event that packing the largest real trace costs the collector's
    flusher thread (in the training process) and its packing child."""
    path = max(folder.rglob("*.json.gz"), key=lambda p: p.stat().st_size)
    text = gzip.decompress(path.read_bytes())
    events = kept_events(text)
    with tempfile.TemporaryDirectory(prefix="collector-pack-") as tmp:
        trace = Path(tmp) / "kineto-window.json"
        trace.write_bytes(text)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        thread = time.thread_time()
        window = kineto_window(trace, set())
        thread = time.thread_time() - thread
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert window.packed
    child = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    parent_us, child_us = 1e6 * thread / events, 1e6 * child / events
    print(
        f"packing {path.name} ({events} events) as the collector does: "
        f"{parent_us:.2f} us/event on the flusher thread, {child_us:.1f} us/event in the child"
    )
    return parent_us, child_us


def run_round(
    name: str, trainer, modes: dict[str, Mode], first: int, steps: int, sync, scratch: Path
) -> None:
    mode = modes[name]
    if name == "none":
        mode.step_s += timed_steps(trainer, first, steps, sync)
    elif name == "torch.profiler":
        run_torch_profiler(trainer, mode, first, steps, sync, scratch)
    elif name == "collector":
        run_collector(trainer, mode, first, steps, sync, scratch / "default")
    else:
        # One Kineto window over the whole round, like the torch.profiler mode.
        run_collector(
            trainer,
            mode,
            first,
            steps,
            sync,
            scratch / "ops",
            cpu_operators=True,
            kineto_skip_first_steps=0,
            kineto_warmup_steps=0,
            kineto_active_steps=steps,
            kineto_wait_steps=0,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=150, help="timed steps per mode per round")
    parser.add_argument("--warmup", type=int, default=15, help="untimed steps before round 1")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument(
        "--sizes-only", action="store_true", help="measure the real traces' sizes only"
    )
    args = parser.parse_args(argv)

    sizes = real_trace_sizes(args.traces)
    parent_us, child_us = packing_cost(args.traces)
    packed = {e: n for e, n in sizes.bytes.items() if e != "gzip"}
    best = min(packed, key=packed.__getitem__)
    if best != kineto_columns.CODEC:
        print(f"note: {best} beat the collector's codec {kineto_columns.CODEC} on these traces")
    packed_bpe = sizes.bytes[kineto_columns.CODEC] / sizes.events
    gzip_bpe = sizes.bytes["gzip"] / sizes.events
    if args.sizes_only:
        print(
            f"RESULT bytes_per_event={packed_bpe:.2f} codec={kineto_columns.CODEC} "
            f"gzip_bytes_per_event={gzip_bpe:.2f} pack_parent_us_per_event={parent_us:.2f} "
            f"pack_child_us_per_event={child_us:.1f}"
        )
        return 0

    example = load_example()
    trainer = example.Trainer(args.device, args.batch_size)
    cuda = trainer.device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    names = ["none", "torch.profiler", "collector", "collector+ops"]
    modes = {name: Mode(name) for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for i in range(args.warmup):
        trainer.step(i)
    step = args.warmup
    with tempfile.TemporaryDirectory(prefix="collector-bench-") as tmp:
        for r in range(args.rounds):
            # Rotate the order so that no mode always runs right after a heavier one.
            order = names[r % len(names) :] + names[: r % len(names)]
            # Median step time per round: other processes on a shared machine add long, rare
            # stalls that would dominate a mean.
            round_median: dict[str, float] = {}
            for name in order:
                before = len(modes[name].step_s)
                run_round(name, trainer, modes, step, args.steps, sync, Path(tmp))
                round_median[name] = statistics.median(modes[name].step_s[before:])
                step += args.steps
            for name in names:
                ratios[name].append(round_median[name] / round_median["none"])

    print(
        f"device {args.device}, torch {torch.__version__}, {args.rounds} rounds x "
        f"{args.steps} steps per mode (interleaved), batch {args.batch_size}"
    )
    header = (
        f"{'mode':<16}{'mean ms':>9}{'median ms':>11}{'overhead %':>12}"
        f"{'events/step':>13}{'bytes/step':>12}{'bytes/event':>13}{'bytes/record':>14}"
    )
    print(header)
    print("-" * len(header))
    for name, mode in modes.items():
        overhead = 100 * (statistics.median(ratios[name]) - 1)
        per_step = mode.steps_captured or 1
        records = mode.events + int(mode.extra.get("samples", 0))
        bpe = mode.bytes_out / mode.events if mode.events else 0.0
        bpr = mode.bytes_out / records if records else 0.0
        print(
            f"{name:<16}{mode.mean_ms:>9.2f}{mode.median_ms:>11.2f}{overhead:>12.2f}"
            f"{mode.events / per_step:>13.1f}{mode.bytes_out / per_step:>12.0f}"
            f"{bpe:>13.1f}{bpr:>14.1f}"
        )
    print("overhead %: median over rounds of (mode's median step time / no profiler's, same round)")
    print(
        "bytes/event: all bytes (events, samples, archive overhead) / timeline events; "
        "bytes/record counts samples too"
    )
    default = modes["collector"]
    if cuda:
        print(
            f"collector (default) captured {default.extra.get('kernels', 0):.0f} kernels and "
            f"{default.extra.get('samples', 0):.0f} samples"
        )
    overhead = 100 * (statistics.median(ratios["collector"]) - 1)
    torch_bpe = modes["torch.profiler"].bytes_out / modes["torch.profiler"].events
    ops = modes["collector+ops"]
    print(
        f"RESULT overhead_pct={overhead:.2f} bytes_per_event={packed_bpe:.2f} "
        f"codec={kineto_columns.CODEC} gzip_bytes_per_event={gzip_bpe:.2f} "
        f"live_ops_bytes_per_event={ops.bytes_out / ops.events:.1f} "
        f"live_default_bytes_per_event={default.bytes_out / default.events:.1f} "
        f"torch_profiler_bytes_per_event={torch_bpe:.1f} "
        f"pack_parent_us_per_event={parent_us:.2f} pack_child_us_per_event={child_us:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
