import { describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { defineSkill } from "../../src/skills/skill.ts";

function fieldOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") return error.details.field;
    throw error;
  }
  throw new Error("did not throw");
}

const base = { name: "csv-report", description: "Report on a CSV.", instructions: "Read it first." };

describe("defineSkill", () => {
  it("fills defaults and freezes", () => {
    const skill = defineSkill(base);
    expect(skill).toEqual({ ...base, allowedTools: [], version: "0.0.0" });
    expect(Object.isFrozen(skill)).toBe(true);
    expect(Object.isFrozen(skill.allowedTools)).toBe(true);
    expect("path" in skill).toBe(false);
  });

  it("refuses a field a skill does not have, naming the one it is close to (a misspelt allowedTools would drop the tools)", () => {
    let error: unknown;
    try {
      defineSkill({ ...base, allowedtools: ["send"] } as never);
    } catch (thrown) {
      error = thrown;
    }
    expect(isChainRuntimeError(error) && [error.code, error.details]).toEqual(["SKILL_INVALID", { field: "allowedtools" }]);
    expect((error as Error).message).toContain('Skill "csv-report": defineSkill() has no field "allowedtools"; did you mean allowedTools?');
    expect(fieldOf(() => defineSkill({ ...base, license: "MIT" } as never))).toBe("license");
  });

  it("keeps given fields and de-duplicates allowedTools", () => {
    const skill = defineSkill({ ...base, allowedTools: ["a", "b", "a"], version: "1.2.0", path: "/skills/csv" });
    expect(skill).toMatchObject({ allowedTools: ["a", "b"], version: "1.2.0", path: "/skills/csv" });
  });

  it.each([
    ["name", { name: "" }],
    ["name", { name: "-leading" }],
    ["name", { name: "has space" }],
    ["description", { description: 1 }],
    ["instructions", { instructions: undefined }],
    ["version", { version: "" }],
    ["version", { version: " \t" }],
    ["allowedTools", { allowedTools: "a,b" }],
    ["allowedTools", { allowedTools: ["a", ""] }],
    ["allowedTools", { allowedTools: ["a", "  "] }],
    ["path", { path: 3 }],
  ])("throws SKILL_INVALID naming %s", (field, patch) => {
    expect(fieldOf(() => defineSkill({ ...base, ...patch } as never))).toBe(field);
  });

  it("refuses a non-object", () => {
    expect(fieldOf(() => defineSkill(null as never))).toBe("skill");
  });
});
