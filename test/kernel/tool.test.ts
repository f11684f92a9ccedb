import { describe, expect, it } from "vitest";
import { brandChainTool, isChainTool, isHostedTool, isLocalTool, isProviderDefinedTool } from "../../src/kernel/index.ts";

const local = { name: "a", description: "", inputSchema: { type: "object" as const }, execute: () => 1 };
const hosted = { name: "web_search", description: "", providerSpecs: { openai: { type: "web_search_preview" } } };
const providerDefined = { ...hosted, name: "shell", callTypes: ["shell_call"], handleCall: async () => ({ content: [] }) };

describe("tool guards", () => {
  it("tells the three kinds apart", () => {
    expect([isLocalTool(local), isHostedTool(local), isProviderDefinedTool(local)]).toEqual([true, false, false]);
    expect([isLocalTool(hosted), isHostedTool(hosted), isProviderDefinedTool(hosted)]).toEqual([false, true, false]);
    // Provider-defined tools also carry providerSpecs: check them first.
    expect(isProviderDefinedTool(providerDefined)).toBe(true);
    expect(isLocalTool(providerDefined)).toBe(false);
  });

  it("brands the chain tool", () => {
    const tool = { ...local };
    expect(isChainTool(tool)).toBe(false);
    brandChainTool(tool);
    expect(isChainTool(tool)).toBe(true);
    expect(isChainTool(null)).toBe(false);
  });
});
