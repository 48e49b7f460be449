import { type FormEvent, useState } from "react";
import { useMe } from "../../api/auth";
import { type Parameters, type RuleParameters, useSaveOverrides } from "../../api/insights";
import type { TrainingJob } from "../../api/types";
import { ErrorAlert } from "../../components/Feedback";
import { canChange } from "../../lib/jobs";
import { formValues, overridesAfterEdit } from "./overrides";

/** Every rule's and analysis's parameters, each in a collapsible form; saving re-runs them. */
export function ParametersForms({ job, parameters }: { job: TrainingJob; parameters: Parameters }) {
  const me = useMe();
  const mayChange = canChange(job, me.data);
  return (
    <section className="card">
      <h2>Rule and analysis parameters</h2>
      <p className="muted">
        Change a rule's thresholds or an analysis's cut-offs for this job (keys as in
        ProfilerReport, e.g. CPUBottleneck_threshold or KernelLaunchStatistics_runtime_cutoff).
      </p>
      {!mayChange && (
        <p className="notice" role="note">
          Only the job's owner ({job.owner ?? "nobody"}) or an administrator can change them.
        </p>
      )}
      {parameters.rules.map((rule) => (
        <RuleForm
          key={rule.rule}
          jobId={job.id}
          rule={rule}
          overrides={parameters.overrides}
          readOnly={!mayChange}
        />
      ))}
    </section>
  );
}

function RuleForm({
  jobId,
  rule,
  overrides,
  readOnly,
}: {
  jobId: number;
  rule: RuleParameters;
  overrides: Parameters["overrides"];
  readOnly: boolean;
}) {
  const [values, setValues] = useState(() => formValues(rule));
  const save = useSaveOverrides(jobId);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(overridesAfterEdit(overrides as Record<string, string | number>, rule, values));
  };
  return (
    <details className="rule-form">
      <summary>{rule.rule}</summary>
      <form onSubmit={submit} aria-label={`${rule.rule} parameters`}>
        <div className="rule-form-fields">
          {rule.parameters.map((p) => (
            <label key={p.name} className="field field-narrow">
              <span>{p.name}</span>
              <input
                name={p.key}
                value={values[p.name] ?? ""}
                placeholder={p.default == null ? "none" : String(p.default)}
                disabled={readOnly}
                onChange={(e) => setValues({ ...values, [p.name]: e.target.value })}
              />
            </label>
          ))}
        </div>
        {save.isError && <ErrorAlert error={save.error} />}
        {!readOnly && (
          <div className="form-actions">
            <button type="submit" className="btn btn-primary btn-small" disabled={save.isPending}>
              {save.isPending ? "Saving…" : `Save and re-run`}
            </button>
            {save.isSuccess && (
              <span className="text-success">Saved; the rules are re-running.</span>
            )}
          </div>
        )}
      </form>
    </details>
  );
}
