"""The Dashboard's headline on a real sampled job and a real torch.profiler trace: every part of
the step breakdown, the step time and the NVML mean are computed here from the raw events and
samples (chunks' arrays, the trace's JSON) by a plain sweep over event boundaries, not by the
code under test.

``h200_resnet50_collector_2026-11-26.tar.gz`` (tests/data/README.md): a ResNet-50 loop on an
H200, 160 annotated steps of which Kineto captured 16; ``tb/`` holds a torch.profiler trace of 4
steps of the same loop.
"""

from __future__ import annotations

import gzip
import importlib
import json
import re
import statistics
from pathlib import Path

import pytest
from django.apps import apps as django_apps

from profiler_app.dashboard.headline import headline
from profiler_app.profiles.models import StepSplit
from profiler_app.traces.window import IN_COMPLETE_STEPS, IN_WHOLE_TRACE
from tests import h200
from tests.insights.converted import read_converted
from tracefmt.chunk import Chunk, read_chunk
from tracefmt.kinds import EventKind, SampleKind

pytestmark = pytest.mark.django_db
# The migration that stored the split of parts parsed before the ingest did.
split_parsed_parts = importlib.import_module(
    "profiler_app.profiles.migrations.0002_step_split"
).split_parsed_parts

ORDER = ("kernels", "copies", "sets", "sync_waits", "data_loading", "host_only", "idle")
LOADER = re.compile(r"dataloader|data_load|dataset|enumerate\(", re.IGNORECASE)
# Trace categories and chunk kinds, as the trace names them.
KIND_CATEGORY = {
    EventKind.KERNEL: "kernel",
    EventKind.GPU_MEMCPY: "gpu_memcpy",
    EventKind.GPU_MEMSET: "gpu_memset",
    EventKind.CUDA_SYNC: "cuda_sync",
    EventKind.CUDA_RUNTIME: "cuda_runtime",
    EventKind.CUDA_DRIVER: "cuda_driver",
    EventKind.CPU_OP: "cpu_op",
    EventKind.USER_ANNOTATION: "user_annotation",
    EventKind.PYTHON_FUNCTION: "python_function",
}


def part_of(category: str, name: str) -> str | None:
    """Which breakdown part an event makes, from its trace category and name."""
    simple = {"kernel": "kernels", "gpu_memcpy": "copies", "gpu_memset": "sets"}
    if category in simple:
        return simple[category]
    if category == "cuda_sync" or (category == "cuda_runtime" and "ynchronize" in name):
        return "sync_waits"
    loader_categories = ("cpu_op", "user_annotation", "python_function")
    if category in loader_categories and LOADER.search(name):
        return "data_loading"
    if category in ("cpu_op", "cuda_runtime", "cuda_driver"):
        return "host_only"
    return None


def sweep(steps: list[tuple[int, int]], events: list[tuple[str, int, int]]) -> dict[str, int]:
    """Each nanosecond of ``steps`` in the first part of ORDER with an event open then."""
    boundaries: dict[int, list[tuple[str, int]]] = {}
    for part, start, end in [("step", a, b) for a, b in steps] + events:
        if end > start:
            boundaries.setdefault(start, []).append((part, 1))
            boundaries.setdefault(end, []).append((part, -1))
    open_count = dict.fromkeys([*ORDER, "step"], 0)
    found = dict.fromkeys(ORDER, 0)
    previous = None
    for time in sorted(boundaries):
        if previous is not None and open_count["step"] > 0:
            first = next((p for p in ORDER[:-1] if open_count[p] > 0), "idle")
            found[first] += time - previous
        for part, change in boundaries[time]:
            open_count[part] += change
        previous = time
    return found


def check(found: dict, expected: dict[str, int], steps: list[tuple[int, int]]) -> None:
    step_total = sum(b - a for a, b in steps)
    assert found["steps"] == len(steps)
    assert found["step_total_ns"] == step_total
    assert sum(expected.values()) == step_total
    assert {row["part"]: row["total_ns"] for row in found["breakdown"]} == expected
    assert sum(row["total_ns"] for row in found["breakdown"]) == step_total
    for row in found["breakdown"]:
        assert row["per_step_ns"] == expected[row["part"]] // len(steps)
        assert row["share_pct"] == round(100 * expected[row["part"]] / step_total, 2)
    assert found["kernel_busy_pct"] == round(100 * expected["kernels"] / step_total, 2)
    assert found["step_time"]["median_ns"] == int(statistics.median(b - a for a, b in steps))
    assert found["step_time"]["steps"] == len(steps)


def chunk_parts(chunks: list[Chunk]) -> list[tuple[str, int, int]]:
    """Each chunk event that makes a breakdown part: (part, start_ns, end_ns)."""
    events = []
    for chunk in chunks:
        ev, names = chunk.events, chunk.event_names()
        for i in range(chunk.n_events):
            category = KIND_CATEGORY.get(EventKind(int(ev["ev_kind"][i])))
            part = category and part_of(category, str(names[i]))
            if part:
                start = int(ev["ev_start_ns"][i])
                events.append((part, start, start + int(ev["ev_dur_ns"][i])))
    return events


def nvml_utilisation(chunks: list[Chunk]) -> list[float]:
    """Every NVML GPU utilisation sample (%) of the chunks."""
    utilisation = []
    for chunk in chunks:
        gpu = chunk.samples["s_kind"] == SampleKind.GPU_UTIL_PCT
        utilisation += [float(v) for v in chunk.samples["s_value"][gpu]]
    return utilisation


def test_it_breaks_the_captured_steps_of_a_sampled_job_down(h200_unpacked, h200_collector_job):
    chunks = [read_chunk(p) for p in h200.spool_chunks(h200_unpacked)]
    converted = read_converted(h200.spool_chunks(h200_unpacked))
    steps = sorted(converted.steps[s] for s in converted.captured)
    events, utilisation = chunk_parts(chunks), nvml_utilisation(chunks)
    assert len(steps) == 16

    found = headline(h200_collector_job, "whole_trace")

    check(found, sweep(steps, events), steps)
    assert found["over"].startswith("captured steps")
    assert found["nvml_mean_pct"] == round(statistics.fmean(utilisation), 2)
    assert headline(h200_collector_job, "complete_steps")["breakdown"] == found["breakdown"]


def trace_events(folder: Path) -> tuple[list[tuple[int, int]], list[tuple[str, int, int]]]:
    [path] = (folder / "tb").glob("*.json.gz")
    trace = json.loads(gzip.decompress(path.read_bytes()))
    steps, events = [], []
    for event in trace["traceEvents"]:
        if event.get("ph") != "X":
            continue
        start = round(float(event["ts"]) * 1000)
        end = start + round(float(event.get("dur", 0)) * 1000)
        name, category = event.get("name", ""), event.get("cat", "")
        if category == "user_annotation" and name.startswith("ProfilerStep#"):
            steps.append((start, end))
        elif part := part_of(category, name):
            events.append((part, start, end))
    return sorted(steps), events


@pytest.mark.parametrize("window", ["whole_trace", "complete_steps"])
def test_it_breaks_the_steps_of_a_trace_down_in_either_window(
    h200_unpacked, h200_trace_job, window
):
    steps, events = trace_events(h200_unpacked)
    assert len(steps) == 4
    kept = steps if window == "whole_trace" else steps[:-1]  # the last step is cut short

    found = headline(h200_trace_job, window)

    check(found, sweep(kept, events), kept)
    assert found["nvml_mean_pct"] is None


def test_it_reads_the_split_the_ingest_stored_per_window(h200_trace_job):
    rows = StepSplit.objects.filter(job=h200_trace_job)
    assert sorted(set(rows.values_list("windows", flat=True))) == [
        IN_WHOLE_TRACE,
        IN_COMPLETE_STEPS,
    ]
    assert rows.count() == 2 * len(ORDER)  # one trace file, each part in each window
    found = headline(h200_trace_job, "complete_steps")
    rows.delete()

    assert headline(h200_trace_job, "complete_steps")["breakdown"][0]["total_ns"] == 0
    split_parsed_parts(django_apps, None)  # the migration's: parts parsed before the split

    assert headline(h200_trace_job, "complete_steps") == found
