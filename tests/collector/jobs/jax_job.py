"""A small JAX training loop (a jitted step) profiled by the collector: it imports jax and not
torch, so the collector captures its windows with jax.profiler. Configured by PROFILER_*."""

import sys

import collector
from tests.jax_model import starting_point, train_step

w, x, y = starting_point()
collector.start_profiling()
for i in range(int(sys.argv[1])):
    with collector.annotate(f"step_{i}"), collector.annotate("Update"):
        w = train_step(w, x, y).block_until_ready()
collector.stop_profiling()
assert "torch" not in sys.modules
