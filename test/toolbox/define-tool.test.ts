import { describe, expect, it } from "vitest";
import { brandChainTool, isChainTool, isChainRuntimeError, type ToolContext } from "../../src/kernel/index.ts";
import { MAX_SCHEMA_DEPTH } from "../../src/toolbox/assert-valid-tool.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { thrown } from "../support/thrown.ts";

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

  it.each([
    ["a misspelt type", { type: "object", properties: { a: { type: "strng" } } }, /must be equal to one of the allowed values/],
    ["a $ref to nothing", { type: "object", properties: { a: { $ref: "#/$defs/missing" } } }, /can't resolve reference #\/\$defs\/missing/],
    ["nullable beside enum, without type", { type: "object", properties: { a: { enum: ["x"], nullable: true } } }, /"nullable" cannot be used without "type"/],
    ["nullable beside anyOf, without type", { type: "object", properties: { a: { anyOf: [{ type: "string" }], nullable: true } } }, /"nullable" cannot be used without "type"/],
    ["a pattern that is no regular expression", { type: "object", properties: { a: { type: "string", pattern: "(" } } }, /Invalid regular expression/],
  ])("refuses an inputSchema ajv cannot compile (%s) with TOOL_INVALID and ajv's reason", (_case, inputSchema, reason) => {
    const error = thrown(() => defineTool({ ...base, inputSchema } as never));
    expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema", tool: "echo" } });
    expect(error.message).toMatch(/inputSchema is not a valid JSON Schema \(draft-07, as the invoker validates arguments\)/);
    expect(error.message).toMatch(reason);
  });

  it("accepts what the invoker compiles: nullable beside type, local $refs, vendor keywords, unknown formats", () => {
    const inputSchema = {
      type: "object",
      $defs: { id: { type: "string" } },
      properties: { a: { type: "string", nullable: true }, b: { $ref: "#/$defs/id" }, c: { type: "string", format: "vendor-thing", "x-ui": 1 } },
    } as const;
    expect(defineTool({ ...base, inputSchema } as never).inputSchema).toBe(inputSchema);
  });

  it("refuses schemas nested past MAX_SCHEMA_DEPTH with TOOL_INVALID naming the bound, not a stack overflow", () => {
    expect(MAX_SCHEMA_DEPTH).toBe(64);
    const nested = (levels: number, wrap: (inner: object) => object): object => {
      let schema: object = { type: "string" };
      for (let i = 0; i < levels; i++) schema = wrap(schema);
      return schema;
    };
    const array = (inner: object): object => ({ type: "array", items: inner });
    const object = (inner: object): object => ({ type: "object", properties: { k: inner }, required: ["k"] });
    for (const [field, schema] of [
      ["inputSchema", { type: "object", properties: { a: nested(2000, array) } }],
      ["inputSchema", { type: "object", properties: { a: nested(1000, object) } }],
      ["outputSchema", nested(5000, array)],
    ] as const) {
      const error = thrown(() => defineTool({ ...base, [field]: schema } as never));
      expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field } });
      expect(error.message).toContain(`more than ${MAX_SCHEMA_DEPTH} levels deep (MAX_SCHEMA_DEPTH)`);
      expect(() => new Toolbox([{ ...base, [field]: schema } as never])).toThrow(/MAX_SCHEMA_DEPTH/);
    }
    // At the bound (the root is level 1; each array level is one more) the tool is fine.
    expect(() => defineTool({ ...base, outputSchema: nested(MAX_SCHEMA_DEPTH - 1, array) } as never)).not.toThrow();
    expect(() => defineTool({ ...base, outputSchema: nested(MAX_SCHEMA_DEPTH, array) } as never)).toThrow(/MAX_SCHEMA_DEPTH/);
  });

  it('refuses an inputSchema that requires "__proto__", which the invoker drops from every call', () => {
    const required = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}');
    const nested = JSON.parse('{"type":"object","properties":{"o":{"anyOf":[{"type":"object","required":["__proto__"]}]}}}');
    const dependency = JSON.parse('{"type":"object","dependencies":{"a":["__proto__"]}}');
    for (const [inputSchema, at] of [
      [required, "/required"],
      [nested, "/properties/o/anyOf/0/required"],
      [dependency, "/dependencies/a"],
    ] as const) {
      const error = thrown(() => defineTool({ ...base, inputSchema } as never));
      expect(error).toMatchObject({ code: "TOOL_INVALID", details: { field: "inputSchema" } });
      expect(error.message).toContain(`requires an argument named "__proto__" (at ${at})`);
    }
    // Optional, it is allowed (the declarations leave it out); as data it is no requirement.
    const optional = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"},"a":{"default":{"required":["__proto__"]}}}}');
    expect(() => defineTool({ ...base, inputSchema: optional } as never)).not.toThrow();
  });

  it("accepts names with dots, dashes and 64 characters", () => {
    expect(defineTool({ ...base, name: "mcp.files-read" }).name).toBe("mcp.files-read");
    expect(defineTool({ ...base, name: `_${"a".repeat(63)}` }).name).toHaveLength(64);
  });

  it('refuses the name "then", which would make the chain\'s tools object a thenable', () => {
    const error = thrown(() => defineTool({ ...base, name: "then" }));
    expect(error.code).toBe("TOOL_INVALID");
    expect(error.details).toEqual({ field: "name", tool: "then" });
    expect(error.message).toContain('Tool "then": name cannot be "then"');
    expect(error.message).toContain("thenable");
    // Also when the tool is not made by defineTool, and for any kind of tool a toolbox holds.
    const raw = { name: "then", description: "d", inputSchema: { type: "object" }, execute: () => 1 };
    expect(thrown(() => new Toolbox([raw as never])).code).toBe("TOOL_INVALID");
    expect(thrown(() => new Toolbox().add({ name: "then", description: "d", providerSpecs: { openai: { type: "x" } } } as never)).code).toBe("TOOL_INVALID");
    // Only the exact name: it is a property key, and keys are case-sensitive.
    expect(defineTool({ ...base, name: "Then" }).name).toBe("Then");
    expect(defineTool({ ...base, name: "then_do" }).name).toBe("then_do");
  });

  it("accepts names that are harmless on the tools object (a null-prototype object of own functions)", () => {
    for (const name of ["constructor", "__proto__", "toJSON", "toString", "valueOf", "hasOwnProperty", "catch", "finally"]) {
      expect(defineTool({ ...base, name }).name).toBe(name);
    }
    expect(new Toolbox([defineTool({ ...base, name: "__proto__" }), defineTool({ ...base, name: "constructor" })]).names()).toEqual(["__proto__", "constructor"]);
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
