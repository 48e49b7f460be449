"""A small TensorFlow training loop (a tf.function step) profiled by the collector: the
script imports tensorflow (Keras imports jax too where it is installed) and not torch, so the
collector captures its windows with tf.profiler. Configured by PROFILER_*."""

import sys

import tensorflow as tf

import collector

w = tf.Variable(tf.zeros((128, 16)))
x = tf.random.normal((512, 128))
y = tf.ones((512, 16))
optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.tanh(x @ w) - y) ** 2)
    optimizer.apply_gradients([(tape.gradient(loss, w), w)])
    return loss


train_step()  # traced before profiling
collector.start_profiling()
for i in range(int(sys.argv[1])):
    with collector.annotate(f"step_{i}"), collector.annotate("Update"):
        train_step().numpy()
collector.stop_profiling()
assert "torch" not in sys.modules
