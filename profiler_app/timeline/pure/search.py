"""Find events by name across a job: which names match, and where their events are."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiler_app.timeline.pure.query import JobTimeline


@dataclass(frozen=True)
class Found:
    total: int  # matching events, of which the earliest ``limit`` are listed
    names: list[tuple[str, int]]  # matching names with their event counts, most frequent first
    events: list[dict]


def search(job: JobTimeline, text: str, limit: int = 100) -> Found:
    needle = text.lower()
    counts: dict[str, int] = {}
    picked: list[tuple[int, int, int]] = []  # (start_ns, part id, index)
    total = 0
    for part in job.parts.values():
        ix = part.index
        ids = [i for i, s in enumerate(ix.lowered_strings) if needle in s]
        if not ids:
            continue
        lo, hi = ix.name_off[ids], ix.name_off[np.asarray(ids) + 1]
        for name_id, n in zip(ids, (hi - lo).tolist(), strict=True):
            if n:
                counts[ix.strings[name_id]] = counts.get(ix.strings[name_id], 0) + n
        idx = np.concatenate([ix.name_order[a:b] for a, b in zip(lo, hi, strict=True)])
        total += len(idx)
        if not len(idx):
            continue
        start = ix.start[idx]
        earliest = np.argsort(start, kind="stable")[:limit]
        picked.extend(
            zip(
                start[earliest].tolist(),
                [part.id] * len(earliest),
                idx[earliest].tolist(),
                strict=True,
            )
        )
    picked.sort()
    events = []
    for start, part_id, index in picked[:limit]:
        part = job.parts[part_id]
        track, depth = job.locate(part, np.asarray([index]))
        events.append(
            {
                "id": f"{part_id}:{index}",
                "name": part.index.strings[int(part.index.name[index])],
                "start_ns": str(start),
                "dur_ns": int(part.index.dur[index]),
                "track": track[0],
                "depth": int(depth[0]),
            }
        )
    names = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return Found(total, names, events)
