"""Call trees straight from a trace's raw JSON (standard library only, no parser code): a
thread's host events nested by a stack walk, totals and self times per path of names."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from tests.traces.expected import ns, raw_trace

HOST_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}


def host_events(trace: str, tid: int, before_ns: int | None = None) -> list[dict]:
    """The thread's host events as (start, dur, name), raw times in ns."""
    doc = raw_trace(trace)
    out = []
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in HOST_CATEGORIES and e.get("tid") == tid:
            start = ns(e["ts"])
            if before_ns is None or start < before_ns:
                out.append((start, ns(e["dur"]), e["name"]))
    return out


def steps_as_one(events: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The events with every training step named alike ("ProfilerStep#5" → "ProfilerStep*",
    as torch's key_averages() names them; "step_5" → "step_*"), as the Call tree sums them."""
    return [
        (start, dur, re.sub(r"^(ProfilerStep)#\d+$|^(step_)\d+$", r"\1\2*", name))
        for start, dur, name in events
    ]


def last_step_start(trace: str) -> int:
    doc = raw_trace(trace)
    return max(ns(e["ts"]) for e in doc["traceEvents"] if "ProfilerStep#" in e.get("name", ""))


def paths(events: list[tuple[int, int, str]]):
    """Per path of names from the top: total ns, self ns, count; and per name its self ns."""
    total, self_ns, count = Counter(), Counter(), Counter()
    stack: list[list] = []  # [end, path, children's time]
    done = []
    for start, dur, name in sorted(events, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1][0] <= start:
            done.append(stack.pop())
        path = (stack[-1][1] if stack else ()) + (name,)
        if stack:
            stack[-1][2] += dur
        stack.append([start + dur, path, 0, dur])
    done.extend(stack)
    by_name = defaultdict(int)
    for _, path, children, dur in done:
        total[path] += dur
        self_ns[path] += max(dur - children, 0)
        count[path] += 1
        by_name[path[-1]] += max(dur - children, 0)
    return total, self_ns, count, by_name
