import { describe, expect, it } from "vitest";
import type { RuleParameters } from "../../api/insights";
import { formValues, overridesAfterEdit } from "./overrides";

const cpu: RuleParameters = {
  rule: "CPUBottleneck",
  description: "",
  parameters: [
    { name: "threshold", key: "CPUBottleneck_threshold", type: "float", default: 50, value: 40 },
    { name: "patience", key: "CPUBottleneck_patience", type: "int", default: 100, value: 100 },
  ],
};

describe("rule overrides", () => {
  it("shows the current values as text", () => {
    expect(formValues(cpu)).toEqual({ threshold: "40", patience: "100" });
  });

  it("keeps only values that differ from the defaults, and other rules' overrides", () => {
    const current = { CPUBottleneck_threshold: 40, StepOutlier_stddev: 3 };
    expect(overridesAfterEdit(current, cpu, { threshold: "50", patience: "20" })).toEqual({
      StepOutlier_stddev: 3,
      CPUBottleneck_patience: "20",
    });
  });
});
