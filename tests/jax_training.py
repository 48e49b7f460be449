"""A real JAX training loop profiled on CPU (``jax.profiler.trace``, one
``StepTraceAnnotation`` a step), run in its own process as a user's script runs."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

TRAINING = textwrap.dedent(
    """
    import sys
    import jax
    from tests.jax_model import starting_point, train_step

    w, x, y = starting_point()
    w = train_step(w, x, y).block_until_ready()  # compiled before the profile
    with jax.profiler.trace(sys.argv[1]):
        for i in range(int(sys.argv[2])):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                w = train_step(w, x, y).block_until_ready()
    """
)


def profile_jax_training(out: Path, steps: int) -> Path:
    """The .xplane.pb of the run, in TensorBoard's plugins/profile/<run>/ layout under ``out``."""
    subprocess.run(
        [sys.executable, "-c", TRAINING, str(out), str(steps)],
        check=True,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    [path] = out.glob("plugins/profile/*/*.xplane.pb")
    return path


def xla_op_names(profile: Path) -> set[str]:
    """The XLA ops of the profile as jaxlib's own reader reads it (events with an hlo_op stat):
    which ops a step has depends on how XLA fused them for this machine's CPU."""
    from jax.profiler import ProfileData

    data = ProfileData.from_file(str(profile))
    return {
        event.name
        for plane in data.planes
        for line in plane.lines
        for event in line.events
        if "hlo_op" in dict(event.stats)
    }
