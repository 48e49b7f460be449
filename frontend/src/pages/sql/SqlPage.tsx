import { useMemo, useState } from "react";
import { type SqlResult, type SqlSchema, useSqlQuery, useSqlSchema } from "../../api/sql";
import type { TrainingJob } from "../../api/types";
import { type DataColumn, DataTable, Table } from "../../components/DataTable";
import { ErrorAlert, Loading } from "../../components/Feedback";
import { LoadedJobGate } from "../../components/LoadedJobGate";
import { formatBytes } from "../../lib/format";
import { isRunShortcut, resultTable } from "./sqlView";
import "./sql.css";

const FIRST_QUERY =
  "SELECT rank, kind, count(*) AS events, sum(dur_ns) AS total_ns\nFROM events\nGROUP BY rank, kind\nORDER BY rank, total_ns DESC";

export function SqlPage() {
  return (
    <>
      <h1>SQL</h1>
      <LoadedJobGate page="SQL console">{(job) => <SqlConsole job={job} />}</LoadedJobGate>
    </>
  );
}

function SqlConsole({ job }: { job: TrainingJob }) {
  const schema = useSqlSchema();
  const run = useSqlQuery(job.id);
  const [query, setQuery] = useState(FIRST_QUERY);
  const submit = (text: string) => {
    if (text.trim()) run.mutate(text);
  };
  return (
    <>
      <h2 className="job-heading">{job.name}</h2>
      <div className="sql-layout">
        <div className="sql-main">
          <section className="card" aria-label="Query">
            <label htmlFor="sql-query" className="visually-hidden">
              SQL query
            </label>
            <textarea
              id="sql-query"
              className="sql-editor"
              spellCheck={false}
              value={query}
              rows={10}
              onChange={(event) => setQuery(event.target.value)}
              onKeyDown={(event) => {
                if (isRunShortcut(event)) {
                  event.preventDefault();
                  submit(query);
                }
              }}
            />
            <div className="sql-toolbar">
              <button
                type="button"
                className="btn btn-primary"
                disabled={run.isPending}
                onClick={() => submit(query)}
              >
                {run.isPending ? "Running…" : "Run"}
              </button>
              <span className="muted">
                Ctrl+Enter runs · one read-only SELECT over this job's events
                {schema.data &&
                  ` · at most ${schema.data.max_rows.toLocaleString("en-US")} rows, ${formatBytes(schema.data.max_bytes)}, ${schema.data.timeout_s} s`}
              </span>
            </div>
            {schema.data && (
              <div className="sql-examples" aria-label="Example queries">
                <span className="muted">Examples:</span>
                {schema.data.examples.map((example) => (
                  <button
                    key={example.name}
                    type="button"
                    className="btn btn-small"
                    onClick={() => {
                      setQuery(example.query);
                      submit(example.query);
                    }}
                  >
                    {example.name}
                  </button>
                ))}
              </div>
            )}
          </section>
          {run.isError && (
            <div className="sql-error">
              <ErrorAlert error={run.error} />
            </div>
          )}
          {run.data && <Result result={run.data} jobName={job.name} />}
        </div>
        <aside className="sql-schema card" aria-label="Schema">
          <h3>Schema</h3>
          {schema.isError && <ErrorAlert error={schema.error} />}
          {schema.isPending && <Loading what="the schema" />}
          {schema.data && <SchemaReference schema={schema.data} />}
        </aside>
      </div>
    </>
  );
}

function Result({ result, jobName }: { result: SqlResult; jobName: string }) {
  const table = useMemo(() => resultTable(result.columns, result.types, result.rows), [result]);
  return (
    <>
      <p className="muted sql-status" role="status">
        {result.rows.length.toLocaleString("en-US")} {result.rows.length === 1 ? "row" : "rows"} in{" "}
        {Math.round(result.elapsed_ms).toLocaleString("en-US")} ms
        {result.read_from === "totals" && " — from each part's per-name totals"}
        {result.truncated && " — the answer was cut"}
        {result.values_cut && " — long values were cut"}
      </p>
      {(result.truncated || result.values_cut) && (
        <p className="alert alert-warning sql-cut" role="note" aria-label="Answer cut">
          {result.note}
        </p>
      )}
      {result.rows.length === 0 ? (
        <p className="muted">The query returned no rows.</p>
      ) : (
        <DataTable
          title="Result"
          rows={table.rows}
          columns={table.columns}
          fileName={`${jobName}-sql`}
          wide
        />
      )}
    </>
  );
}

const SCHEMA_COLUMNS: DataColumn<SqlSchema["views"][number]["columns"][number]>[] = [
  { key: "name", label: "Column", cell: (column) => <code>{column.name}</code> },
  { key: "type", label: "Type", className: "muted" },
  { key: "description", label: "Meaning" },
];

function SchemaReference({ schema }: { schema: SqlSchema }) {
  return (
    <>
      <p className="muted">
        Times are integer nanoseconds (start_ns and end_ns since the unix epoch). Absent values are
        NULL.
      </p>
      {schema.views.map((view) => (
        <details key={view.name} open={view.name === "events"}>
          <summary>
            <code>{view.name}</code>
          </summary>
          <p className="muted">{view.description}</p>
          <Table
            label={`Columns of ${view.name}`}
            className="sql-columns"
            rows={view.columns}
            columns={SCHEMA_COLUMNS}
            unsorted
            rowKey={(column) => column.name}
          />
        </details>
      ))}
    </>
  );
}
