import type { Overrides, RuleParameters } from "../../api/insights";

/** Form text of each parameter of a rule: its current value ("" for "none"). */
export function formValues(rule: RuleParameters): Record<string, string> {
  return Object.fromEntries(
    rule.parameters.map((p) => [p.name, p.value == null ? "" : String(p.value)]),
  );
}

/**
 * The job's overrides after saving one rule's form: that rule's keys are replaced by the values
 * that differ from their defaults; other rules' overrides stay.
 */
export function overridesAfterEdit(
  current: Overrides,
  rule: RuleParameters,
  values: Record<string, string>,
): Overrides {
  const prefix = `${rule.rule}_`;
  const kept = Object.entries(current).filter(([key]) => !key.startsWith(prefix));
  const changed = rule.parameters
    .filter((p) => (values[p.name] ?? "").trim() !== (p.default == null ? "" : String(p.default)))
    .map((p) => [p.key, (values[p.name] ?? "").trim()] as const);
  return Object.fromEntries([...kept, ...changed]);
}
