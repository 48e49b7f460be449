"""The SQL console's pure code: the sandboxed DuckDB over a job's stores (console) and its
answer streamed within its limits (answer)."""
