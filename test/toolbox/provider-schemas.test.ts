import { describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { encodeTool, toAnthropicTools, toGenericTools, toOpenAITools, toVercelAITools, type ToolProvider } from "../../src/toolbox/provider-schemas.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { expectGolden, goldenJson } from "./golden.ts";
import { chainTool, oddNameTool, searchTool, sendEmailTool, shellProviderDefined, webSearchHosted } from "./sample-tools.ts";
import { thrown } from "../support/thrown.ts";

const ENCODERS: Record<ToolProvider, (tools: Iterable<AnyTool>) => unknown> = {
  openai: toOpenAITools,
  anthropic: toAnthropicTools,
  vercel: toVercelAITools,
  generic: toGenericTools,
};

const CASES: Record<string, () => AnyTool[]> = {
  "local-tools": () => [searchTool, sendEmailTool],
  "hosted-tool": () => [webSearchHosted],
  "provider-defined-tool": () => [shellProviderDefined],
  "mixed-with-chain-tool": () => [chainTool(), searchTool, webSearchHosted, shellProviderDefined],
};

describe("provider encodings (golden)", () => {
  for (const [provider, encode] of Object.entries(ENCODERS)) {
    for (const [name, tools] of Object.entries(CASES)) {
      it(`${provider}: ${name}`, () => {
        expectGolden(`providers/${provider}/${name}.json`, goldenJson(encode(tools())));
      });
    }
  }
});

describe("provider encodings (rules)", () => {
  it("drops a hosted tool for a provider without a spec, and reports it", () => {
    const drops: string[] = [];
    const out = toVercelAITools([webSearchHosted, searchTool], { onDrop: (tool, reason) => drops.push(`${tool.name}: ${reason}`) });
    expect(Object.keys(out)).toEqual(["search_docs"]);
    expect(drops).toEqual(['web_search: "web_search" runs at a provider and has no providerSpecs.vercel.']);
    expect(toGenericTools([webSearchHosted])).toEqual([]);
  });

  it("sends a provider-defined tool's spec verbatim", () => {
    expect(toOpenAITools([shellProviderDefined])).toEqual([{ type: "local_shell" }]);
    expect(toOpenAITools([shellProviderDefined])[0]).toBe(shellProviderDefined.providerSpecs.openai);
    expect(toAnthropicTools([shellProviderDefined])).toEqual([]);
  });

  it("ignores inherited keys of providerSpecs", () => {
    const specs = Object.create({ openai: { type: "inherited" } }) as Record<string, never>;
    expect(encodeTool({ name: "h", description: "d", providerSpecs: specs }, "openai").ok).toBe(false);
  });

  it("drops local tools whose names OpenAI and Anthropic reject, keeping them elsewhere", () => {
    const drops: string[] = [];
    expect(toOpenAITools([oddNameTool], { onDrop: (tool) => drops.push(tool.name) })).toEqual([]);
    expect(toAnthropicTools([oddNameTool], { onDrop: (tool) => drops.push(tool.name) })).toEqual([]);
    expect(drops).toEqual(["odd-name.v2", "odd-name.v2"]);
    expect(Object.keys(toVercelAITools([oddNameTool]))).toEqual(["odd-name.v2"]);
    expect(toGenericTools([oddNameTool])).toHaveLength(1);
    const dashed = defineTool({ name: "read-file", description: "d", inputSchema: { type: "object" }, execute: () => 1 });
    expect(toOpenAITools([dashed])).toHaveLength(1);
  });

  it("accepts a Toolbox (all of it, deferred tools included) or an array", () => {
    const deferred = defineTool({ name: "later", description: "d", deferLoading: true, inputSchema: { type: "object" }, execute: () => 1 });
    const box = new Toolbox([searchTool, deferred]);
    expect(toOpenAITools(box)).toEqual(toOpenAITools([searchTool, deferred]));
    expect(toOpenAITools(box)).toHaveLength(2);
  });

  it("keeps a __proto__ tool name as a record key, not a prototype", () => {
    const odd = defineTool({ name: "__proto__", description: "d", inputSchema: { type: "object" }, execute: () => 1 });
    const out = toVercelAITools([odd]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(["__proto__"]);
  });
});

describe("encoders refuse what is not a list of tools", () => {
  for (const [provider, encode] of Object.entries(ENCODERS)) {
    const callee = encode.name;
    it(`${provider}: ${callee}() refuses one tool, null and non-lists with ARGUMENT_INVALID, never a TypeError`, () => {
      const one = thrown(() => encode(searchTool as never));
      expect(one).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "tools" } });
      expect(one.message).toBe(`${callee}() takes an array of tools (defineTool(...)); got one tool ("search_docs"); wrap it in an array: ${callee}([tool]).`);
      for (const [tools, got] of [
        [null, "got null."],
        [undefined, "got undefined."],
        ["search_docs", "got a string."],
        [{}, "got an object that is not iterable."],
      ] as const) {
        const error = thrown(() => encode(tools as never));
        expect(error).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "tools" } });
        expect(error.message).toBe(`${callee}() takes an array of tools (defineTool(...)); ${got}`);
      }
    });
  }
});
