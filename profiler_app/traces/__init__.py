"""Pure trace parsing and analysis: no Django here (tests/test_pure_packages.py checks it).

``ingest_trace`` turns a PyTorch profiler (Kineto) trace or a collector chunk into aggregates
and a timeline store; ``TimelineReader`` reads a store back.
"""

from profiler_app.traces.errors import TraceFormatError
from profiler_app.traces.part_sink import IngestResult, Limits
from profiler_app.traces.pipeline import ingest_trace
from profiler_app.traces.timeline_read import TimelineReader

__all__ = ["IngestResult", "Limits", "TimelineReader", "TraceFormatError", "ingest_trace"]
