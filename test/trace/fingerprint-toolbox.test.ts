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
