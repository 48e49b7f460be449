"""The collector's chunks from a real CUDA training loop (H100, see tests/data/README.md) go
through the API and a real worker into the aggregates the dashboard reads."""

from collections import Counter

import numpy as np
import pytest

from profiler_app.core.models import PartState, TrainingJob
from profiler_app.profiles.models import KernelStat, MemoryOperation, Step, UtilizationPoint
from tests.ingest.helpers import upload, wait_parsed
from tests.traces.expected import DATA
from tracefmt.chunk import read_chunk
from tracefmt.kinds import EventKind, MemcpyKind, SampleKind

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CHUNKS = sorted((DATA / "h100_collector").glob("*.pcol"))


def raw_totals():
    """Straight from the chunks' numpy columns, without the parser."""
    kernels: Counter = Counter()
    kernel_ns: Counter = Counter()
    htod_bytes = n_events = n_steps = 0
    util_samples = []
    for path in CHUNKS:
        chunk = read_chunk(path)
        ev, s = chunk.events, chunk.samples
        n_events += chunk.n_events
        # Kernel statistics cover every GPU operation (memcpy and memset too), as HTA's do.
        k = np.isin(ev["ev_kind"], [EventKind.KERNEL, EventKind.GPU_MEMCPY, EventKind.GPU_MEMSET])
        for name, dur in zip(ev["ev_name"][k], ev["ev_dur_ns"][k], strict=True):
            kernels[chunk.strings[name]] += 1
            kernel_ns[chunk.strings[name]] += int(dur)
        htod = (ev["ev_kind"] == EventKind.GPU_MEMCPY) & (ev["ev_memcpy_kind"] == MemcpyKind.HTOD)
        htod_bytes += int(ev["ev_bytes"][htod].sum())
        n_steps += int((ev["ev_kind"] == EventKind.STEP).sum())
        util_samples.extend(s["s_value"][s["s_kind"] == SampleKind.GPU_UTIL_PCT].tolist())
    return kernels, kernel_ns, htod_bytes, n_events, n_steps, util_samples


@pytest.fixture
def gpu_job(api, user, celery_worker_process):
    job = TrainingJob.objects.create(name="h100-cnn", owner=user)
    ids = [upload(api, job, path, kind="collector")["id"] for path in CHUNKS]
    parts = wait_parsed(*ids)
    assert [p.state for p in parts] == [PartState.DONE] * len(CHUNKS), [p.error for p in parts]
    return job


def test_real_gpu_chunks_become_the_dashboards_aggregates(api, gpu_job):
    kernels, kernel_ns, htod_bytes, n_events, n_steps, util_samples = raw_totals()
    assert len(CHUNKS) == 13 and sum(kernels.values()) == 3216 + 144 + 96 and n_steps == 300

    rows = KernelStat.objects.filter(job=gpu_job)
    got_count: Counter = Counter()
    got_ns: Counter = Counter()
    for row in rows:
        got_count[row.name] += row.count
        got_ns[row.name] += row.total_ns
    assert got_count == kernels
    assert got_ns == kernel_ns
    memcpy = MemoryOperation.objects.filter(job=gpu_job, operation__startswith="Memcpy HtoD")
    assert sum(m.bytes for m in memcpy) == htod_bytes == 37_773_312
    assert Step.objects.filter(job=gpu_job).count() == n_steps

    summary = api.get(f"/api/jobs/{gpu_job.id}/summary/").json()
    assert summary["n_events"] == n_events
    assert summary["event_counts"]["kernel"] == 3216

    # GPU utilisation comes from NVML's own samples, not from kernel busy time.
    board = api.get(f"/api/jobs/{gpu_job.id}/dashboard/").json()
    assert board["gpu_utilization"]["source"] == "nvml"
    points = UtilizationPoint.objects.filter(job=gpu_job, metric="gpu_util_pct", source="nvml")
    assert sorted(points.values_list("value", flat=True)) == pytest.approx(sorted(util_samples))
    assert np.isfinite(util_samples).all() and len(util_samples) == 9
