"""Collector overhead end to end, what it captured, and its output size.

Runs the training loop of ``examples/train_cnn.py`` in one process.

**End to end** (what a user pays): at least 1,000 steps with no profiler and as many with the
collector at its default settings, in interleaved blocks (``--blocks`` x ``--block-steps`` per
mode, the order alternating block by block so that drift in machine load hits both alike). A
block's wall time runs from before ``start_profiling()`` to after ``stop_profiling()``: every
Kineto window, its start, stop and export, the packing of its trace and the chunks written for
the uploader (to ``--server`` when given, else to a spool, as with no server) all count. The
collector's blocks are profiling sessions of one job, so its overhead budget spans them all, as
in one long run. On a machine without a GPU the collector records CPU operators in its windows
(``cpu_operators=True``, what a GPU-less user who asks for windows gets), so a window's cost is
measured here too.

  overhead_e2e_pct   100 x (total wall time with the collector / without - 1)
  overhead_pct       the median over blocks of (median step with / median step without) - 1:
                     the old figure, which never sees a captured step; kept for comparison

**Comparison rounds** (``--rounds``, 0 to skip): per round, the same steps with no profiler,
torch.profiler on every step (exported as JSON), and the collector recording CPU operators on
every step (one window per round), for bytes per event against torch.profiler's JSON.

Before the live runs, the real traces of ``--traces`` (default ../shared/traces) are each put
into a chunk as one Kineto window, the way the collector stores it: gzipped JSON (chunk format
2) and packed into columns with each codec of ``tracefmt.kineto_columns.CODECS`` (format 3).
The codec the collector uses is the one that wins this measurement. The last line is
machine-readable:

  RESULT overhead_e2e_pct=<n> overhead_pct=<n> bytes_per_event=<n> captured_steps_pct=<n>
         windows=<n> events_per_window=<n> budget_pct=<n> collector_measured_pct=<n>
         steps_per_mode=<n> codec=<name> gzip_bytes_per_event=<n> ...

where bytes_per_event is over the real traces packed (format 3), events_per_window the events a
window kept (kernels, copies and launches on a GPU; operators on a CPU), collector_measured_pct
the overhead the collector measured itself (what the job's Info page shows), and the rest as
printed by the comparison rounds.

    python bench/collector_overhead.py [--blocks 8] [--block-steps 250] [--rounds 4]
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

from collector.chunker import kineto_window  # noqa: E402
from tests.collector.helpers import spool_profiler  # noqa: E402
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
    prof = spool_profiler(spool, job_name=f"bench-{mode.name}", server_url=None, **settings)
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


@dataclass
class EndToEnd:
    """The end-to-end blocks: wall seconds and step times per block and mode."""

    wall_s: dict[str, list[float]] = field(default_factory=lambda: {"none": [], "collector": []})
    steps: dict[str, list[list[float]]] = field(
        default_factory=lambda: {"none": [], "collector": []}
    )
    report: dict = field(default_factory=dict)
    windows: list[int] = field(default_factory=list)  # events kept per window

    def overhead_pct(self) -> float:
        return 100 * (sum(self.wall_s["collector"]) / sum(self.wall_s["none"]) - 1)

    def median_step_overhead_pct(self) -> float:
        ratios = [
            statistics.median(c) / statistics.median(n)
            for c, n in zip(self.steps["collector"], self.steps["none"], strict=True)
        ]
        return 100 * (statistics.median(ratios) - 1)


def end_to_end(trainer, args, sync, spool: Path) -> EndToEnd:
    """Interleaved blocks of the same steps without and with the collector (one job)."""
    cuda = trainer.device.type == "cuda"
    prof = spool_profiler(
        spool,
        job_name="bench-e2e",
        server_url=args.server,
        token=args.token,
        cpu_operators=not cuda,
    )
    result = EndToEnd()
    step = args.warmup
    for block in range(args.blocks):
        order = ("none", "collector") if block % 2 == 0 else ("collector", "none")
        for name in order:
            t0 = time.perf_counter()
            if name == "collector":
                prof.start_profiling()
            times = timed_steps(trainer, step, args.block_steps, sync)
            if name == "collector":
                prof.stop_profiling()
            result.wall_s[name].append(time.perf_counter() - t0)
            result.steps[name].append(times)
            step += args.block_steps
        n, c = result.wall_s["none"][-1], result.wall_s["collector"][-1]
        print(
            f"block {block + 1}: none {n:7.3f} s  collector {c:7.3f} s  ({100 * (c / n - 1):+.2f} %)",
            flush=True,
        )
    assert prof._planner is not None, "the collector took no Kineto window at all"
    result.report = prof._planner.report()
    for path in sorted(spool.rglob("*.pcol")):
        result.windows += [window_events(w) for w in read_chunk(path).kineto]
    return result


def print_end_to_end(e2e: EndToEnd, args) -> None:
    r = e2e.report
    n, c = sum(e2e.wall_s["none"]), sum(e2e.wall_s["collector"])
    steps = args.blocks * args.block_steps
    print(
        f"end to end: {steps} steps per mode in {args.blocks} interleaved blocks of "
        f"{args.block_steps}: none {n:.2f} s, collector {c:.2f} s, "
        f"overhead {e2e.overhead_pct():+.2f} % (median step: {e2e.median_step_overhead_pct():+.2f} %)"
    )
    per_window = statistics.fmean(e2e.windows) if e2e.windows else 0.0
    print(
        f"captured {r['steps_captured']} of {r['steps_run']} steps "
        f"({100 * r['steps_captured'] / max(r['steps_run'], 1):.2f} %) in {r['windows_total']} "
        f"windows, {per_window:.0f} events per window; the collector measured its own cost at "
        f"{r['overhead_pct']:.2f} % (budget {r['budget_pct']} %, schedule: {r['schedule']})"
    )


def run_round(
    name: str, trainer, modes: dict[str, Mode], first: int, steps: int, sync, scratch: Path
) -> None:
    mode = modes[name]
    if name == "none":
        mode.step_s += timed_steps(trainer, first, steps, sync)
    elif name == "torch.profiler":
        run_torch_profiler(trainer, mode, first, steps, sync, scratch)
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
    parser.add_argument("--blocks", type=int, default=8, help="end-to-end blocks per mode")
    parser.add_argument("--block-steps", type=int, default=250, help="steps per block")
    parser.add_argument("--rounds", type=int, default=4, help="comparison rounds (0: none)")
    parser.add_argument("--steps", type=int, default=100, help="steps per mode per round")
    parser.add_argument("--warmup", type=int, default=15, help="untimed steps before timing")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--server", help="upload the collector's chunks to this server")
    parser.add_argument("--token", help="API token for --server")
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
    sizes_result = (
        f"bytes_per_event={packed_bpe:.2f} codec={kineto_columns.CODEC} "
        f"gzip_bytes_per_event={gzip_bpe:.2f} pack_parent_us_per_event={parent_us:.2f} "
        f"pack_child_us_per_event={child_us:.1f}"
    )
    if args.sizes_only:
        print(f"RESULT {sizes_result}")
        return 0

    example = load_example()
    trainer = example.Trainer(args.device, args.batch_size)
    cuda = trainer.device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for i in range(args.warmup):
        trainer.step(i)
    print(
        f"device {args.device}, torch {torch.__version__}, batch {args.batch_size}; "
        f"median step {1000 * statistics.median(timed_steps(trainer, 0, 20, sync)):.1f} ms"
    )
    with tempfile.TemporaryDirectory(prefix="collector-bench-") as tmp:
        e2e = end_to_end(trainer, args, sync, Path(tmp) / "e2e")
        print_end_to_end(e2e, args)
        compared = compare_rounds(trainer, args, sync, Path(tmp)) if args.rounds else ""

    r = e2e.report
    per_window = statistics.fmean(e2e.windows) if e2e.windows else 0.0
    print(
        f"RESULT overhead_e2e_pct={e2e.overhead_pct():.2f} "
        f"overhead_pct={e2e.median_step_overhead_pct():.2f} {sizes_result} "
        f"captured_steps_pct={100 * r['steps_captured'] / max(r['steps_run'], 1):.2f} "
        f"windows={r['windows_total']} events_per_window={per_window:.0f} "
        f"budget_pct={r['budget_pct']} collector_measured_pct={r['overhead_pct']:.2f} "
        f"steps_per_mode={args.blocks * args.block_steps}{compared}"
    )
    return 0


def compare_rounds(trainer, args, sync, scratch: Path) -> str:
    """No profiler, torch.profiler and the collector recording CPU operators on every step,
    round by round; prints their table and returns their RESULT fields."""
    names = ["none", "torch.profiler", "collector+ops"]
    modes = {name: Mode(name) for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    step = 10**6  # step names apart from the end-to-end run's
    for r in range(args.rounds):
        # Rotate the order so that no mode always runs right after a heavier one.
        order = names[r % len(names) :] + names[: r % len(names)]
        # Median step time per round: other processes on a shared machine add long, rare
        # stalls that would dominate a mean.
        round_median: dict[str, float] = {}
        for name in order:
            before = len(modes[name].step_s)
            run_round(name, trainer, modes, step, args.steps, sync, scratch)
            round_median[name] = statistics.median(modes[name].step_s[before:])
            step += args.steps
        for name in names:
            ratios[name].append(round_median[name] / round_median["none"])

    print(f"comparison: {args.rounds} rounds x {args.steps} steps per mode (interleaved)")
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
    torch_bpe = modes["torch.profiler"].bytes_out / modes["torch.profiler"].events
    ops = modes["collector+ops"]
    return (
        f" live_ops_bytes_per_event={ops.bytes_out / ops.events:.1f} "
        f"torch_profiler_bytes_per_event={torch_bpe:.1f}"
    )


if __name__ == "__main__":
    sys.exit(main())
