import { describe, expect, it } from "vitest";
import { digestJson, type AnyTool, type Tool } from "../../src/kernel/index.ts";
import { fingerprintToolbox } from "../../src/trace/fingerprint-toolbox.ts";

function tool(name: string, overrides: Partial<Tool> = {}): Tool {
  return {
    name,
    description: `the ${name} tool`,
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
    execute: () => "ok",
    ...overrides,
  };
}

describe("fingerprintToolbox", () => {
  it("lists local tools by name with their risk (safe by default) and a schema digest", () => {
    const fingerprint = fingerprintToolbox([tool("zeta", { risk: "critical" }), tool("alpha")]);
    expect(fingerprint.tools.map(({ name, risk }) => [name, risk])).toEqual([
      ["alpha", "safe"],
      ["zeta", "critical"],
    ]);
    expect(fingerprint.tools[0]?.schemaDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprint.digest).toBe(digestJson(fingerprint.tools));
  });

  it("does not depend on the order of the tools", () => {
    expect(fingerprintToolbox([tool("a"), tool("b")])).toEqual(fingerprintToolbox([tool("b"), tool("a")]));
  });

  it("changes when a schema, description or risk changes", () => {
    const base = fingerprintToolbox([tool("a")]).digest;
    expect(fingerprintToolbox([tool("a", { description: "other" })]).digest).not.toBe(base);
    expect(fingerprintToolbox([tool("a", { inputSchema: { type: "object" } })]).digest).not.toBe(base);
    expect(fingerprintToolbox([tool("a", { outputSchema: { type: "string" } })]).digest).not.toBe(base);
    expect(fingerprintToolbox([tool("a", { risk: "high" })]).digest).not.toBe(base);
  });

  it("follows the same tool object when its description, schema or risk is replaced (digests are kept per tool)", () => {
    const a = tool("a");
    const fresh = (): string => fingerprintToolbox([tool("a", { ...a })]).digest;
    const first = fingerprintToolbox([a]).digest;
    expect(fingerprintToolbox([a]).digest).toBe(first);
    const mutable = a as { -readonly [K in keyof Tool]: Tool[K] };
    mutable.inputSchema = { type: "object", properties: { other: { type: "number" } } };
    expect(fingerprintToolbox([a]).digest).not.toBe(first);
    expect(fingerprintToolbox([a]).digest).toBe(fresh());
    mutable.description = "changed";
    expect(fingerprintToolbox([a]).digest).toBe(fresh());
    mutable.outputSchema = { type: "string" };
    expect(fingerprintToolbox([a]).digest).toBe(fresh());
    mutable.risk = "high";
    expect(fingerprintToolbox([a]).digest).toBe(fresh());
  });

  it("returns new objects each call, so a caller that changes one changes no other fingerprint", () => {
    const tools = [tool("a"), tool("b")];
    const first = fingerprintToolbox(tools);
    (first.tools as unknown as { name: string }[])[0]!.name = "changed";
    const second = fingerprintToolbox(tools);
    expect(second.tools.map((entry) => entry.name)).toEqual(["a", "b"]);
    expect(second.digest).toBe(digestJson(second.tools));
  });

  it("gives a digest that names its list exactly, whatever the names hold", () => {
    // Field boundaries shifted between name and risk must not reuse the other list's digest.
    const one = fingerprintToolbox([tool("a1:b", { risk: "high" })]);
    const two = fingerprintToolbox([tool("a", { risk: "high" })]);
    expect(one.digest).toBe(digestJson(one.tools));
    expect(two.digest).toBe(digestJson(two.tools));
    expect(one.digest).not.toBe(two.digest);
  });

  it("leaves out hosted and provider-defined tools, which a chain cannot call", () => {
    const hosted: AnyTool = { name: "web_search", description: "hosted", providerSpecs: { openai: { type: "web_search" } } };
    const providerDefined: AnyTool = {
      name: "shell",
      description: "provider-defined",
      providerSpecs: { openai: { type: "shell" } },
      callTypes: ["shell_call"],
      handleCall: async () => ({ content: [] }),
    };
    expect(fingerprintToolbox([hosted, providerDefined, tool("a")]).tools.map((entry) => entry.name)).toEqual(["a"]);
  });
});
