"""Which framework's profiler captures a job: the configured one, else JAX or TensorFlow when
the script imported it and not torch, else PyTorch."""

import sys
import types

import pytest

import collector
from collector.xla_capture import job_framework


@pytest.fixture
def modules(monkeypatch):
    """Pretend the script imported exactly these of torch, jax and tensorflow."""
    for name in ("torch", "jax", "tensorflow"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    def imported(*names):
        for name in names:
            monkeypatch.setitem(sys.modules, name, types.ModuleType(name))

    monkeypatch.delenv("PROFILER_FRAMEWORK", raising=False)
    return imported


@pytest.mark.parametrize(
    ("imported", "framework"),
    [
        ((), "pytorch"),
        (("torch",), "pytorch"),
        (("jax",), "jax"),
        (("tensorflow",), "tensorflow"),
        (("jax", "torch"), "pytorch"),  # torch in use: its windows, unless told otherwise
    ],
)
def test_the_framework_follows_what_the_script_imported(modules, imported, framework):
    modules(*imported)
    assert job_framework(collector.Config()) == framework


def test_with_jax_and_tensorflow_imported_it_is_the_one_the_script_imported(modules, monkeypatch):
    modules("jax", "tensorflow")  # Keras imports jax where it is installed
    assert job_framework(collector.Config()) == "jax"  # neither named by the script
    script = sys.modules["__main__"]
    monkeypatch.setattr(script, "tf", sys.modules["tensorflow"], raising=False)
    assert job_framework(collector.Config()) == "tensorflow"
    monkeypatch.setattr(script, "jnp", types.ModuleType("jax.numpy"), raising=False)
    assert job_framework(collector.Config()) == "jax"  # a JAX job reading with tf.data


def test_a_configured_framework_wins(modules, monkeypatch):
    modules("jax", "torch")
    assert job_framework(collector.Config(framework="JAX")) == "jax"
    monkeypatch.setenv("PROFILER_FRAMEWORK", "tensorflow")
    assert job_framework(collector.Config()) == "tensorflow"
    with pytest.raises(ValueError, match="framework must be one of pytorch, jax, tensorflow"):
        collector.Config(framework="mxnet")
