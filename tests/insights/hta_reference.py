"""Reference numbers from Holistic Trace Analysis (HTA), the independent implementation.

HTA reads timestamps as floating-point microseconds and in places truncates them to whole
microseconds (``astype(int)`` in its kernel breakdown; ``round_down_time_stamps`` when it
parses). To compare at full precision it is given a copy of each trace with every ``ts`` and
``dur`` in integer nanoseconds, shifted to start near 0 (so float64 holds them exactly): HTA's
"us" columns then hold nanoseconds, and thresholds passed to it are in nanoseconds too.

Run as a script (``python -m tests.insights.hta_reference TRACE_DIR OUT.json RANKS``) so that
HTA's logging and worker processes stay out of the test process.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]


def nanosecond_copy(source: Path, target: Path) -> None:
    """``source`` with ts/dur as integer ns from the earliest timestamp (exact decimals)."""
    with gzip.open(source, "rt") as fh:
        trace = json.load(fh, parse_float=Decimal)
    events = trace["traceEvents"]
    base = min(int(Decimal(e["ts"]) * 1000) for e in events if "ts" in e)
    for event in events:
        if "ts" in event:
            event["ts"] = int(Decimal(event["ts"]) * 1000) - base
        if "dur" in event:
            event["dur"] = int((Decimal(event["dur"]) * 1000).to_integral_value())
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt") as fh:
        json.dump(trace, fh, default=float)


def reference(sources: list[Path], work_dir: Path, exact: bool = True) -> dict:
    """HTA's results for the ranks in ``sources`` (one trace file per rank, rank = position):
    on nanosecond copies, or (``exact=False``) on the files as they are."""
    trace_dir = work_dir / ("hta-input" if exact else "hta-input-as-is")
    for source in sources:
        if exact:
            nanosecond_copy(source, trace_dir / source.name)
        else:
            trace_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, trace_dir / source.name)
    out = work_dir / ("hta-reference.json" if exact else "hta-reference-as-is.json")
    ranks = ",".join(str(r) for r in range(len(sources)))
    subprocess.run(
        [sys.executable, "-m", "tests.insights.hta_reference", str(trace_dir), str(out), ranks],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return json.loads(out.read_text())


def _records(frame) -> list[dict]:
    return json.loads(frame.reset_index().to_json(orient="records", double_precision=15))


def _flat(frame) -> list[dict]:
    """A describe()-style frame with two column levels, flattened to plain records."""
    flat = frame.copy()
    flat.columns = [col[-1] for col in flat.columns]
    return _records(flat)


def _compute(trace_dir: str, ranks: list[int]) -> dict:
    from hta.trace_analysis import TraceAnalysis

    analysis = TraceAnalysis(trace_dir=trace_dir)
    temporal = analysis.get_temporal_breakdown(visualize=False)
    # HTA's default delay is 30 in its microsecond timestamps; these copies are in ns.
    idle, idle_stats = analysis.get_idle_time_breakdown(
        ranks=ranks, visualize=False, show_idle_interval_stats=True, consecutive_kernel_delay=30_000
    )
    idle_5us, _ = analysis.get_idle_time_breakdown(
        ranks=ranks, visualize=False, consecutive_kernel_delay=5_000
    )
    kernel_types, kernels = analysis.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=10**9, duration_ratio=1.0
    )
    _, top_kernels = analysis.get_gpu_kernel_breakdown(visualize=False)  # 10 kernels, 0.8
    _, top_3_kernels = analysis.get_gpu_kernel_breakdown(
        visualize=False, num_kernels=3, duration_ratio=0.5
    )
    overlap = analysis.get_comm_comp_overlap(visualize=False)
    launches = analysis.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    return {
        "temporal": _records(temporal),
        "idle": _records(idle),
        "idle_stats": _records(idle_stats.rename_axis("idle_category")),
        "idle_5us": _records(idle_5us),
        "kernel_types": _records(kernel_types),
        "kernels": _records(kernels),
        "top_kernels": _records(top_kernels),
        "top_3_kernels": _records(top_3_kernels),
        "overlap": _records(overlap),
        "launches": {str(r): _records(frame) for r, frame in launches.items()},
        "memory_bw": _flat(analysis.get_memory_bw_summary(ranks=ranks)),
        "queue_length": _flat(analysis.get_queue_length_summary(ranks=ranks)),
    }


if __name__ == "__main__":
    directory, output, rank_list = sys.argv[1:4]
    result = _compute(directory, [int(r) for r in rank_list.split(",")])
    Path(output).write_text(json.dumps(result))
