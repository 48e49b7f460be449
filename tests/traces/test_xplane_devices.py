"""The device planes of an XPlane profile (a GPU run's, which the CPU machines of the test suite
cannot record): an XSpace written with the published schema, as TensorFlow's and JAX's profilers
lay a GPU out, read through the ingest."""

from collections import Counter

from profiler_app.traces import TimelineReader, ingest_trace
from profiler_app.traces.xplane_schema import XSpace
from tracefmt.kinds import EventKind

START_NS = 1_795_870_374_607_117_137  # the profile's start; lines are relative to it
US = 1_000_000  # picoseconds


def gpu_profile() -> bytes:
    space = XSpace(hostnames=["node-1"])
    env = space.planes.add(id=9, name="Task Environment")
    env.stat_metadata[1].name = "profile_start_time"
    env.stats.add(metadata_id=1, uint64_value=START_NS)

    host = space.planes.add(id=0, name="/host:CPU")
    host.event_metadata[1].name = "train"
    host.stat_metadata[1].name = "step_num"
    python = host.lines.add(id=7, name="python", timestamp_ns=1000)
    for step in range(2):
        event = python.events.add(metadata_id=1, offset_ps=step * 100 * US, duration_ps=90 * US)
        event.stats.add(metadata_id=1, int64_value=step)

    gpu = space.planes.add(id=1, name="/device:GPU:3")
    for key, name in {1: "fusion.1", 2: "MemcpyH2D", 3: "jit_train_step"}.items():
        gpu.event_metadata[key].name = name
    stream = gpu.lines.add(id=12, name="Stream #12(Compute)", timestamp_ns=1000)
    stream.events.add(metadata_id=2, offset_ps=5 * US, duration_ps=3 * US)
    stream.events.add(metadata_id=1, offset_ps=10 * US, duration_ps=40 * US)
    stream.events.add(metadata_id=1, offset_ps=110 * US, duration_ps=40 * US)
    # xprof's derived lines repeat the streams' work: not read where streams exist.
    derived = gpu.lines.add(id=-2, name="XLA Modules", timestamp_ns=1000)
    derived.events.add(metadata_id=3, offset_ps=10 * US, duration_ps=40 * US)
    return space.SerializeToString()


def test_it_reads_a_gpu_planes_streams_as_kernels_and_copies(tmp_path):
    profile = tmp_path / "node-1.xplane.pb"
    profile.write_bytes(gpu_profile())
    result = ingest_trace(profile, "kineto", tmp_path / "store")
    assert result.aggregates.event_counts == {
        "user_annotation": 2,
        "kernel": 2,
        "gpu_memcpy": 1,
    }
    reader = TimelineReader(tmp_path / "store")
    table = reader.read_all(["kind", "name", "start_ns", "dur_ns", "device", "stream", "step"])
    rows = table.to_pylist()
    kernels = [r for r in rows if r["kind"] == EventKind.KERNEL]
    assert {(r["device"], r["stream"]) for r in kernels} == {(3, 12)}
    assert [r["start_ns"] - START_NS for r in kernels] == [1000 + 10_000, 1000 + 110_000]
    assert [r["dur_ns"] for r in kernels] == [40_000, 40_000]
    assert [r["step"] for r in kernels] == [0, 1]  # by when they ran: no launch links them
    assert Counter(reader.strings[r["name"]] for r in rows) == {
        "ProfilerStep#0": 1,
        "ProfilerStep#1": 1,
        "fusion.1": 2,
        "MemcpyH2D": 1,
    }
