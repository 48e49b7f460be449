import type { RuleResult } from "../../api/insights";

/** Rules with a finding first, then the rest, each group in the order the report gives. */
export function issuesFirst<R extends Pick<RuleResult, "status">>(rules: readonly R[]): R[] {
  const found = rules.filter((rule) => rule.status === "issue_found");
  return [...found, ...rules.filter((rule) => rule.status !== "issue_found")];
}
