"""Performance recommendations read straight from the trace, in the spirit of the PyTorch
profiler's TensorBoard plugin: data loading, synchronisation, launch overhead, tensor cores,
host-to-device copies and communication. Each is a rule with parameters (overridable per job
like the system rules, ``DataLoading_threshold_pct``), evidence that links to the timeline,
and a fix. They judge the window of the trace analyses, and within it where each applies
(``inputs.scope_of``): inside the steps, or, for a trace without step annotations, the steady
state after the first iteration; their evidence names that scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profiler_app.analysis import TraceAnalyses
from profiler_app.insights.pure.rules.base import RuleResult, RuleSpec
from profiler_app.insights.pure.rules.recommendations.device import (
    COMMUNICATION,
    COMMUNICATION_BY_RANK,
    HOST_TO_DEVICE_COPIES,
    HOST_TO_DEVICE_COPIES_BY_RANK,
    TENSOR_CORES,
    TENSOR_CORES_BY_RANK,
)
from profiler_app.insights.pure.rules.recommendations.host import (
    DATA_LOADING,
    DATA_LOADING_BY_RANK,
    LAUNCH_OVERHEAD,
    LAUNCH_OVERHEAD_BY_RANK,
    SYNCHRONIZATION,
    SYNCHRONIZATION_BY_RANK,
)
from profiler_app.insights.pure.rules.recommendations.inputs import RankRule

# Each recommendation, and the same judged a rank at a time (``RankRule``; ``by_rank`` reads a
# job so).
_RULES: tuple[tuple[RuleSpec, RankRule], ...] = (
    (DATA_LOADING, DATA_LOADING_BY_RANK),
    (LAUNCH_OVERHEAD, LAUNCH_OVERHEAD_BY_RANK),
    (SYNCHRONIZATION, SYNCHRONIZATION_BY_RANK),
    (TENSOR_CORES, TENSOR_CORES_BY_RANK),
    (HOST_TO_DEVICE_COPIES, HOST_TO_DEVICE_COPIES_BY_RANK),
    (COMMUNICATION, COMMUNICATION_BY_RANK),
)
RECOMMENDATIONS: dict[str, RuleSpec] = {spec.name: spec for spec, _ in _RULES}
BY_RANK: dict[str, RankRule] = {spec.name: by_rank for spec, by_rank in _RULES}


def recommend(analyses: TraceAnalyses, params: Mapping[str, Any]) -> list[RuleResult]:
    """Every recommendation over the events ``analyses`` covered (each rank's complete steps),
    with the parameter objects of ``params`` (defaults where absent)."""
    return [
        spec.judge(analyses, params.get(name) or spec.params())
        for name, spec in RECOMMENDATIONS.items()
    ]
