import { describe, expect, it } from "vitest";
import { isToolRisk, requiresApproval, riskRank, TOOL_RISKS } from "../../src/kernel/index.ts";

describe("ToolRisk", () => {
  it("orders safe < high < critical", () => {
    expect(TOOL_RISKS.map(riskRank)).toEqual([0, 1, 2]);
  });

  it("critical always needs approval, whatever the line", () => {
    for (const line of TOOL_RISKS) expect(requiresApproval("critical", line)).toBe(true);
  });

  it("high needs approval only above the line", () => {
    expect(requiresApproval("high", "safe")).toBe(true);
    expect(requiresApproval("high", "high")).toBe(false);
    expect(requiresApproval("high", "critical")).toBe(false);
    expect(requiresApproval("safe", "safe")).toBe(false);
  });

  it("recognises risk values", () => {
    expect(isToolRisk("high")).toBe(true);
    expect(isToolRisk("medium")).toBe(false);
    expect(isToolRisk(undefined)).toBe(false);
  });
});
