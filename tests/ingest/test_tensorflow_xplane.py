"""A TensorFlow job profiled for real on CPU (``tf.profiler.experimental`` around a small
training loop whose steps are ``Trace("train", step_num=i)``, as Keras marks profiled batches):
its ``.xplane.pb`` read like a Kineto trace, every figure checked against the file as jaxlib's
own reader (``jax.profiler.ProfileData``) reads it. ``make install-dev`` installs TensorFlow's
CPU build (the ``tensorflow`` extra)."""

import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from profiler_app.traces import TimelineReader, ingest_trace

pytestmark = pytest.mark.slow
jax_profiler = pytest.importorskip("jax.profiler")  # a dev dependency (make install-dev)

STEPS = 6
TRAINING = textwrap.dedent(
    """
    import sys
    import tensorflow as tf

    x = tf.random.normal((512, 128))
    y = tf.ones((512, 16))
    w = tf.Variable(tf.zeros((128, 16)))
    opt = tf.keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.tanh(x @ w) - y) ** 2)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    train_step(x, y)  # traced before the profile
    tf.profiler.experimental.start(sys.argv[1])
    for i in range(int(sys.argv[2])):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            train_step(x, y)
    tf.profiler.experimental.stop()
    """
)


def test_it_reads_steps_and_ops_of_a_tensorflow_cpu_profile(tmp_path):
    subprocess.run([sys.executable, "-c", TRAINING, str(tmp_path), str(STEPS)], check=True)
    [profile] = tmp_path.glob("plugins/profile/*/*.xplane.pb")

    data = jax_profiler.ProfileData.from_file(str(profile))
    [host] = [plane for plane in data.planes if plane.name == "/host:CPU"]
    events = [event for line in host.lines for event in line.events]
    steps = sorted(
        (int(dict(e.stats)["step_num"]), int(e.duration_ns))
        for e in events
        if "step_num" in dict(e.stats)
    )

    def stored_name(e) -> str:
        stats = dict(e.stats)
        return f"ProfilerStep#{stats['step_num']}" if "step_num" in stats else e.name

    want_count = Counter(stored_name(e) for e in events)
    want_total: Counter = Counter()
    for e in events:
        want_total[stored_name(e)] += int(e.duration_ns)

    result = ingest_trace(profile, "kineto", tmp_path / "store")
    assert result.metadata["framework"] == "TensorFlow"
    assert result.aggregates.steps["step"].tolist() == list(range(STEPS))
    assert result.aggregates.steps["dur_ns"].tolist() == [dur for _, dur in steps]

    reader = TimelineReader(tmp_path / "store")
    table = reader.read_all(["name", "dur_ns"]).to_pydict()
    names = [reader.strings[i] for i in table["name"]]
    total: Counter = Counter()
    for name, dur in zip(names, table["dur_ns"], strict=True):
        total[name] += dur
    assert Counter(names) == want_count
    assert total == want_total
    # TensorFlow's ops ("name:Type") ran on its compute threads, each once a step at least; the
    # kernel (the type) is TensorFlow's choice on this CPU (_MklMatMul with oneDNN, else MatMul).
    matmuls = {name: n for name, n in want_count.items() if name.startswith("matmul:")}
    assert sum(matmuls.values()) >= STEPS, sorted(want_count)
