import type { RuleResult } from "../../api/insights";

type Ordered = Pick<RuleResult, "rule" | "status"> & { caused_by?: string | null };

/** Rules with a finding first, those another finding names as its cause before the rest (the
 * pageable copies before the under-used GPU they starve), then the others; each group in the
 * order the report gives. */
export function issuesFirst<R extends Ordered>(rules: readonly R[]): R[] {
  const found = rules.filter((rule) => rule.status === "issue_found");
  const causes = new Set(found.map((rule) => rule.caused_by).filter(Boolean));
  return [
    ...found.filter((rule) => causes.has(rule.rule)),
    ...found.filter((rule) => !causes.has(rule.rule)),
    ...rules.filter((rule) => rule.status !== "issue_found"),
  ];
}
