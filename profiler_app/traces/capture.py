"""The collector's capture report: what profiling cost the training and what Kineto captured.

Each chunk's meta may carry it as ``capture`` (docs/formats.md): the process's cumulative
figures so far and the Kineto windows finished since its previous chunk. ``capture_report``
keeps a chunk's report when it has the collector's shape; ``job_capture`` puts a job's reports
together, per process and for the job.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SCHEDULES = ("budget", "fixed")
# "gpu": GPU activity only; "full": GPU activity and CPU operators; "cpu": CPU operators on a
# machine without a GPU.
WINDOW_KINDS = ("gpu", "full", "cpu")
# The windows an answer lists per process (the latest ones); it says how many there are in all.
MAX_WINDOWS = 500

# background_ns: the part of cost_ns the collector's own threads and its packing child took
# (the rest is its Kineto windows on the training thread); 0 from collectors before it.
_COUNTS = ("elapsed_ns", "cost_ns", "background_ns", "steps_run", "steps_captured", "windows_total")
_WINDOW_COUNTS = ("first_step", "last_step", "cost_ns")


def capture_report(value: Any) -> dict | None:
    """A chunk's ``capture`` as stored: its known keys, or None when the chunk has none or it
    is not of the shape the collector writes (a figure of the wrong type, a negative count)."""
    if not isinstance(value, dict) or not isinstance(value.get("windows"), list):
        return None
    value = {"background_ns": 0, **value}
    windows = [_window(w) for w in value["windows"]]
    if (
        value.get("schedule") not in SCHEDULES
        or not all(_is_pct(value.get(key)) for key in ("budget_pct", "overhead_pct"))
        or not all(_is_count(value.get(key)) for key in _COUNTS)
        or not isinstance(value.get("exceeded"), bool)
        or None in windows
    ):
        return None
    return {
        "schedule": value["schedule"],
        "budget_pct": float(value["budget_pct"]),
        "overhead_pct": float(value["overhead_pct"]),
        **{key: value[key] for key in _COUNTS},
        "exceeded": value["exceeded"],
        "windows": windows,
    }


def _window(value: Any) -> dict | None:
    if not isinstance(value, dict) or value.get("kind") not in WINDOW_KINDS:
        return None
    if not all(_is_count(value.get(key)) for key in _WINDOW_COUNTS):
        return None
    if value["last_step"] < value["first_step"]:
        return None
    return {key: value[key] for key in ("first_step", "last_step", "kind", "cost_ns")}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_pct(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0


@dataclass(frozen=True)
class PartCapture:
    """One chunk's report (``capture_report``) and the process that sent it."""

    node: str
    rank: int
    pid: int | None
    seq: int
    report: dict


def job_capture(parts: Iterable[PartCapture]) -> dict:
    """Per process, its latest cumulative figures (from its chunk of the highest ``seq``) and
    its windows in step order (the last ``MAX_WINDOWS`` of them, and how many in all); for the
    job, the processes' sums (overhead and captured share of the sums), the budget and schedule
    when the processes agree on them (else None), the windows by kind, and whether any
    process went over its budget. A chunk sent twice counts once."""
    by_process: dict[tuple[str, int, int | None], dict[int, dict]] = {}
    for part in parts:
        by_process.setdefault((part.node, part.rank, part.pid), {})[part.seq] = part.report
    processes = [
        _process(key, reports)
        for key, reports in sorted(by_process.items(), key=lambda item: _order(item[0]))
    ]
    kinds: Counter[str] = Counter()
    for reports in by_process.values():
        kinds.update(w["kind"] for report in reports.values() for w in report["windows"])
    total = {key: sum(p[key] for p in processes) for key in _COUNTS}
    return {
        "reported": bool(processes),
        "budget_pct": _agreed(p["budget_pct"] for p in processes),
        "schedule": _agreed(p["schedule"] for p in processes),
        **(total if processes else dict.fromkeys(_COUNTS)),
        "overhead_pct": _pct(total["cost_ns"], total["elapsed_ns"]),
        "captured_pct": _pct(total["steps_captured"], total["steps_run"]),
        "windows_by_kind": {kind: kinds[kind] for kind in WINDOW_KINDS} if processes else None,
        "exceeded": any(p["exceeded"] for p in processes) if processes else None,
        "processes": processes,
    }


def _process(key: tuple[str, int, int | None], reports: dict[int, dict]) -> dict:
    latest = reports[max(reports)]
    windows = sorted(
        (w for report in reports.values() for w in report["windows"]),
        key=lambda w: (w["first_step"], w["last_step"]),
    )
    node, rank, pid = key
    return {
        "node": node,
        "rank": rank,
        "pid": pid,
        **{k: v for k, v in latest.items() if k != "windows"},
        "captured_pct": _pct(latest["steps_captured"], latest["steps_run"]),
        "windows": windows[-MAX_WINDOWS:],
        "windows_count": len(windows),
    }


def _order(key: tuple[str, int, int | None]) -> tuple[str, int, int]:
    node, rank, pid = key
    return node, rank, -1 if pid is None else pid


def _agreed(values: Iterable[Any]) -> Any:
    found = set(values)
    return found.pop() if len(found) == 1 else None


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None
