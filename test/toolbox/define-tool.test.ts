import { describe, expect, it } from "vitest";
import { brandChainTool, isChainTool, isChainRuntimeError, type ToolContext } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";

const ctx: ToolContext = { signal: new AbortController().signal, callId: "c:0", check: () => {} };
const base = {
  name: "echo",
  description: "Echo.",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: ({ text }: { text: string }) => text,
} as const;

function fieldOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "TOOL_INVALID") return error.details.field;
    throw error;
  }
  throw new Error("did not throw");
}

describe("defineTool", () => {
  it("returns a tool that runs execute with its args and context, risk defaulted to safe", async () => {
    const tool = defineTool(base);
    expect(tool.name).toBe("echo");
    expect(tool.risk).toBe("safe");
    expect("deferLoading" in tool).toBe(false);
    expect(await tool.execute({ text: "hi" }, ctx)).toBe("hi");
  });

  it("keeps the optional fields it is given", () => {
    const output = { type: "object", properties: {} } as const;
    const tool = defineTool({ ...base, risk: "high", deferLoading: true, takesControl: true, outputSchema: output });
    expect(tool).toMatchObject({ risk: "high", deferLoading: true, takesControl: true, outputSchema: output });
  });

  it("returns an object brandChainTool can still mark", () => {
    const tool = defineTool({ ...base, name: "run_chain" });
    brandChainTool(tool);
    expect(isChainTool(tool)).toBe(true);
  });

  it.each([
    ["name", { name: "" }],
    ["name", { name: "1abc" }],
    ["name", { name: "has space" }],
    ["name", { name: "x".repeat(65) }],
    ["name", { name: 42 }],
    ["description", { description: undefined }],
    ["inputSchema", { inputSchema: undefined }],
    ["inputSchema", { inputSchema: { type: "string" } }],
    ["inputSchema", { inputSchema: [] }],
    ["execute", { execute: "nope" }],
    ["outputSchema", { outputSchema: "x" }],
    ["risk", { risk: "medium" }],
    ["deferLoading", { deferLoading: "yes" }],
    ["takesControl", { takesControl: 1 }],
    // A schema that refers to itself cannot be shown to the model (JSON) nor rendered.
    ["inputSchema", { inputSchema: cyclicSchema() }],
    ["outputSchema", { outputSchema: cyclicSchema() }],
  ])("throws TOOL_INVALID naming %s", (field, patch) => {
    expect(fieldOf(() => defineTool({ ...base, ...patch } as never))).toBe(field);
  });

  it("accepts names with dots, dashes and 64 characters", () => {
    expect(defineTool({ ...base, name: "mcp.files-read" }).name).toBe("mcp.files-read");
    expect(defineTool({ ...base, name: `_${"a".repeat(63)}` }).name).toHaveLength(64);
  });

  it("says which tool is malformed", () => {
    expect(() => defineTool({ ...base, name: "bad_tool", description: 3 } as never)).toThrow(/Tool "bad_tool": description/);
  });
});

function cyclicSchema(): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: "object", properties: {} };
  (schema.properties as Record<string, unknown>).self = schema;
  return schema;
}
