"""The small JAX model (a jitted step of a one-layer regression) that every JAX training script
of the tests runs: the collector's job and the jax.profiler one train the same model."""

import jax
import jax.numpy as jnp


def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


@jax.jit
def train_step(w, x, y):
    return w - 0.1 * jax.grad(loss)(w, x, y)


def starting_point():
    """The weights, inputs and targets a run starts from (the same every run)."""
    x = jax.random.normal(jax.random.PRNGKey(0), (512, 128))
    y = jnp.ones((512, 16))
    w = jnp.zeros((128, 16))
    return w, x, y
