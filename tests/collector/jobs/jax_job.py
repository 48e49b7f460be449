"""A small JAX training loop (a jitted step) profiled by the collector: it imports jax and not
torch, so the collector captures its windows with jax.profiler. Configured by PROFILER_*."""

import sys

import jax
import jax.numpy as jnp

import collector


def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


@jax.jit
def train_step(w, x, y):
    return w - 0.1 * jax.grad(loss)(w, x, y)


x = jax.random.normal(jax.random.PRNGKey(0), (512, 128))
y = jnp.ones((512, 16))
w = jnp.zeros((128, 16))
collector.start_profiling()
for i in range(int(sys.argv[1])):
    with collector.annotate(f"step_{i}"), collector.annotate("Update"):
        w = train_step(w, x, y).block_until_ready()
collector.stop_profiling()
assert "torch" not in sys.modules
