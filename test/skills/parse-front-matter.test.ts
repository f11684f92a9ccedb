import { describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { parseCommaList, parseFrontMatter } from "../../src/skills/parse-front-matter.ts";

function lineOf(text: string): unknown {
  try {
    parseFrontMatter(text, "SKILL.md");
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "SKILL_INVALID") {
      expect(error.message).toMatch(new RegExp(`^SKILL\\.md:${String(error.details.line)}: `));
      return error.details.line;
    }
    throw error;
  }
  throw new Error("did not throw");
}

describe("parseFrontMatter", () => {
  it("reads key: value lines and the body", () => {
    const { fields, body } = parseFrontMatter("---\nname: a\n\n# note\ndescription:  Two words  \nempty:\n---\nBody\ntext\n", "f");
    expect(Object.fromEntries([...fields].map(([key, field]) => [key, field.value]))).toEqual({ name: "a", description: "Two words", empty: "" });
    expect(fields.get("description")?.line).toBe(5);
    expect(body).toBe("Body\ntext\n");
  });

  it("handles CRLF, a BOM and quoted values with colons", () => {
    const { fields, body } = parseFrontMatter('\uFEFF---\r\nname: "a: b"\r\nv: \'1.0\'\r\n---\r\nx', "f");
    expect(fields.get("name")?.value).toBe("a: b");
    expect(fields.get("v")?.value).toBe("1.0");
    expect(body).toBe("x");
  });

  it("reports the line of each fault", () => {
    expect(lineOf("name: a\n---\n")).toBe(1);
    expect(lineOf("---\nname: a\nnot a pair\n---\n")).toBe(3);
    expect(lineOf("---\nmeta:\n  nested: 1\n---\n")).toBe(3);
    expect(lineOf("---\nname: a\nname: b\n---\n")).toBe(3);
    expect(lineOf("---\nname: a\n")).toBe(3);
  });
});

describe("parseCommaList", () => {
  it("splits, trims, unquotes and drops empties", () => {
    expect(parseCommaList("a, b ,c,,")).toEqual(["a", "b", "c"]);
    expect(parseCommaList('[ "a", b ]')).toEqual(["a", "b"]);
    expect(parseCommaList("")).toEqual([]);
    expect(parseCommaList('[" a ", " ", \'\t\']')).toEqual(["a"]);
  });
});
