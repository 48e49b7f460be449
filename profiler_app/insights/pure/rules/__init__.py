"""The built-in profiler rules of SageMaker Debugger, with their parameters and defaults.

``params_from_overrides({"CPUBottleneck_threshold": 40})`` turns ProfilerReport-style keys
(``<Rule>_<parameter>``) into one parameter object per rule; ``evaluate_rules`` runs them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from profiler_app.analysis import ANALYSIS_PARAMETERS, AnalysisParameters
from profiler_app.analysis.frames import JobData
from profiler_app.insights.pure.rules.base import RuleResult, RuleSpec, TimeRange
from profiler_app.insights.pure.rules.bottlenecks import CPU_BOTTLENECK, IO_BOTTLENECK
from profiler_app.insights.pure.rules.memory_balance import GPU_MEMORY_INCREASE, LOAD_BALANCING
from profiler_app.insights.pure.rules.overview import (
    OVERALL_FRAMEWORK_METRICS,
    OVERALL_SYSTEM_USAGE,
)
from profiler_app.insights.pure.rules.recommendations import RECOMMENDATIONS
from profiler_app.insights.pure.rules.steps import MAX_INITIALIZATION_TIME, STEP_OUTLIER
from profiler_app.insights.pure.rules.utilization import BATCH_SIZE, LOW_GPU_UTILIZATION

__all__ = [
    "PARAMETER_GROUPS",
    "RULES",
    "RuleResult",
    "RuleSpec",
    "TimeRange",
    "evaluate_rules",
    "params_from_overrides",
]

RULES: dict[str, RuleSpec] = {
    spec.name: spec
    for spec in (
        BATCH_SIZE,
        CPU_BOTTLENECK,
        GPU_MEMORY_INCREASE,
        IO_BOTTLENECK,
        LOAD_BALANCING,
        LOW_GPU_UTILIZATION,
        OVERALL_SYSTEM_USAGE,
        MAX_INITIALIZATION_TIME,
        OVERALL_FRAMEWORK_METRICS,
        STEP_OUTLIER,
    )
}


# Every group of per-job parameters: the system rules', the trace recommendations', then the
# trace analyses' cut-offs. Each has its parameter dataclass (``params``) and a one-line
# ``summary``.
PARAMETER_GROUPS: dict[str, RuleSpec | AnalysisParameters] = {
    **RULES,
    **RECOMMENDATIONS,
    **ANALYSIS_PARAMETERS,
}


def _coerce(key: str, kind: str, value: Any) -> Any:
    """``value`` as the parameter's declared type (forms and query strings send text)."""
    if kind == "str | None":  # StepOutlier's mode
        return None if value in (None, "", "None") else str(value).upper()
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be a number, not {value!r}") from None
    if kind == "int":
        if not number.is_integer():
            raise ValueError(f"{key} must be a whole number, not {value!r}")
        return int(number)
    return number


def params_from_overrides(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Group (rule or analysis) name -> parameter object: the defaults, with
    ``<Group>_<param>`` overrides applied.

    Raises ValueError naming the key for an unknown group or parameter or an unusable value.
    """
    changes: dict[str, dict[str, Any]] = {name: {} for name in PARAMETER_GROUPS}
    for key, value in (overrides or {}).items():
        group, _, param = key.partition("_")
        spec = PARAMETER_GROUPS.get(group)
        if spec is None:
            raise ValueError(
                f"{key}: unknown rule or analysis {group!r}; they are {', '.join(PARAMETER_GROUPS)}"
            )
        fields = {f.name: str(f.type) for f in dataclasses.fields(spec.params)}
        if param not in fields:
            raise ValueError(
                f"{key}: {group} has no parameter {param!r}; it has {', '.join(fields)}"
            )
        changes[group][param] = _coerce(key, fields[param], value)
    return {name: spec.params(**changes[name]) for name, spec in PARAMETER_GROUPS.items()}


def evaluate_rules(job: JobData, params: Mapping[str, Any] | None = None) -> list[RuleResult]:
    """Every rule's result, in ProfilerReport order (``params`` from ``params_from_overrides``)."""
    chosen = params if params is not None else params_from_overrides()
    return [spec.judge(job, chosen[name]) for name, spec in RULES.items()]
