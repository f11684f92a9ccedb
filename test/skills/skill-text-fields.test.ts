import { describe, expect, it } from "vitest";
import { TOOL_NAME_PATTERN } from "../../src/index.ts";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { MAX_SKILL_DESCRIPTION_CHARS, defineSkill, type SkillDefinition } from "../../src/skills/skill.ts";

function refusal(patch: Partial<SkillDefinition>): { message: string; details: Readonly<Record<string, unknown>> } {
  try {
    defineSkill({ ...base, ...patch });
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") return error;
    throw error;
  }
  throw new Error("did not throw");
}

const base = { name: "csv-report", description: "Report on a CSV.", instructions: "Read it first." };

describe("defineSkill description and version text", () => {
  it(`bounds the description at MAX_SKILL_DESCRIPTION_CHARS (${MAX_SKILL_DESCRIPTION_CHARS}) characters`, () => {
    expect(MAX_SKILL_DESCRIPTION_CHARS).toBe(4096);
    expect(defineSkill({ ...base, description: "d".repeat(MAX_SKILL_DESCRIPTION_CHARS) }).description).toHaveLength(4096);
    const error = refusal({ description: "d".repeat(1_000_000) });
    expect(error.details).toEqual({ field: "description", chars: 1_000_000, maxChars: 4096 });
    expect(error.message).toBe(
      'Skill "csv-report": description is 1000000 characters, over the 4096 a description may hold: say in one line what the skill is for, and put the detail in its instructions.',
    );
  });

  it.each([
    ["NUL", "a\u0000b", 1, 0x0, "a control character"],
    ["an ANSI escape", "\u001b[31mred\u001b[0m", 0, 0x1b, "a control character"],
    ["DEL", "a\u007f", 1, 0x7f, "a control character"],
    ["a C1 control (CSI)", "a\u009b2J", 1, 0x9b, "a control character"],
    ["a carriage return", "a\rb", 1, 0x0d, "a line break"],
    ["a newline", "a\nb", 1, 0x0a, "a line break"],
    ["U+2028", "a\u2028b", 1, 0x2028, "a line break"],
    ["a right-to-left override", "invoice \u202Etxt.exe", 8, 0x202e, "a bidi control"],
    ["a bidi isolate", "a\u2066b", 1, 0x2066, "a bidi control"],
  ])("refuses %s in the description, naming it and where", (_label, description, index, codePoint, kind) => {
    const error = refusal({ description });
    expect(error.details).toEqual({ field: "description", index, codePoint });
    const hex = `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
    expect(error.message).toBe(
      `Skill "csv-report": description holds ${hex} (${kind}) at character ${index + 1}; control characters other than tab, line breaks and bidi controls are refused, since the description goes into model prompts and terminal output.`,
    );
  });

  it("refuses the same characters in the version, and keeps tabs and other text", () => {
    expect(refusal({ version: "1.0\u001b[2J" }).details).toEqual({ field: "version", index: 3, codePoint: 0x1b });
    const skill = defineSkill({ ...base, description: "Tab\there; café, 日本語, emoji 😀, C# and \u00a0", version: "1.0.0-β" });
    expect(skill.description).toBe("Tab\there; café, 日本語, emoji 😀, C# and \u00a0");
  });
});

describe("defineSkill allowedTools names", () => {
  it("refuses an item that is not a tool name, naming it", () => {
    for (const item of ["a # b", '"a"', "read csv", "1st", "a/b", "x".repeat(65)]) {
      const error = refusal({ allowedTools: ["ok", item] });
      expect(error.details).toEqual({ field: "allowedTools", item });
      expect(error.message).toBe(`Skill "csv-report": allowedTools item ${JSON.stringify(item)} is not a tool name: each item is "*" or matches ${String(TOOL_NAME_PATTERN)}.`);
    }
  });

  it("clips a long item in the message and details", () => {
    const error = refusal({ allowedTools: ["a b".repeat(100_000)] });
    expect(String(error.details.item).length).toBeLessThan(200);
    expect(error.message.length).toBeLessThan(400);
  });

  it("accepts *, and every name TOOL_NAME_PATTERN accepts", () => {
    expect(defineSkill({ ...base, allowedTools: ["*", "_x", "mcp.server-tool_1", "A".repeat(64)] }).allowedTools).toHaveLength(4);
  });

  it("checks items by the one TOOL_NAME_PATTERN tools are checked by", () => {
    const message = refusal({ allowedTools: ["-"] }).message;
    expect(message).toContain(String(TOOL_NAME_PATTERN));
  });
});
