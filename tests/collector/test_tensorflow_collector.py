"""A TensorFlow job profiled through the collector on CPU: its windows captured by tf.profiler
on the budget's schedule and carried in its chunks, each chunk read as the server reads it.
The windows' step markers are checked against each XPlane profile as jaxlib's reader decodes
it; the steps against the chunks' own rows."""

import importlib.util
import subprocess

import pytest

from profiler_app.traces import TimelineReader, ingest_trace
from tracefmt.kinds import EventKind

from .helpers import JOBS, job_env, python, spooled_chunks, step_names
from .test_jax_collector import RECORDED, SCHEDULE, STEPS

pytestmark = pytest.mark.slow
jax_profiler = pytest.importorskip("jax.profiler")  # the XPlane decoder the test reads with
if importlib.util.find_spec("tensorflow") is None:  # make install-dev installs it
    pytest.skip("tensorflow is not installed", allow_module_level=True)


def test_a_tensorflow_job_through_the_collector_gets_its_steps_and_windows(tmp_path):
    spool = tmp_path / "spool"
    env = job_env(spool, TF_CPP_MIN_LOG_LEVEL="2", PROFILER_PERF_COUNTERS="0", **SCHEDULE)
    done = subprocess.run(
        [python(), str(JOBS / "tensorflow_job.py"), str(STEPS)],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    chunks = spooled_chunks(spool)
    assert step_names(chunks) == [f"step_{n}" for n in range(STEPS)]
    windows = [w for chunk in chunks for w in chunk.kineto]
    assert [w.file_suffix for w in windows] == [".xplane.pb"] * len(RECORDED)
    for window, recorded in zip(windows, RECORDED, strict=True):
        data = jax_profiler.ProfileData.from_serialized_xspace(window.data)
        [host] = [plane for plane in data.planes if plane.name == "/host:CPU"]
        markers = sorted(
            (int(dict(e.stats)["step_num"]), e.name)
            for line in host.lines
            for e in line.events
            if "step_num" in dict(e.stats)
        )
        assert markers == [(n, f"step_{n}") for n in recorded]

    captured, copies = [], 0
    for i, path in enumerate(sorted(spool.rglob("*.pcol"))):
        result = ingest_trace(path, "collector", tmp_path / f"store-{i}")
        steps = result.aggregates.steps
        captured += steps["name"][steps["captured"]].tolist()
        if result.metadata["captured_windows_ns"]:
            assert result.metadata["framework"] == "TensorFlow"
            assert result.metadata["read_warning"] == ""
        reader = TimelineReader(tmp_path / f"store-{i}")
        table = reader.read_all(["kind", "name"]).to_pydict()
        update = reader.strings.index("Update") if "Update" in reader.strings else -1
        copies += sum(
            1
            for kind, name in zip(table["kind"], table["name"], strict=True)
            if name == update and kind != EventKind.USER_ANNOTATION
        )
    assert captured == [f"step_{n}" for window in RECORDED for n in window]
    assert copies == 0  # the collector's annotations once: its rows, not the profile's copies
