"""A console answer read whole, as the API's stream would deliver it (tests compare it at once)."""

import json
from dataclasses import dataclass

from profiler_app.sql.pure.console import Limits, StorePart, open_query


@dataclass(frozen=True)
class Result:
    columns: list[str]
    types: list[str]
    rows: list[list]
    truncated: bool
    truncated_by: str | None
    note: str
    elapsed_ms: float
    read_from: str = "events"
    values_cut: bool = False


def run_query(
    parts: list[StorePart], query: str, limits: Limits | None = None, use_totals: bool = True
) -> Result:
    """The whole answer of ``query`` through the product's ``open_query``."""
    answer = open_query(parts, query, limits, use_totals)
    try:
        rows = json.loads(b"[" + b",".join(answer.json_rows()) + b"]")
    finally:
        answer.close()
    return Result(
        columns=answer.columns,
        types=answer.types,
        rows=rows,
        truncated=answer.truncated_by is not None,
        truncated_by=answer.truncated_by,
        note=answer.note,
        elapsed_ms=answer.elapsed_ms,
        read_from=answer.read_from,
        values_cut=answer.values_cut,
    )
