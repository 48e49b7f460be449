"""Group-and-aggregate queries answered from each part's event totals instead of its events.

At ingest every part gets ``totals.parquet`` (``traces.store_layout.TOTALS_FILE``): one row per
(track, kind, name, device, stream, memcpy_kind, collective, captured) with the count, sum,
minimum and maximum of ``dur_ns``, ``self_ns`` and ``bytes`` (``TOTALS_SELECT``, computed
through the console's own ``events`` view, so a total equals what the same query over the
events gives). A part holds millions of events but a few thousand such rows.

``rewrite`` reads the query's syntax tree (DuckDB's ``json_serialize_sql``) and, when the query
only filters and groups on those dimensions and aggregates with count, sum, min, max or avg,
returns the same query over the totals: ``count(*)`` becomes ``sum(n)``, ``sum(dur_ns)`` the
sum of the per-row sums, ``avg(dur_ns)`` their ratio. Anything else (a time filter, a join, a
subquery, a window, another aggregate, DISTINCT inside an aggregate, FILTER…) is not rewritten
and reads the events as before: the rewrite is an optimisation, never a change of answer.
"""

from __future__ import annotations

import json
from typing import Any

DIMENSIONS = ("track", "kind", "name", "device", "stream", "memcpy_kind", "collective", "captured")
# The per-part columns the console adds to every row, dimensions too.
_PART_DIMENSIONS = ("part", "node", "rank")
# Measure -> the totals column counting its non-null values.
MEASURES = {"dur_ns": "n", "self_ns": "n", "bytes": "bytes_n"}
# Columns of the totals that are no column of the events: a query naming one means something
# else (a select alias) and is read from the events.
_TOTALS_ONLY = {"n", "bytes_n", *(f"{m}_{end}" for m in MEASURES for end in ("min", "max"))}
TOTALS_SELECT = (
    f"SELECT {', '.join(DIMENSIONS)}, count(*) AS n, "
    + ", ".join(
        f"sum({m})::BIGINT AS {m}, min({m}) AS {m}_min, max({m}) AS {m}_max" for m in MEASURES
    )
    + ", count(bytes) AS bytes_n FROM events GROUP BY ALL"
)
# The views a rewritten query reads instead of the events (``console`` creates them).
TOTALS_VIEWS = {"events": "_event_totals", "kernels": "_kernel_totals"}

# Columns never null in the events view: count(column) counts every row.
_NEVER_NULL = {"part", "node", "rank", "track", "kind", "captured", "dur_ns", "self_ns"}
# Expression classes whose meaning does not depend on how many events a row stands for.
_PLAIN_CLASSES = {
    "COLUMN_REF",
    "CONSTANT",
    "FUNCTION",
    "COMPARISON",
    "CONJUNCTION",
    "OPERATOR",
    "CASE",
    "CAST",
    "BETWEEN",
    "COLLATE",
    "TYPE",
}
_COUNTS = {"count_star", "count"}
_AGGREGATES = _COUNTS | {"sum", "min", "max", "avg", "mean"}
# Built-in macros that are plain scalar functions (others, like geomean, aggregate).
_SCALAR_MACROS = {"if", "nullif", "split_part", "fdiv", "date_add", "array_to_string"}


class _NotRewritable(Exception):
    pass


def scalar_functions(con) -> frozenset[str]:
    """Names of the connection's scalar functions (a query calling anything else, an
    aggregate or a table function, is read from the events)."""
    rows = con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = 'scalar'"
    ).fetchall()
    return frozenset(name.lower() for (name,) in rows) | _SCALAR_MACROS


def rewrite(
    con, statement: str, view_columns: set[str], output_names: list[str], scalars: frozenset[str]
) -> str | None:
    """``statement`` over the totals views, or None when it must read the events.
    ``view_columns``: the columns of the ``events`` view; ``output_names``: the statement's
    result columns as DuckDB named them (kept, so the answer looks the same)."""
    tree = _syntax_tree(con, statement)
    if tree.get("error") or len(tree["statements"]) != 1:
        return None
    try:
        node = _Rewriter(con, view_columns, scalars).select(tree["statements"][0]["node"])
    except _NotRewritable:
        return None
    for item, name in zip(node["select_list"], output_names, strict=True):
        item["alias"] = item["alias"] or name
    tree["statements"][0]["node"] = node
    [(sql,)] = con.execute("SELECT json_deserialize_sql(?::JSON)", [json.dumps(tree)]).fetchall()
    return sql


class _Rewriter:
    def __init__(self, con, view_columns: set[str], scalars: frozenset[str]) -> None:
        self.con = con
        self.view_columns = view_columns
        self.scalars = scalars
        self.table_names: set[str] = set()
        self.aggregated = False

    def select(self, node: dict) -> dict:
        source = node.get("from_table") or {}
        view = str(source.get("table_name", "")).lower()
        if (
            node.get("type") != "SELECT_NODE"
            or node["cte_map"]["map"]
            or node.get("sample")
            or node.get("qualify")
            or source.get("type") != "BASE_TABLE"
            or view not in TOTALS_VIEWS
            or source.get("schema_name")
            or source.get("catalog_name")
            or source.get("sample")
            or source.get("at_clause")
            or source.get("column_name_alias")
        ):
            raise _NotRewritable
        self.table_names = {view, str(source["alias"]).lower()} - {""}
        out = dict(node)
        out["from_table"] = {
            **source,
            "table_name": TOTALS_VIEWS[view],
            "qualified_name": {"path": [TOTALS_VIEWS[view]]},
            "alias": source["alias"] or view,  # ``events.name`` still names a column
        }
        for key in ("select_list", "where_clause", "group_expressions", "having"):
            out[key] = self.expression(node.get(key))
        out["modifiers"] = [self.modifier(m) for m in node["modifiers"]]
        grouped = bool(node["group_expressions"]) or node["aggregate_handling"] != (
            "STANDARD_HANDLING"
        )
        # One row per event otherwise: the totals have one per group of events.
        if not (self.aggregated or grouped):
            raise _NotRewritable
        return out

    def modifier(self, modifier: dict) -> dict:
        if modifier["type"] == "ORDER_MODIFIER":
            orders = []
            for order in modifier["orders"]:
                expression = order["expression"]
                if _is_order_by_all(expression):
                    orders.append(order)
                else:
                    orders.append({**order, "expression": self.expression(expression)})
            return {**modifier, "orders": orders}
        if modifier["type"] == "LIMIT_MODIFIER":
            return {k: self.expression(v) for k, v in modifier.items()}
        if modifier["type"] == "DISTINCT_MODIFIER" and not modifier["distinct_on_targets"]:
            return modifier
        raise _NotRewritable

    def expression(self, node: Any, in_aggregate: bool = False) -> Any:
        if isinstance(node, list):
            return [self.expression(item, in_aggregate) for item in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("class")
        if kind is None:
            return {k: self.expression(v, in_aggregate) for k, v in node.items()}
        if kind not in _PLAIN_CLASSES:
            raise _NotRewritable
        if kind == "COLUMN_REF":
            column = self.column(node)
            if column in _TOTALS_ONLY:
                raise _NotRewritable
            if column in self.view_columns and column not in (*DIMENSIONS, *_PART_DIMENSIONS):
                raise _NotRewritable  # a measure (or an unsummed column) outside an aggregate
            return node
        if kind == "FUNCTION":
            name = str(node["function_name"]).lower()
            if node.get("schema") or node.get("catalog"):
                raise _NotRewritable
            if name in _AGGREGATES:
                if in_aggregate:
                    raise _NotRewritable
                return self.aggregate(node, name)
            if name not in self.scalars:
                raise _NotRewritable
        return {k: self.expression(v, in_aggregate) for k, v in node.items()}

    def column(self, node: dict) -> str:
        """The column a reference names (lower case); qualified only by the view itself."""
        names = [str(n).lower() for n in node["column_names"]]
        if len(names) == 2 and names[0] in self.table_names:
            return names[1]
        if len(names) != 1:
            raise _NotRewritable
        return names[0]

    def aggregate(self, node: dict, name: str) -> dict:
        if (
            node.get("distinct")
            or node.get("filter")
            or node.get("export_state")
            or node["order_bys"]["orders"]
        ):
            raise _NotRewritable
        self.aggregated = True
        arguments = [a["expression"] for a in node["arguments"]]
        if not arguments:
            if name not in _COUNTS:
                raise _NotRewritable
            return self.totals_expression(node, "CAST(coalesce(sum(n), 0) AS BIGINT)")
        if len(arguments) != 1 or arguments[0].get("class") != "COLUMN_REF":
            raise _NotRewritable
        column = self.column(arguments[0])
        if name == "count":
            if column in _NEVER_NULL:
                return self.totals_expression(node, "CAST(coalesce(sum(n), 0) AS BIGINT)")
            if column == "bytes":
                return self.totals_expression(node, "CAST(coalesce(sum(bytes_n), 0) AS BIGINT)")
            raise _NotRewritable
        if column in MEASURES:
            sql = {
                "sum": f"sum({column})",
                "min": f"min({column}_min)",
                "max": f"max({column}_max)",
                "avg": f"sum({column}) / sum({MEASURES[column]})",
                "mean": f"sum({column}) / sum({MEASURES[column]})",
            }[name]
            return self.totals_expression(node, sql)
        if name in ("min", "max") and column in (*DIMENSIONS, *_PART_DIMENSIONS):
            return node  # the least name over the groups is the least over their events
        raise _NotRewritable

    def totals_expression(self, node: dict, sql: str) -> dict:
        tree = _syntax_tree(self.con, f"SELECT {sql}")
        expression = tree["statements"][0]["node"]["select_list"][0]
        expression["alias"] = node["alias"]
        return expression


def _syntax_tree(con, sql: str) -> dict:
    [(tree,)] = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()
    return json.loads(tree)


def _is_order_by_all(expression: dict) -> bool:
    return (
        expression.get("class") == "STAR"
        and expression.get("columns") is True
        and expression.get("expr") is None
        and not expression.get("relation_name")
        and not expression.get("exclude_list")
        and not expression.get("replace_list")
    )
