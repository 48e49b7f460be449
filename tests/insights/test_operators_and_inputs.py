"""The operator table and the rules' inputs from real traces, against the raw JSON."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from profiler_app.analysis import RankTrace, analyze
from profiler_app.analysis.frames import JobData
from profiler_app.analysis.framework import (
    framework_from_events,
    metrics_from_samples,
    phase_of,
)
from profiler_app.analysis.operators import operator_table
from profiler_app.insights import summaries
from profiler_app.insights.pure.rules import params_from_overrides
from profiler_app.insights.pure.rules.overview import evaluate_overall_framework_metrics
from profiler_app.insights.summaries import analyses_json
from profiler_app.traces import ingest_trace
from profiler_app.traces.event_model import build_event_model
from profiler_app.traces.nesting import nest as nesting
from profiler_app.traces.window import WHOLE_TRACE
from tests.conftest import DATA_DIR
from tests.traces.expected import launched_before_last_step, ns, raw_trace
from tracefmt.kinds import SampleKind

HOST_CATEGORIES = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "amd_mi250_small.json.gz",
    "cpu_only_rank34.pt.trace.json.gz",
    "h100_cnn_kineto.json.gz",  # recorded with record_shapes=True
]


def raw_events(name: str) -> list[dict]:
    return raw_trace(DATA_DIR / name)["traceEvents"]


def reference_table(name: str, categories: tuple[str, ...] = HOST_CATEGORIES) -> pd.DataFrame:
    """key_averages() computed the obvious way: a stack per thread over the raw events (of
    ``categories``), torch.profiler's steps as one row "ProfilerStep*" as it lists them."""
    threads = defaultdict(list)
    for e in raw_events(name):
        if e.get("ph") == "X" and e.get("cat") in categories:
            start, dur = ns(e["ts"]), ns(e["dur"])
            threads[(e["pid"], e["tid"])].append([start, start + dur, dur, e["name"], 0])
    totals = defaultdict(lambda: [0, 0, 0])
    for events in threads.values():
        events.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        stack: list[list] = []
        for event in events:
            while stack and stack[-1][1] <= event[0]:
                stack.pop()
            if stack:
                stack[-1][4] += event[2]
            stack.append(event)
        for _, _, dur, op, children in events:
            op = re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", op)
            totals[op][0] += 1
            totals[op][1] += dur
            totals[op][2] += dur - children
    return pd.DataFrame(
        [(op, *v) for op, v in totals.items()], columns=["name", "count", "total_ns", "self_ns"]
    )


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    work = tmp_path_factory.mktemp("stores")
    traces = {}
    for i, name in enumerate(TRACES):
        ingest_trace(DATA_DIR / name, "kineto", work / str(i))
        traces[name] = RankTrace.from_store(0, work / str(i))
    return traces


@pytest.mark.parametrize("name", TRACES)
def test_it_builds_the_operator_table_of_a_real_trace(parsed, name):
    table = operator_table([parsed[name]]).set_index("name")
    expected = reference_table(name).set_index("name")
    assert sorted(table.index) == sorted(expected.index)
    joined = table.merge(expected, left_index=True, right_index=True, suffixes=("", "_ref"))
    assert (joined["count"] == joined["count_ref"]).all()
    assert (joined["total_ns"] == joined["total_ns_ref"]).all()
    assert (joined["self_ns"] == joined["self_ns_ref"]).all()
    assert table["self_pct"].sum() == pytest.approx(100.0)


def test_it_groups_operators_by_input_shape(parsed):
    table = operator_table([parsed["multirank_sampled/rank-0.json.gz"]], group_by_input_shape=True)
    shapes = defaultdict(int)
    for e in raw_events("multirank_sampled/rank-0.json.gz"):
        if e.get("cat") == "cpu_op" and e["name"] == "aten::mm":
            shapes[json.dumps(e["args"]["Input Dims"], separators=(",", ":"))] += 1
    mm = table[table["name"] == "aten::mm"]
    assert mm["count"].sum() == sum(shapes.values())
    assert sorted(mm["count"]) == sorted(shapes.values())


def test_it_groups_every_operator_of_a_gpu_run_by_input_shape(parsed):
    name = "h100_cnn_kineto.json.gz"
    expected: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in raw_events(name):
        if e.get("ph") == "X" and e.get("cat") in HOST_CATEGORIES:
            dims = e.get("args", {}).get("Input Dims")
            key = (e["name"], "" if dims is None else json.dumps(dims))
            expected[key][0] += 1
            expected[key][1] += ns(e["dur"])
    table = operator_table([parsed[name]], group_by_input_shape=True)
    ours = {(row.name, row.input_dims): [row.count, row.total_ns] for row in table.itertuples()}
    assert ours == dict(expected)
    # Many operators ran with more than one shape, so grouping by shape is a real split.
    names = table.groupby("name").size()
    assert (names > 1).sum() >= 10
    assert table.groupby("rank")["self_pct"].sum().tolist() == pytest.approx([100.0])


def test_the_analyses_json_offers_the_by_shape_table_only_when_shapes_were_recorded(parsed):
    with_shapes = analyses_json(analyze([parsed["h100_cnn_kineto.json.gz"]], window=WHOLE_TRACE))
    assert with_shapes["input_shapes_recorded"] is True
    by_name = {r["name"]: r["count"] for r in with_shapes["operators"]}
    backward = "aten::convolution_backward"  # one row per layer: each has its own shapes
    conv = [r for r in with_shapes["operators_by_shape"] if r["name"] == backward]
    assert len(conv) == 3 and all(r["input_dims"].startswith("[[64, ") for r in conv)
    assert with_shapes["operators_by_shape_total"] > with_shapes["operators_total"]
    full = operator_table([parsed["h100_cnn_kineto.json.gz"]], group_by_input_shape=True)
    assert by_name[backward] == full[full["name"] == backward]["count"].sum() == 15
    # Every (name, input shapes) pair of the raw trace is a row.
    pairs = {
        (e["name"], json.dumps(e.get("args", {}).get("Input Dims")))
        for e in raw_events("h100_cnn_kineto.json.gz")
        if e.get("ph") == "X" and e.get("cat") in HOST_CATEGORIES
    }
    assert len(with_shapes["operators_by_shape"]) == with_shapes["operators_by_shape_total"]
    assert with_shapes["operators_by_shape_total"] == len(pairs)

    without = analyses_json(analyze([parsed["gpu_training_rank0.pt.trace.json.gz"]]))
    assert without["input_shapes_recorded"] is False
    assert without["operators_by_shape"] == [] and without["operators_by_shape_total"] == 0


def kernels_in_the_analysis_window(name: str) -> set[str]:
    """Names of the GPU ops whose launch came before the last ProfilerStep started: the window
    of the GPU analyses (``RankTrace.complete_steps``), from the raw JSON."""
    events = [e for e in raw_events(name) if e.get("ph") == "X"]
    _, launched = launched_before_last_step(events)
    return {
        e["name"]
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e["args"].get("correlation") in launched
    }


def test_the_analyses_json_holds_every_operator_and_kernel(parsed):
    name = "gpu_training_rank0.pt.trace.json.gz"
    whole = analyses_json(analyze([parsed[name]], window=WHOLE_TRACE))
    operators = reference_table(name)  # the operators of the whole trace
    assert whole["operators_total"] == len(whole["operators"]) == len(operators) == 109
    assert {r["name"] for r in whole["operators"]} == set(operators["name"])
    self_ns = [r["self_ns"] for r in whole["operators"]]
    assert self_ns == sorted(self_ns, reverse=True)
    # Over the complete steps (the default), the last step's operators are left out too.
    body = analyses_json(analyze([parsed[name]]))
    assert body["operators_total"] < whole["operators_total"]
    kernels = kernels_in_the_analysis_window(name)
    assert body["kernels_total"] == len(body["kernels"]) == len(kernels)
    assert {r["name"] for r in body["kernels"]} == kernels


def test_the_analyses_json_keeps_the_busiest_rows_past_its_cap(parsed, monkeypatch):
    monkeypatch.setattr(summaries, "MAX_TABLE_ROWS", 10)
    name = "gpu_training_rank0.pt.trace.json.gz"
    whole = analyses_json(analyze([parsed[name]], window=WHOLE_TRACE))
    operators = reference_table(name).sort_values("self_ns", ascending=False)
    assert whole["operators_total"] == len(operators) and len(whole["operators"]) == 10
    assert [r["self_ns"] for r in whole["operators"]] == operators["self_ns"].head(10).tolist()
    body = analyses_json(analyze([parsed[name]]))
    assert body["kernels_total"] == len(kernels_in_the_analysis_window(name))
    assert len(body["kernels"]) == 10


def test_it_nests_equal_and_zero_length_intervals():
    # [0,10] holds [0,10] (same span, later index) which holds [5,5]; [10,12] is a sibling.
    parent, depth = nesting(
        np.zeros(4, dtype=np.int64), np.array([0, 0, 5, 10]), np.array([10, 10, 5, 12])
    )
    assert parent.tolist() == [-1, 0, 1, -1]
    assert depth.tolist() == [0, 1, 2, 0]


def random_tree(rng: np.random.Generator, tracks: int = 3, size: int = 300):
    """Properly nested intervals with their true parents: children are disjoint slices of
    their parent (touching allowed), 30 % of them zero-length points."""
    track, start, end, parent = [], [], [], []
    for t in range(tracks):
        todo = [(-1, 0, 10**6)]
        while todo and len(start) < size * (t + 1):
            p, a, b = todo.pop(int(rng.integers(len(todo))))
            cuts = np.sort(rng.integers(a, b + 1, 2 * int(rng.integers(0, 5))))
            kids = [
                (int(x), int(x) if rng.random() < 0.3 else int(y)) for x, y in cuts.reshape(-1, 2)
            ]
            opened = {x for x, y in kids if y > x}
            for x, y in kids:
                # Ambiguous by construction: a point at its parent's end or at a sibling's
                # start, or a child with its parent's exact span.
                if (y == x and ((x == b and p >= 0) or x in opened)) or (x, y) == (a, b):
                    continue
                todo += [(len(start), x, y)] if y > x else []
                track.append(t), start.append(x), end.append(y), parent.append(p)
    return np.array(track), np.array(start), np.array(end), np.array(parent)


@pytest.mark.parametrize("seed", range(20))
def test_it_finds_the_parents_of_random_nested_intervals(seed):
    rng = np.random.default_rng(seed)
    track, start, end, parent = random_tree(rng)
    shuffle = rng.permutation(len(start))
    found, depth = nesting(track[shuffle], start[shuffle], end[shuffle])
    assert np.array_equal(np.where(found >= 0, shuffle[found], -1), parent[shuffle])
    assert (depth[found >= 0] == depth[found[found >= 0]] + 1).all()


def test_it_charges_cpu_memory_to_the_innermost_operator():
    strings = ["", "outer", "inner", "[memory]"]
    kind = [0, 0, 11, 11, 11]
    events = pd.DataFrame(
        {
            "kind": np.array(kind, dtype=np.uint8),
            "track": np.zeros(5, dtype=np.int32),
            "name": np.array([1, 2, 3, 3, 3], dtype=np.int32),
            "start_ns": np.array([0, 10, 15, 5, 50], dtype=np.int64),
            "dur_ns": np.array([100, 20, 0, 0, 0], dtype=np.int64),
            "bytes": np.array([-1, -1, 4096, 1024, -512], dtype=np.int64),
            "device": np.array([-1, -1, -1, -1, -1], dtype=np.int16),
            "input_dims": np.full(5, -1, dtype=np.int32),
            "correlation": np.full(5, -1, dtype=np.int64),
        }
    )
    model = build_event_model({c: events[c].to_numpy() for c in events}, strings)
    events = events.assign(**model)
    table = operator_table([RankTrace(0, events, strings)]).set_index("name")
    assert table.loc["inner", "self_cpu_memory_bytes"] == 4096
    assert table.loc["outer", "self_cpu_memory_bytes"] == 1024 - 512
    assert table.loc["outer", "cpu_memory_bytes"] == 4096 + 1024 - 512
    assert table.loc["outer", "self_ns"] == 80


def test_it_reads_profiler_steps_as_training_steps(parsed):
    trace = parsed["gpu_training_rank0.pt.trace.json.gz"]
    steps = trace.step_events
    raw = [
        e
        for e in raw_events("gpu_training_rank0.pt.trace.json.gz")
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    ]
    assert steps["step"].tolist() == [int(e["name"].split("#")[1]) for e in raw]
    assert steps["dur_ns"].tolist() == [ns(e["dur"]) for e in raw]


def test_it_drops_the_last_profiler_step_like_hta(parsed):
    trace = parsed["gpu_training_rank0.pt.trace.json.gz"]
    kept = trace.complete_steps()
    last = trace.step_events["start_ns"].max()
    host = kept.events[kept.events["kind"].isin([0, 1, 3])]
    assert host["start_ns"].max() < last
    assert len(kept.gpu_ops) < len(trace.gpu_ops)
    single = parsed["cpu_only_rank34.pt.trace.json.gz"]
    assert single.complete_steps() is single  # one step: nothing to drop


def cpu_op_names(name: str) -> set[str]:
    return {e["name"] for e in raw_events(name) if e.get("cat") == "cpu_op"}


def exclusive_phases(name: str) -> pd.Series:
    """Exclusive time per phase from the raw JSON: CPU operators' self time (the runtime calls
    they make are their children), annotations' time outside the annotations nested in them,
    kernels whole; steps left out."""
    operators = reference_table(name)
    operators = operators[operators["name"].isin(cpu_op_names(name))]
    notes = reference_table(name, ("user_annotation",))
    notes = notes[notes["name"] != "ProfilerStep*"]
    raw = raw_events(name)
    kernels = sum(
        ns(e["dur"]) for e in raw if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    phases = notes.groupby(notes["name"].map(phase_of))["self_ns"].sum()
    phases["cpu"] = operators["self_ns"].sum()
    if kernels:
        phases["gpu"] = kernels
    return phases.sort_index()


@pytest.mark.parametrize("name", TRACES)
def test_it_splits_framework_time_into_exclusive_phases(parsed, name):
    frame = framework_from_events(parsed[name])
    phases = frame.groupby("phase")["dur_ns"].sum().sort_index()
    assert phases.to_dict() == exclusive_phases(name).to_dict()
    assert not frame["name"].str.startswith("ProfilerStep").any()


@pytest.mark.parametrize("name", TRACES)
def test_the_framework_verdict_agrees_with_the_phase_totals(parsed, name):
    """DDP's forward runs inside the model's "## forward ##": counted once, forward is not the
    largest phase of these DDP traces; backward is."""
    frame = framework_from_events(parsed[name])
    data = JobData(JobData.empty().metrics, JobData.empty().steps, frame)
    result = evaluate_overall_framework_metrics(
        data, params_from_overrides()["OverallFrameworkMetrics"]
    )
    expected = exclusive_phases(name)
    annotated = expected.drop(["cpu", "gpu"], errors="ignore")
    if annotated.empty:
        assert result.recommendation.startswith(f"Most framework time is in {expected.idxmax()}")
        return
    top = annotated.idxmax()
    share = 100 * annotated[top] / annotated.sum()
    assert result.recommendation.startswith(f"Most framework time is in {top} ({share:.0f}%)")
    forward, backward = expected.get("forward", 0), expected.get("backward", 0)
    if forward + backward:
        assert result.evidence["forward_backward"]["forward_pct"] == pytest.approx(
            100 * forward / (forward + backward)
        )
    if name in ("gpu_training_rank0.pt.trace.json.gz", "nccl_rank0.json.gz"):
        assert top == "backward"
        # The model's forward holds DDP's: the phase is no longer than the outer annotation.
        outer = sum(
            ns(e["dur"])
            for e in raw_events(name)
            if e.get("cat") == "user_annotation" and e["name"] == "## forward ##"
        )
        assert expected["forward"] <= outer < 2 * expected["forward"]
    if name == "gpu_training_rank0.pt.trace.json.gz":
        assert (expected["forward"], expected["backward"]) == (145_748_781, 240_674_644)
        assert result.recommendation.startswith("Most framework time is in backward (61%)")


def test_it_turns_collector_samples_into_metrics():
    columns = {
        "kind": np.array(
            [
                SampleKind.GPU_UTIL_PCT,
                SampleKind.COUNTER,
                SampleKind.CPU_IOWAIT_PCT,
                SampleKind.GPU_MEM_USED_BYTES,
                SampleKind.GPU_MEM_USED_BYTES,
            ]
        ),
        "device": np.array([1, -1, -1, 1, 2]),
        "name": np.array([0, 3, 0, 0, 0]),
        "time_ns": np.array([10, 11, 12, 13, 14]),
        "value": np.array([55.0, 1e9, 3.0, 20e9, 5e9]),
    }
    # GPU 1 holds 80 GB; GPU 2's size is unknown, so it has no share in use.
    metrics = metrics_from_samples(columns, "algo-3", {1: 80_000_000_000})
    assert metrics["metric"].astype(str).tolist() == [
        "gpu_util_pct",
        "cpu_iowait_pct",
        "gpu_mem_used_bytes",
        "gpu_mem_used_bytes",
        "gpu_mem_used_pct",
    ]
    assert metrics["node"].tolist() == ["algo-3"] * 5
    assert metrics["device"].tolist() == [1, -1, 1, 2, 1]
    assert metrics["time_ns"].tolist() == [10, 12, 13, 14, 13]
    assert metrics["value"].tolist()[-1] == 25.0


def test_it_pairs_rocm_launches_with_their_kernels(parsed):
    """HTA only knows the CUDA call names; ROCm's hip* launches count too."""
    from profiler_app.analysis.launch import launches

    raw = raw_events("amd_mi250_small.json.gz")
    calls = {
        e["args"]["correlation"]: e
        for e in raw
        if e.get("cat") == "cuda_runtime"
        and e["name"].startswith("hip")
        and "correlation" in e["args"]
    }
    ops = [
        e
        for e in raw
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e["args"].get("correlation") in calls
        and calls[e["args"]["correlation"]]["name"]
        in ("hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream")
    ]
    table = launches([parsed["amd_mi250_small.json.gz"]]).set_index("correlation")
    assert len(table) == len(ops) > 0
    for op in ops:
        call = calls[op["args"]["correlation"]]
        row = table.loc[op["args"]["correlation"]]
        assert row["gpu_dur_ns"] == ns(op["dur"])
        delay = ns(op["ts"]) - ns(call["ts"]) - ns(call["dur"])
        assert row["launch_delay_ns"] == max(delay, 0)


def test_it_analyses_a_cpu_only_trace_and_no_trace_at_all(parsed):
    cpu_only = analyze([parsed["cpu_only_rank34.pt.trace.json.gz"]])
    assert len(cpu_only.operators) == 3
    for frame in (cpu_only.temporal, cpu_only.kernels, cpu_only.idle, cpu_only.launches):
        assert frame.empty
    nothing = analyze([])
    assert all(len(table) == 0 for table in vars(nothing).values() if hasattr(table, "__len__"))
