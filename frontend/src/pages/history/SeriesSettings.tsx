import { useState } from "react";
import { type Series, type SeriesRun, useUpdateSeries } from "../../api/history";
import { ErrorAlert } from "../../components/Feedback";

/** A series' regression settings: its baseline, threshold, significance, smallest cause and
 * webhook; read-only for anyone but its owner or staff. */
export function SettingsCard({ series, runs }: { series: Series; runs: SeriesRun[] }) {
  const update = useUpdateSeries(series.id);
  const [draft, setDraft] = useState(() => settingsOf(series));
  const disabled = !series.can_change;
  const field = (key: "step_threshold_pct" | "alpha" | "cause_min_pct", label: string) => (
    <label>
      {label}{" "}
      <input
        type="number"
        step="any"
        value={draft[key]}
        disabled={disabled}
        onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
      />
    </label>
  );
  return (
    <section className="card panel history-settings" aria-label="Series settings">
      <h3>Settings of {series.name}</h3>
      <p className="muted">
        {disabled
          ? `Only ${series.owner ?? "the series' owner"} or staff change these.`
          : "A run regresses when its median step grew by the threshold and the test is significant."}
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          update.mutate({
            baseline: draft.baseline === "" ? null : Number(draft.baseline),
            step_threshold_pct: Number(draft.step_threshold_pct),
            alpha: Number(draft.alpha),
            cause_min_pct: Number(draft.cause_min_pct),
            webhook_url: draft.webhook_url,
          });
        }}
      >
        <label>
          Baseline{" "}
          <select
            aria-label="Baseline"
            value={draft.baseline}
            disabled={disabled}
            onChange={(e) => setDraft({ ...draft, baseline: e.target.value })}
          >
            <option value="">Previous run that passed</option>
            {runs.map((run) => (
              <option key={run.job} value={run.job}>
                {run.job_name}
              </option>
            ))}
          </select>
        </label>
        {field("step_threshold_pct", "Threshold (%)")}
        {field("alpha", "Significance level")}
        {field("cause_min_pct", "Smallest cause (% of a step)")}
        <label>
          Webhook URL{" "}
          <input
            type="url"
            value={draft.webhook_url}
            disabled={disabled}
            placeholder="https://hooks.slack.com/…"
            onChange={(e) => setDraft({ ...draft, webhook_url: e.target.value })}
          />
        </label>
        {!disabled && (
          <button type="submit" disabled={update.isPending}>
            Save
          </button>
        )}
        {update.isError && <ErrorAlert error={update.error} />}
      </form>
    </section>
  );
}

function settingsOf(series: Series) {
  return {
    baseline:
      series.baseline === null || series.baseline === undefined ? "" : String(series.baseline),
    step_threshold_pct: String(series.step_threshold_pct ?? ""),
    alpha: String(series.alpha ?? ""),
    cause_min_pct: String(series.cause_min_pct ?? ""),
    webhook_url: series.webhook_url ?? "",
  };
}
