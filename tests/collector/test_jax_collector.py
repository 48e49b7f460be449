"""A JAX job profiled through the collector on CPU: its steps marked with ``annotate``, its
windows captured by jax.profiler on the budget's schedule and uploaded in its chunks, read by
the server into its parts. Figures are checked against each window's XPlane profile as
jaxlib's own reader (``jax.profiler.ProfileData``) decodes it, and against the chunks' rows."""

from collections import Counter

import pytest

from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind

from .helpers import run_job_script, settled_parts

pytestmark = pytest.mark.slow
jax = pytest.importorskip("jax")  # a dev dependency (make install-dev)
jax_profiler = pytest.importorskip("jax.profiler")

STEPS = 12
# Step 0 skipped, then windows of 1 warm-up and 3 recorded steps, 2 steps apart, twice:
# steps 2-4 and 8-10.
SCHEDULE = {
    "PROFILER_KINETO_SKIP_FIRST_STEPS": "1",
    "PROFILER_KINETO_WARMUP_STEPS": "1",
    "PROFILER_KINETO_ACTIVE_STEPS": "3",
    "PROFILER_KINETO_WAIT_STEPS": "2",
    "PROFILER_KINETO_REPEAT": "2",
}
RECORDED = [[2, 3, 4], [8, 9, 10]]


def host_events(xspace: bytes) -> tuple[int, list]:
    """The profile's start (unix ns; its events' times count from it) and its host events."""
    data = jax_profiler.ProfileData.from_serialized_xspace(xspace)
    [host] = [plane for plane in data.planes if plane.name == "/host:CPU"]
    assert [p.name for p in data.planes if p.name.startswith("/device:")] == []  # CPU only
    [start] = [
        value
        for plane in data.planes
        for name, value in plane.stats
        if name == "profile_start_time"
    ]
    return start, [event for line in host.lines for event in line.events]


@pytest.mark.django_db(transaction=True)
def test_a_jax_job_through_the_collector_gets_its_steps_windows_and_xla_ops(server, api, tmp_path):
    from profiler_app.core.models import JobStatus, PartState, TrainingJob
    from profiler_app.profiles.models import PartSummary
    from profiler_app.traces import TimelineReader
    from tests.conftest import wait_for

    run_job_script(
        server,
        tmp_path / "spool",
        "jax-collector",
        "jax_job.py",
        STEPS,
        JAX_PLATFORMS="cpu",
        **SCHEDULE,
    )
    job = wait_for(
        lambda: TrainingJob.objects.filter(
            name="jax-collector", status=JobStatus.COMPLETED
        ).first(),
        timeout=120,
    )
    assert (job.framework, job.framework_version) == ("JAX", jax.__version__)

    parts = settled_parts(job)
    assert [p.state for p in parts] == [PartState.DONE] * len(parts), [p.error for p in parts]

    chunks = {}
    for part in parts:
        with part.file.open("rb") as fh:
            chunks[part.pk] = read_chunk(fh.read())
    windows = [w for c in sorted(chunks.values(), key=lambda c: c.meta["seq"]) for w in c.kineto]
    assert [w.file_suffix for w in windows] == [".xplane.pb"] * len(RECORDED)

    # The collector's steps, as its chunks hold them: one a step, named as the script marked it.
    rows = []
    for chunk in chunks.values():
        names = chunk.event_names()
        ev = chunk.events
        for i in (ev["ev_kind"] == EventKind.STEP).nonzero()[0]:
            rows.append((names[i], int(ev["ev_start_ns"][i]), int(ev["ev_dur_ns"][i])))
    rows.sort(key=lambda r: r[1])
    assert [name for name, _, _ in rows] == [f"step_{n}" for n in range(STEPS)]

    # Each window's XPlane profile: its step markers (StepTraceAnnotation, with step_num) are
    # the steps the schedule recorded, each on the collector's own step of that number;
    # its XLA ops (events with an hlo_op stat) are the job's operators on the host.
    xla_ops: Counter[str] = Counter()
    for window, recorded in zip(windows, RECORDED, strict=True):
        profile_start, events = host_events(window.data)
        markers = {int(dict(e.stats)["step_num"]): e for e in events if "step_num" in dict(e.stats)}
        assert sorted(markers) == recorded
        for n, marker in markers.items():
            assert marker.name == f"step_{n}"
            _, start, dur = rows[n]
            # The marker encloses the collector's step by the few µs its own timing takes (the
            # profiler's clock is not time.time_ns()'s): its middle lies in that step.
            middle = profile_start + int(marker.start_ns + marker.duration_ns / 2)
            assert start < middle < start + dur
        xla_ops.update(e.name for e in events if "hlo_op" in dict(e.stats))
    assert xla_ops  # the jitted step ran XLA ops in every recorded step

    # The server's parts: the job's framework from the windows, the steps the collector marked,
    # the recorded ones captured, and every XLA op of the windows once, in its step.
    dashboard = api.get(f"/api/jobs/{job.id}/dashboard/").json()
    assert dashboard["steps"]["names"] == [f"step_{n}" for n in range(STEPS)]
    assert dashboard["steps"]["durations_ns"] == [dur for _, _, dur in rows]
    stored: Counter[str] = Counter()
    stored_steps: Counter[int] = Counter()
    copies = 0
    for summary in PartSummary.objects.filter(job=job):
        if not summary.metadata.get("captured_windows_ns"):
            continue
        assert summary.metadata["framework"] == "JAX"
        reader = TimelineReader(summary.fetch_store())
        table = reader.read_all(["kind", "name", "step", "track"]).to_pydict()
        tracks: dict[str, set[int]] = {"Update": set(), "PjitFunction(train_step)": set()}
        rows_of = zip(table["kind"], table["name"], table["step"], table["track"], strict=True)
        for kind, name_id, step, track in rows_of:
            name = reader.strings[name_id]
            if name in tracks:
                tracks[name].add(track)
            if name in xla_ops:
                assert kind == EventKind.CPU_OP
                stored[name] += 1
                stored_steps[step] += 1
            # The collector's annotations are kept once: its own rows, not the profile's copies.
            copies += name == "Update" and kind != EventKind.USER_ANNOTATION
        # The thread that ran the steps is one track: the collector's rows and the profile's
        # own events of it (jit's calls), though the profile numbers its threads otherwise.
        assert len(tracks["Update"]) == 1
        assert tracks["PjitFunction(train_step)"] == tracks["Update"]
    assert stored == xla_ops
    assert copies == 0
    per_step = sum(xla_ops.values()) // 6
    assert stored_steps == {n: per_step for window in RECORDED for n in window}
