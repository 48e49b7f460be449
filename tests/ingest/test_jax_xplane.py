"""A JAX job profiled for real on CPU (``jax.profiler.trace`` around a small training loop whose
steps are ``StepTraceAnnotation``s): its ``.xplane.pb`` is uploaded as a trace and read like a
Kineto trace. Every figure is checked against the XPlane file as jaxlib's own reader
(``jax.profiler.ProfileData``) reads it."""

import statistics
from collections import Counter
from pathlib import Path

import pytest

from profiler_app.core.models import TrainingJob
from profiler_app.traces import TimelineReader, ingest_trace
from profiler_app.traces.errors import TraceFormatError
from tests.ingest.helpers import upload_parsed
from tests.jax_training import profile_jax_training
from tracefmt.kinds import EventKind

pytestmark = pytest.mark.slow
jax = pytest.importorskip("jax")  # a dev dependency (make install-dev)
jax_profiler = pytest.importorskip("jax.profiler")

STEPS = 6


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """The .xplane.pb of a real JAX CPU run, in TensorBoard's plugins/profile/<run>/ layout."""
    return profile_jax_training(tmp_path_factory.mktemp("jax-profile"), STEPS)


@pytest.fixture(scope="module")
def raw(profile):
    """Steps and XLA ops as jaxlib reads the file: steps are the events with a step_num stat,
    XLA ops those with an hlo_op stat (on a CPU-only run, on the host plane's threads)."""
    data = jax_profiler.ProfileData.from_file(str(profile))
    [host] = [plane for plane in data.planes if plane.name == "/host:CPU"]
    events = [event for line in host.lines for event in line.events]
    steps = sorted(
        (int(dict(e.stats)["step_num"]), int(e.start_ns), int(e.duration_ns))
        for e in events
        if "step_num" in dict(e.stats)
    )
    ops = [e for e in events if "hlo_op" in dict(e.stats)]

    def step_of(start_ns: float) -> int:
        return next((n for n, s, d in steps if s <= start_ns < s + d), -1)

    return {
        "steps": steps,
        "op_count": Counter(e.name for e in ops),
        "op_total_ns": sum(int(e.duration_ns) for e in ops),
        "ops_per_step": Counter(step_of(e.start_ns) for e in ops),
        "devices": [plane.name for plane in data.planes if plane.name.startswith("/device:")],
    }


def test_it_reads_steps_and_xla_ops_of_a_jax_cpu_profile(profile, raw, tmp_path):
    result = ingest_trace(profile, "kineto", tmp_path / "store")
    assert result.metadata["format"] == "xplane"
    assert result.metadata["framework"] == "JAX"
    assert result.metadata["read_warning"] == ""

    steps = result.aggregates.steps
    assert steps["step"].tolist() == list(range(STEPS))
    assert steps["dur_ns"].tolist() == [dur for _, _, dur in raw["steps"]]
    first = raw["steps"][0][1]
    assert (steps["start_ns"] - steps["start_ns"].iloc[0]).tolist() == [
        start - first for _, start, _ in raw["steps"]
    ]

    reader = TimelineReader(tmp_path / "store")
    table = reader.read_all(["kind", "name", "dur_ns", "step", "depth", "is_step"]).to_pydict()
    names = [reader.strings[i] for i in table["name"]]
    # Each step is the root of its work on the thread (the Python tracer's events, which
    # overlap the runtime's, lie on a track of their own).
    step_rows = [i for i, is_step in enumerate(table["is_step"]) if is_step]
    assert [names[i] for i in step_rows] == [f"ProfilerStep#{n}" for n in range(STEPS)]
    assert [table["depth"][i] for i in step_rows] == [0] * STEPS
    calls = [i for i, name in enumerate(names) if name == "PjitFunction(train_step)"]
    assert len(calls) == 2 * STEPS  # jit's outer and inner call
    assert all(table["depth"][i] >= 1 for i in calls)
    assert Counter(table["step"][i] for i in calls) == dict.fromkeys(range(STEPS), 2)
    assert EventKind.PYTHON_FUNCTION in table["kind"]
    xla = [i for i, name in enumerate(names) if name in raw["op_count"]]
    assert raw["devices"] == []  # a CPU-only run: XLA ran on the host's threads
    assert {table["kind"][i] for i in xla} == {EventKind.CPU_OP}
    assert Counter(names[i] for i in xla) == raw["op_count"]
    # Each step ran the one compiled step function: the same XLA ops, however XLA fused them.
    assert sorted(raw["ops_per_step"]) == list(range(STEPS))
    assert len(set(raw["ops_per_step"].values())) == 1
    assert sum(table["dur_ns"][i] for i in xla) == raw["op_total_ns"]
    assert Counter(table["step"][i] for i in xla) == raw["ops_per_step"]


def test_it_refuses_a_corrupt_xplane_file_with_a_clear_message(profile, tmp_path):
    truncated = tmp_path / "host.xplane.pb"
    truncated.write_bytes(profile.read_bytes()[: profile.stat().st_size // 2])
    with pytest.raises(TraceFormatError, match=r"not a readable XPlane profile .*truncated"):
        ingest_trace(truncated, "kineto", tmp_path / "store")
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"\x0a\x00")
    with pytest.raises(TraceFormatError, match="no plane of it holds a timed event"):
        ingest_trace(empty, "kineto", tmp_path / "store")
    assert not (tmp_path / "store").exists()


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_step_figures_of_an_uploaded_jax_profile(
    api, user, celery_worker_process, profile, raw
):
    job = TrainingJob.objects.create(name="jax-cpu", owner=user, status="completed")
    upload_parsed(api, job, profile)
    # The job was made without a framework: the profile names it.
    described = api.get(f"/api/jobs/{job.id}/").json()
    assert (described["framework"], described["framework_version"]) == ("JAX", jax.__version__)
    summary = api.get(f"/api/jobs/{job.id}/summary/").json()
    assert summary["event_counts"]["user_annotation"] == STEPS
    assert summary["read_warnings"] == []
    durations = [dur for _, _, dur in raw["steps"]]
    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert dashboard["steps"]["names"] == [f"ProfilerStep#{n}" for n in range(STEPS)]
    assert dashboard["steps"]["durations_ns"] == durations
    assert dashboard["step_time"]["median_ns"] == int(statistics.median(durations))
    assert dashboard["window"]["steps_total"] == STEPS

    # The complete-steps window leaves the last step out, as a torch.profiler trace's.
    api.patch(f"/api/jobs/{job.id}/", {"window": "complete_steps"}, format="json")
    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert dashboard["window"]["steps_kept"] == STEPS - 1
    assert dashboard["steps"]["durations_ns"] == durations[:-1]
    assert dashboard["step_time"]["median_ns"] == int(statistics.median(durations[:-1]))
