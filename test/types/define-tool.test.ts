import { describe, expect, expectTypeOf, it } from "vitest";
import type { AnyTool, Tool, ToolContext } from "../../src/kernel/index.ts";
import { defineTool, type ToolOutput } from "../../src/toolbox/define-tool.ts";
import type { FromSchema } from "../../src/toolbox/from-schema.ts";

describe("FromSchema", () => {
  it("maps scalar types", () => {
    expectTypeOf<FromSchema<{ type: "string" }>>().toEqualTypeOf<string>();
    expectTypeOf<FromSchema<{ type: "number" }>>().toEqualTypeOf<number>();
    expectTypeOf<FromSchema<{ type: "integer" }>>().toEqualTypeOf<number>();
    expectTypeOf<FromSchema<{ type: "boolean" }>>().toEqualTypeOf<boolean>();
    expectTypeOf<FromSchema<{ type: "null" }>>().toEqualTypeOf<null>();
    expectTypeOf<FromSchema<{ type: readonly ["string", "null"] }>>().toEqualTypeOf<string | null>();
  });

  it("splits required and optional keys", () => {
    type Schema = {
      readonly type: "object";
      readonly properties: { readonly q: { readonly type: "string" }; readonly limit: { readonly type: "integer" } };
      readonly required: readonly ["q"];
    };
    expectTypeOf<FromSchema<Schema>>().toEqualTypeOf<{ q: string; limit?: number }>();
  });

  it("reads arrays, tuples, enums, const and unions", () => {
    expectTypeOf<FromSchema<{ type: "array"; items: { type: "string" } }>>().toEqualTypeOf<string[]>();
    expectTypeOf<FromSchema<{ type: "array" }>>().toEqualTypeOf<unknown[]>();
    // Draft-07, as the invoker validates: positions are typed, none is required, more may follow.
    expectTypeOf<FromSchema<{ type: "array"; items: readonly [{ type: "string" }, { type: "number" }] }>>().toEqualTypeOf<
      [string?, number?, ...unknown[]]
    >();
    expectTypeOf<FromSchema<{ type: "array"; items: readonly [{ type: "string" }]; additionalItems: false }>>().toEqualTypeOf<[string?]>();
    expectTypeOf<FromSchema<{ enum: readonly ["a", "b"] }>>().toEqualTypeOf<"a" | "b">();
    expectTypeOf<FromSchema<{ type: "string"; enum: readonly ["x"] }>>().toEqualTypeOf<"x">();
    expectTypeOf<FromSchema<{ const: 3 }>>().toEqualTypeOf<3>();
    expectTypeOf<FromSchema<{ anyOf: readonly [{ type: "string" }, { type: "number" }] }>>().toEqualTypeOf<string | number>();
    expectTypeOf<FromSchema<{ oneOf: readonly [{ const: "a" }, { type: "boolean" }] }>>().toEqualTypeOf<"a" | boolean>();
  });

  it("takes boolean subschemas, as draft-07 allows: true accepts anything, false nothing", () => {
    const tool = defineTool({
      name: "flags",
      description: "d",
      inputSchema: { type: "object", properties: { never: false, anything: true, list: { type: "array", items: true } }, anyOf: [true] } as const,
      execute: (args) => args,
    });
    expectTypeOf<Parameters<typeof tool.execute>[0]>().toEqualTypeOf<{ never?: never; anything?: unknown; list?: unknown[] }>();
    expect(tool.inputSchema.properties?.never).toBe(false);
  });

  it("adds null for nullable, and keeps members beside anyOf/oneOf branches", () => {
    expectTypeOf<FromSchema<{ type: "string"; nullable: true }>>().toEqualTypeOf<string | null>();
    // ajv: nullable does not get null past an enum that does not list it.
    expectTypeOf<FromSchema<{ type: "string"; enum: readonly ["a", "b"]; nullable: true }>>().toEqualTypeOf<"a" | "b">();
    type Note = FromSchema<{ type: "object"; properties: { note: { type: "string"; nullable: true } } }>;
    expectTypeOf<Note>().toEqualTypeOf<{ note?: string | null }>();
    // "id or email required": the branches only require keys, the members stay typed.
    type Either = FromSchema<{
      type: "object";
      properties: { id: { type: "string" }; email: { type: "string" } };
      anyOf: readonly [{ required: readonly ["id"] }, { required: readonly ["email"] }];
    }>;
    expectTypeOf<Either>().toEqualTypeOf<{ id?: string; email?: string }>();
    // Branches with types of their own narrow the siblings.
    type Kind = FromSchema<{ type: "object"; properties: { n: { type: "number" } }; oneOf: readonly [{ properties: { a: { type: "string" } } }, { properties: { b: { type: "boolean" } } }] }>;
    expectTypeOf<Kind>().toEqualTypeOf<{ n?: number } & ({ a?: string } | { b?: boolean })>();
  });

  it("types additionalProperties and falls back to unknown", () => {
    expectTypeOf<FromSchema<{ type: "object" }>>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf<FromSchema<{ type: "object"; additionalProperties: { type: "number" } }>>().toEqualTypeOf<{
      [key: string]: number;
    }>();
    expectTypeOf<FromSchema<{ type: "object"; additionalProperties: false }>>().toEqualTypeOf<Record<string, never>>();
    type Mixed = FromSchema<{ type: "object"; properties: { a: { type: "string" } }; required: ["a"]; additionalProperties: true }>;
    expectTypeOf<Mixed["a"]>().toEqualTypeOf<string>();
    expectTypeOf<Mixed["other"]>().toEqualTypeOf<unknown>();
    // Members beside an extra-property schema keep their own types (not `never`).
    type Extra = FromSchema<{ type: "object"; properties: { a: { type: "string" } }; required: ["a"]; additionalProperties: { type: "number" } }>;
    expectTypeOf<Extra["a"]>().toEqualTypeOf<string>();
    expectTypeOf<Extra["other"]>().toEqualTypeOf<string | number | undefined>();
    expectTypeOf<FromSchema<{ $ref: "#/x" }>>().toEqualTypeOf<unknown>();
    expectTypeOf<FromSchema<{ type: "string" | "number" }>>().toEqualTypeOf<string | number>();
  });

  it("nests", () => {
    type Nested = FromSchema<{
      type: "object";
      properties: { user: { type: "object"; properties: { tags: { type: "array"; items: { enum: ["a", "b"] } } }; required: ["tags"] } };
    }>;
    expectTypeOf<Nested>().toEqualTypeOf<{ user?: { tags: ("a" | "b")[] } }>();
  });
});

describe("defineTool", () => {
  it("infers args from inputSchema without as const", () => {
    const tool = defineTool({
      name: "search",
      description: "Search.",
      inputSchema: {
        type: "object",
        properties: { q: { type: "string" }, mode: { enum: ["fast", "deep"] }, n: { type: "integer" } },
        required: ["q", "mode"],
      },
      execute: (args, ctx) => {
        expectTypeOf(args).toEqualTypeOf<{ q: string; mode: "fast" | "deep"; n?: number }>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
        return args.q;
      },
    });
    expectTypeOf(tool).toExtend<AnyTool>();
    expectTypeOf(tool).toEqualTypeOf<Tool<{ q: string; mode: "fast" | "deep"; n?: number }, unknown>>();
  });

  it("infers args from a schema written as const elsewhere", () => {
    const inputSchema = { type: "object", properties: { ids: { type: "array", items: { type: "integer" } } }, required: ["ids"] } as const;
    defineTool({
      name: "fetch",
      description: "Fetch.",
      inputSchema,
      execute: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ ids: number[] }>();
        return args.ids.length;
      },
    });
  });

  it("types the return value when outputSchema is given", () => {
    const tool = defineTool({
      name: "count",
      description: "Count.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
      execute: async () => ({ n: 1 }),
    });
    expectTypeOf(tool).toEqualTypeOf<Tool<Record<string, unknown>, { n: number }>>();

    defineTool({
      name: "count2",
      description: "Count.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
      // @ts-expect-error n must be a number
      execute: async () => ({ n: "one" }),
    });

    defineTool({
      name: "count3",
      description: "Count.",
      inputSchema: { type: "object" },
      outputSchema: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
      execute: () => ({ content: [{ type: "text", text: "1" }], structuredContent: { n: 1 } }),
    });
  });

  it("ToolOutput is unknown without an output schema", () => {
    expectTypeOf<ToolOutput<undefined>>().toEqualTypeOf<unknown>();
    expectTypeOf<ToolOutput<{ type: "string" }>>().toEqualTypeOf<string>();
  });

  it("rejects a non-object input schema at compile time and at run time", () => {
    expect(() =>
      defineTool({
        name: "bad",
        description: "Bad.",
        // @ts-expect-error inputSchema must have type "object"
        inputSchema: { type: "string" },
        execute: () => 1,
      }),
    ).toThrow(/inputSchema/);
  });
});
