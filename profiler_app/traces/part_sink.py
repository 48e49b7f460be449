"""What a part's reader writes through, whichever format it came in: the ``PartSink`` folds
each normalised batch into the aggregates and appends it to the timeline store, then finishes
the part into an ``IngestResult`` (store, aggregates, complete-steps window, memory). The Kineto
and collector readers differ only in how they fill it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiler_app.lib.memory import hand_back_freed
from profiler_app.traces.aggregate import AGGREGATED_COLUMNS, Aggregator, PartAggregates
from profiler_app.traces.event_model import Windows
from profiler_app.traces.memory import MemorySummary, build_memory
from profiler_app.traces.model import EventBatch, FlowBatch
from profiler_app.traces.name_rules import NameRules
from profiler_app.traces.normalize import PartContext
from profiler_app.traces.store_layout import FLOWS_FILE
from profiler_app.traces.timeline_read import TimelineReader
from profiler_app.traces.timeline_store import StoreSummary, TimelineWriter
from profiler_app.traces.window import StepCut
from tracefmt.columns import FLOW_COLUMNS


@dataclass(frozen=True)
class Limits:
    max_decompressed_bytes: int = 64 << 30
    # A collector chunk's arrays may take this many times the archive's size once loaded
    # (real chunks compress a few times; a bomb of zeros a thousand times), and at least
    # ``min_chunk_budget_bytes``. Checked from the arrays' headers, before anything is loaded.
    max_chunk_expansion: int = 200
    min_chunk_budget_bytes: int = 256 << 20
    chunk_bytes: int = 8 << 20
    collector_batch_rows: int = 500_000


@dataclass(frozen=True)
class IngestResult:
    aggregates: PartAggregates
    store: StoreSummary
    metadata: dict[str, Any] = field(default_factory=dict)
    # Where the complete-steps window ends (None: the part has fewer than two profiler steps,
    # both windows are the whole part), and the part's aggregates over that window.
    cut: StepCut | None = None
    complete_steps: PartAggregates | None = None
    # The allocator's curve, peak and top allocators (whole trace) from [memory] events.
    memory: MemorySummary = field(default_factory=MemorySummary.empty)
    # Seconds the part's finish took (the store merged and written with its event model, the
    # flows, the memory curve, the complete-steps pass): what reading the file left to do.
    finish_s: float = 0.0


class PartSink:
    """Where normalised batches go: the aggregates, the store's runs and the flow list."""

    def __init__(self, context: PartContext, store_dir: Path) -> None:
        self.context = context
        self.aggregator = Aggregator(NameRules(context.strings))
        self.writer = TimelineWriter(store_dir)
        self.flows: list[FlowBatch] = []
        self.store_dir = store_dir

    def finish(self, offset_ns: int, captured_windows_ns: Windows = None) -> IngestResult:
        """The part's aggregates and store (with its event model: ``captured_windows_ns`` are
        the ranges a collector part's Kineto recorded; None for a trace recorded whole); the
        caller adds the metadata they decide."""
        began = time.perf_counter()
        # What reading freed goes back to the system first (and again before the second pass),
        # so that the store's merge and the second pass come on top of what is held: a
        # 2.8-million-event part peaked 30 MB lower.
        hand_back_freed()
        tracks = self.context.track_frame()
        aggregates = self.aggregator.finish(self.context.strings, offset_ns)
        strings = self.context.strings.strings
        store = self.writer.finish(offset_ns, strings, tracks, captured_windows_ns)
        # Each step says whether Kineto recorded it.
        steps = aggregates.steps
        captured = np.isin(steps["start_ns"].to_numpy(), store.captured_step_starts)
        steps = steps.assign(captured=captured)
        aggregates = replace(aggregates, steps=steps)
        self._write_flows(offset_ns)
        memory = build_memory(self.store_dir, self.context.memory, offset_ns, self.context.strings)
        self.context.memory = []
        hand_back_freed()
        cut, complete_steps = complete_steps_aggregates(
            self.store_dir, self.aggregator.rules, store.complete_steps_end_ns
        )
        return IngestResult(
            aggregates,
            store,
            cut=cut,
            complete_steps=complete_steps,
            memory=memory,
            finish_s=time.perf_counter() - began,
        )

    def _write_flows(self, offset_ns: int) -> None:
        columns: dict[str, np.ndarray] = {}
        if self.flows:
            for col in self.flows[0].columns:
                columns[col] = np.concatenate([f.columns[col] for f in self.flows])
            columns["time_ns"] = columns["time_ns"] + offset_ns
            self.aggregator.count("flow", len(columns["flow_id"]))
        frame = pd.DataFrame(columns or {c: np.empty(0, t) for c, t in FLOW_COLUMNS.items()})
        pq.write_table(
            pa.Table.from_pandas(frame, preserve_index=False), self.store_dir / FLOWS_FILE
        )


def complete_steps_aggregates(
    store_dir: Path, rules: NameRules, complete_steps_end_ns: int | None
) -> tuple[StepCut | None, PartAggregates | None]:
    """The part's aggregates over its complete steps (``traces.window``), from its store (the
    event model's ``in_complete_steps``): a second pass, since where the last step starts is
    known only once every event was read."""
    if complete_steps_end_ns is None:
        return None, None
    aggregator = Aggregator(rules)
    for group in TimelineReader(store_dir).groups([*AGGREGATED_COLUMNS, "in_complete_steps"]):
        keep = group["in_complete_steps"]
        aggregator.add_events(EventBatch({name: group[name][keep] for name in AGGREGATED_COLUMNS}))
    # The store's times are on the epoch already.
    return StepCut(complete_steps_end_ns), aggregator.finish(rules.strings, 0)
