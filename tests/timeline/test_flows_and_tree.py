"""Launch→run pairs match the trace's correlation ids; the track tree has the documented shape."""

import pytest

from profiler_app.timeline.pure.details import event_details
from profiler_app.timeline.pure.query import MAX_FLOWS
from profiler_app.timeline.pure.search import search
from profiler_app.timeline.pure.viewport import Window
from tests.timeline.raw import raw_timeline

GPU_TRACES = [
    "gpu_training_rank0.pt.trace.json.gz",
    "nccl_rank0.json.gz",
    "multirank_sampled/rank-0.json.gz",
    "amd_mi250_small.json.gz",
    "h100_cnn_kineto.json.gz",
]


def flows_in(timeline, window):
    lanes = [n.id for n in timeline.nodes.values() if n.data == "events"]
    return timeline.viewport(window, lanes, width_px=1).flows


@pytest.mark.parametrize("trace", GPU_TRACES)
def test_it_pairs_launches_and_runs_by_correlation(trace, timeline_of):
    timeline = timeline_of(trace)
    raw = raw_timeline(trace)
    whole = Window.at_level(timeline.start_ns, timeline.end_ns + 1, 0)
    pieces = 40
    step = (whole.end_ns - whole.start_ns) // pieces + 1
    got = set()
    for i in range(pieces):
        window = Window(
            whole.start_ns + i * step, min(whole.start_ns + (i + 1) * step, whole.end_ns), 0
        )
        flows = flows_in(timeline, window)
        assert flows.total <= MAX_FLOWS
        for part_id, launch, run in zip(flows.part, flows.launch, flows.run, strict=True):
            ix = timeline.parts[int(part_id)].index
            got.add(
                (
                    int(ix.start[launch]),
                    ix.strings[ix.name[launch]],
                    int(ix.start[run]),
                    ix.strings[ix.name[run]],
                )
            )
    assert raw.pairs
    assert got == raw.pairs


def test_it_caps_the_pairs_of_a_wide_view(timeline_of):
    timeline = timeline_of("gpu_training_rank0.pt.trace.json.gz")
    flows = flows_in(timeline, Window.at_level(timeline.start_ns, timeline.end_ns + 1, 0))
    assert flows.total == len(raw_timeline("gpu_training_rank0.pt.trace.json.gz").pairs) > MAX_FLOWS
    assert len(flows.part) == MAX_FLOWS


def test_it_details_a_kernel_with_its_launch(timeline_of):
    timeline = timeline_of("gpu_training_rank0.pt.trace.json.gz")
    found = search(timeline, "volta_sgemm_64x64_nt", limit=1)
    assert (
        found.total
        == raw_timeline("gpu_training_rank0.pt.trace.json.gz").names["volta_sgemm_64x64_nt"]
    )
    details = event_details(timeline, found.events[0]["id"])
    run, launch = details["run"], details["launch"]
    assert run["name"] == "volta_sgemm_64x64_nt" and run["kind"] == "kernel"
    assert (run["stream"], run["device"]) == (7, 0)
    assert run["grid"] == [2, 8, 36] and run["block"] == [64, 1, 1]
    assert launch["name"] == "cudaLaunchKernel" and launch["correlation"] == run["correlation"]
    assert launch["track"] == "algo-1/1102/gpu0/host/1262"
    raw = raw_timeline("gpu_training_rank0.pt.trace.json.gz")
    start = int(run["start_ns"])
    (pair,) = [p for p in raw.pairs if p[2] == start and p[3] == run["name"]]
    assert details["launch_latency_ns"] == start - pair[0]
    assert details["queue_ns"] == start - pair[0] - launch["dur_ns"]


def labels(node) -> list:
    return [node.label, [labels(c) for c in node.children]] if node.children else node.label


def test_it_builds_the_track_tree(timeline_of):
    (root,) = timeline_of("gpu_training_rank0.pt.trace.json.gz").roots
    assert labels(root) == [
        "algo-1",
        [
            [
                "GPUs",
                [
                    [
                        "HOST-0 PID-1102",
                        [
                            "GPU-0 utilisation",
                            ["GPU-0 device", ["stream 7"]],
                            [
                                "GPU-0 host",
                                ["thread 1102 (pt_main_thread)", "thread 1262 (pt_autograd_0)"],
                            ],
                            [
                                "CPU threads",
                                [
                                    "thread -247463936",
                                    "thread 1102 (pt_main_thread)",
                                    "thread 1262 (pt_autograd_0)",
                                ],
                            ],
                            "(unnamed)",
                            "Spans / PyTorch Profiler",
                            "Traces / Trace PyTorch Profiler",
                        ],
                    ]
                ],
            ]
        ],
    ]


def test_it_puts_each_rank_under_its_node(timeline_of):
    timeline = timeline_of("multirank_sampled/rank-0.json.gz", "multirank_sampled/rank-1.json.gz")
    nodes = {root.label: root for root in timeline.roots}
    assert list(nodes) == ["algo-1", "algo-2"]
    for index, (name, pid, device) in enumerate([("algo-1", 4037, 0), ("algo-2", 4045, 1)]):
        (gpus,) = [c for c in nodes[name].children if c.label == "GPUs"]
        (proc,) = gpus.children
        assert proc.label == f"HOST-{index} PID-{pid}" and proc.info["ranks"] == [index]
        assert [c.label for c in proc.children][:3] == [
            f"GPU-{device} utilisation",
            f"GPU-{device} device",
            f"GPU-{device} host",
        ]
    device = timeline.nodes["algo-1/4037/gpu0/device"]
    assert [c.label for c in device.children] == [
        "stream 7",
        "stream 23",
        "stream 25",
        "stream 84",
        "stream 203",
    ]


def test_it_keeps_cpu_only_processes_under_cpu(timeline_of):
    (root,) = timeline_of("cpu_only_rank34.pt.trace.json.gz").roots
    assert [c.label for c in root.children] == ["CPU"]
    (proc,) = root.children[0].children
    assert proc.label == "HOST-0 PID-1074"
    assert [c.label for c in proc.children[0].children] == [
        "thread 1074 (pt_main_thread)",
        "thread 3553 (pt_main_thread)",
        "thread 3554 (pt_main_thread)",
    ]


def test_it_finds_events_by_name_in_any_case(timeline_of):
    timeline = timeline_of("gpu_training_rank0.pt.trace.json.gz")
    raw = raw_timeline("gpu_training_rank0.pt.trace.json.gz")
    found = search(timeline, "NCCL", limit=10)
    assert found.total == sum(n for name, n in raw.names.items() if "nccl" in name.lower())
    assert len(found.events) == 10
    assert [e["start_ns"] for e in found.events] == sorted(e["start_ns"] for e in found.events)
    assert {name for name, _ in found.names} >= {"nccl:all_reduce", "nccl:broadcast"}
    assert dict(found.names) == {name: n for name, n in raw.names.items() if "nccl" in name.lower()}
