"""A tiny profiled training loop whose options make it fail, run until killed, or start the
user's own torch.profiler in the middle of the collector's Kineto window."""

import argparse
import tempfile
import time

import torch

import collector

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--step-ms", type=float, default=5.0)
parser.add_argument("--fail-at", type=int, help="raise an exception in this step")
parser.add_argument("--forever", action="store_true", help="train until killed")
parser.add_argument(
    "--user-profiler",
    type=int,
    nargs=2,
    metavar=("START", "STOP"),
    help="run the script's own torch.profiler from step START to step STOP",
)
args = parser.parse_args()

collector.start_profiling()
print("PROFILING", flush=True)
user_prof = None
step = 0
while args.forever or step < args.steps:
    with collector.annotate(f"step_{step}"):
        if args.user_profiler and step == args.user_profiler[0]:
            user_prof = torch.profiler.profile()
            user_prof.start()
        with collector.annotate("Forward"):
            torch.randn(64, 64) @ torch.randn(64, 64)
        time.sleep(args.step_ms / 1000)
        if args.user_profiler and step == args.user_profiler[1]:
            user_prof.stop()
            # torch replaces the target file (it would turn /dev/null into a regular file).
            with tempfile.TemporaryDirectory() as scratch:
                user_prof.export_chrome_trace(f"{scratch}/user.json")
        if step == args.fail_at:
            raise RuntimeError(f"boom at step {step}")
    step += 1
print("TRAINING DONE", flush=True)
