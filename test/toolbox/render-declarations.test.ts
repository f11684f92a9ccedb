import ts from "typescript";
import { describe, expect, it } from "vitest";
import type { AnyTool, ObjectJsonSchema } from "../../src/kernel/index.ts";
import { MAX_SCHEMA_DEPTH } from "../../src/toolbox/assert-valid-tool.ts";
import { compileInputSchema } from "../../src/toolbox/compile-input-schema.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { normalizeToolResult } from "../../src/toolbox/normalize-tool-result.ts";
import { renderDeclarations } from "../../src/toolbox/render-declarations.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { expectGolden } from "./golden.ts";
import { chainTool, dropTableTool, oddNameTool, searchTool, sendEmailTool, shellProviderDefined, webSearchHosted } from "./sample-tools.ts";

const everything = (): AnyTool[] => [searchTool, sendEmailTool, dropTableTool, oddNameTool, webSearchHosted, shellProviderDefined, chainTool()];

const libFiles = new Map<string, ts.SourceFile | undefined>();

/** Type-checks `files` (virtual paths → text) with the standard lib only; returns the diagnostics as text, each with its line. */
function typeCheck(files: Record<string, string>): string[] {
  const options: ts.CompilerOptions = { noEmit: true, strict: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], types: [], module: ts.ModuleKind.ESNext };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError) => {
    if (name in files) return ts.createSourceFile(name, files[name] ?? "", version);
    if (!libFiles.has(name)) libFiles.set(name, getSourceFile(name, version, onError));
    return libFiles.get(name);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name in files || fileExists(name);
  const program = ts.createProgram(Object.keys(files), options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => {
      const line = d.file === undefined ? "" : (d.file.text.split("\n")[d.file.getLineAndCharacterOfPosition(d.start ?? 0).line] ?? "").trim();
      return `${d.file?.fileName ?? ""}:${d.start ?? 0}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")} [at: ${line}]`;
    });
}

describe("renderDeclarations", () => {
  it("renders the sample tools (golden)", () => {
    expectGolden("declarations/sample-tools.d.ts", renderDeclarations(everything()));
  });

  it("renders no tools as an empty tools object (golden)", () => {
    expectGolden("declarations/no-tools.d.ts", renderDeclarations([webSearchHosted, chainTool()], { usageNote: false }));
  });

  it("parses without syntax errors", () => {
    const source = ts.createSourceFile("decl.d.ts", renderDeclarations(everything()), ts.ScriptTarget.Latest, true);
    expect((source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics).toEqual([]);
  });

  it("type-checks, and types a script written against it", () => {
    const script = `
async function main() {
  const r = await tools.search_docs({ query: "x", mode: "deep" });
  if (r.status === "ok") { const titles: string[] = (r.structured?.hits ?? []).map((h) => h.title); return titles; }
  if (r.status === "denied") { const code: InvocationErrorCode = r.code; return code; }
  const odd = await tools["odd-name.v2"]({ pair: ["a", 1], either: [1, 2], tags: { a: 1 }, meta: { id: "m", extra: true } });
  const list: string[] | undefined = odd.status === "ok" ? odd.structured?.value : undefined;
  await tools.send_email({ to: ["a@b.c"], subject: "s", body: "b", attachment: artifact("sha256:00") });
  return { left: budget.remaining, total: budget.total, list };
}
export {};
void main;
`;
    expect(typeCheck({ "/decl.d.ts": renderDeclarations(everything()), "/script.ts": script })).toEqual([]);
  });

  it("rejects wrong arguments in a script (the types are not all unknown)", () => {
    const script = `async function main() { await tools.search_docs({ query: 1, mode: "slow" }); await tools.drop_table({}); }\nexport {};\nvoid main;\n`;
    const errors = typeCheck({ "/decl.d.ts": renderDeclarations(everything()), "/script.ts": script });
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors.join("\n")).toMatch(/number.*not assignable to.*string/);
    expect(errors.join("\n")).toMatch(/table/);
  });

  it("skips hosted, provider-defined and chain tools", () => {
    const text = renderDeclarations(everything());
    expect(text).not.toMatch(/web_search|shell\(|run_chain/);
    expect(text).toMatch(/^ {2}search_docs\(args: /m);
  });

  it("accepts a Toolbox", () => {
    expect(renderDeclarations(new Toolbox(everything()))).toBe(renderDeclarations(everything()));
  });

  it("quotes non-identifier names and keys, and escapes comment terminators", () => {
    const tool = defineTool({
      name: "my-tool",
      description: "Ends a comment */ early?",
      inputSchema: { type: "object", properties: { "a b": { type: "string", description: "x */ y" } }, required: ["a b"] },
      execute: () => 1,
    });
    const text = renderDeclarations([tool], { usageNote: false });
    expect(text).toContain('"my-tool"(args: {');
    expect(text).toContain("/** Ends a comment *\\/ early? */");
    expect(text).toContain('"a b": string;');
    expect(typeCheck({ "/decl.d.ts": text })).toEqual([]);
  });

  it("maps schema keywords to types", () => {
    const tool = defineTool({
      name: "t",
      description: "",
      inputSchema: {
        type: "object",
        properties: {
          n: { type: "integer", nullable: true },
          all: { allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "object", properties: { b: { type: "number" } }, required: ["b"] }] },
          closed: { type: "object", additionalProperties: false },
          open: { type: "object" },
          mixed: { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: { type: "number" } },
          tuple: { type: "array", prefixItems: [{ type: "boolean" }] },
          unionItems: { type: "array", items: { type: ["string", "number"] } },
          quoted: { const: 'say "hi" | ok' },
          pipes: { type: "array", items: { const: "a|b" } },
          objectConst: { const: { a: 1 } },
        },
        required: ["n"],
      },
      execute: () => 1,
    });
    const text = renderDeclarations([tool], { usageNote: false });
    for (const expected of [
      "n: number | null;",
      "all?: { a: string } & { b: number };",
      "closed?: Record<string, never>;",
      "open?: Record<string, unknown>;",
      "mixed?: { a: string; [key: string]: number | string };",
      // prefixItems is 2020-12: the draft-07 validator ignores it, so any array passes
      "tuple?: unknown[];",
      "unionItems?: (string | number)[];",
      'quoted?: "say \\"hi\\" | ok";',
      'pipes?: "a|b"[];',
      "objectConst?: Record<string, unknown>;",
    ]) {
      expect(text).toContain(expected);
    }
    expect(typeCheck({ "/decl.d.ts": text })).toEqual([]);
  });

  it("renders a false schema as never", () => {
    const inputSchema = { type: "object", properties: { none: false }, required: ["none"] } as unknown as ObjectJsonSchema;
    const text = renderDeclarations([{ name: "t", description: "", inputSchema, execute: () => 1 }], { usageNote: false });
    expect(text).toContain("t(args: { none: never }): Promise<InvocationResult>;");
  });

  it("types structured from outputSchema: objects as-is, other values as { value }, strings not at all", () => {
    const withOutput = (outputSchema: Record<string, unknown>) =>
      renderDeclarations([{ name: "t", description: "", inputSchema: { type: "object" }, outputSchema, execute: () => 1 }], { usageNote: false });
    expect(withOutput({ type: "object", properties: { n: { type: "number" } }, required: ["n"] })).toContain("Promise<InvocationResult<{ n: number }>>");
    expect(withOutput({ type: "number" })).toContain("Promise<InvocationResult<{ value: number }>>");
    expect(withOutput({ type: "string" })).toContain("Promise<InvocationResult>;");
    expect(withOutput({ $ref: "#/defs/x" })).toContain("Promise<InvocationResult>;");
  });

  it("marks risky tools in their doc comment", () => {
    const text = renderDeclarations([sendEmailTool, searchTool]);
    expect(text).toContain('Risk: high; may need approval, so a call can come back "denied".');
    expect(text.match(/Risk:/g)).toHaveLength(1);
  });

  it("puts an object on one line unless a member has a doc or it is too long", () => {
    const text = renderDeclarations([dropTableTool], { usageNote: false });
    expect(text).toContain("drop_table(args: { table: string }): Promise<InvocationResult>;");
  });

  it("includes the usage note unless turned off", () => {
    expect(renderDeclarations([])).toMatch(/^\/\/ .*top-level await and return/);
    expect(renderDeclarations([])).toMatch(/never throw/);
    expect(renderDeclarations([], { usageNote: false })).not.toMatch(/^\/\//m);
  });
});

/** A local tool as the renderer sees it, unchecked (no defineTool). */
function rawTool(name: string, inputSchema: unknown, outputSchema?: unknown): AnyTool {
  return { name, description: "", inputSchema, ...(outputSchema === undefined ? {} : { outputSchema }), execute: () => 1 } as unknown as AnyTool;
}

/**
 * A case of the agreement between declarations and validation: calls the validator accepts
 * (they must type-check) and calls it refuses that the declaration refuses too.
 */
interface ArgumentsCase {
  readonly name: string;
  readonly inputSchema: Record<string, unknown>;
  readonly valid: readonly unknown[];
  readonly invalid: readonly unknown[];
}

/**
 * Type-checks one script calling each case's tool with each of its arguments, the refused ones
 * under `@ts-expect-error`, after checking with the invoker's own ajv setup that the arguments
 * are in fact valid and invalid. `[]` when the declarations agree.
 */
function disagreements(cases: readonly ArgumentsCase[]): string[] {
  const tools = cases.map((c) => defineTool({ name: c.name, description: "", inputSchema: c.inputSchema as ObjectJsonSchema, execute: () => 1 }));
  const lines: string[] = [];
  for (const c of cases) {
    const compiled = compileInputSchema(c.inputSchema);
    if (!compiled.ok) throw new Error(`${c.name}: ${compiled.reason}`);
    for (const args of c.valid) {
      expect(compiled.validate(args), `${c.name} accepts ${JSON.stringify(args)}`).toBe(true);
      lines.push(`  await tools.${c.name}(${JSON.stringify(args)});`);
    }
    for (const args of c.invalid) {
      expect(compiled.validate(args), `${c.name} refuses ${JSON.stringify(args)}`).toBe(false);
      lines.push("  // @ts-expect-error", `  await tools.${c.name}(${JSON.stringify(args)});`);
    }
  }
  const script = `async function main() {\n${lines.join("\n")}\n}\nexport {};\nvoid main;\n`;
  return typeCheck({ "/decl.d.ts": renderDeclarations(tools, { usageNote: false }), "/script.ts": script });
}

describe("renderDeclarations agrees with argument validation (draft-07, ajv)", () => {
  it("types properties beside an additionalProperties schema as one object, the index covering the members", () => {
    const inputSchema = { type: "object", properties: { a: { type: "string" }, b: { type: "boolean" } }, required: ["a"], additionalProperties: { type: "number" } };
    expect(renderDeclarations([rawTool("t", inputSchema)], { usageNote: false })).toContain(
      ["  t(args: {", "    a: string;", "    b?: boolean;", "    [key: string]: number | string | boolean | undefined;", "  }): Promise<InvocationResult>;"].join("\n"),
    );
    const patterns = { type: "object", properties: { a: { type: "string" } }, patternProperties: { "^x-": { type: "number" } }, additionalProperties: false };
    expect(
      disagreements([
        // (an extra key may also hold a member's type: `{ a: "s", c: "x" }` type-checks, validation refuses it)
        { name: "extra", inputSchema, valid: [{ a: "s", c: 1 }, { a: "s", b: true, c: 1, d: 2 }, { a: "s" }], invalid: [{ a: "s", c: null }, { c: 1 }, { a: 1 }] },
        { name: "patterns", inputSchema: patterns, valid: [{ a: "s", "x-n": 1 }, {}], invalid: [{ "x-n": true }] },
      ]),
    ).toEqual([]);
  });

  it("types draft-07 tuples by what validates: shorter and longer arrays unless minItems and additionalItems say otherwise", () => {
    const pair = { type: "array", items: [{ type: "string" }, { type: "number" }] };
    const closed = { ...pair, minItems: 1, additionalItems: false };
    const typedRest = { ...pair, additionalItems: { type: "boolean" } };
    const prefix = { type: "array", prefixItems: [{ type: "string" }], items: { type: "number" } };
    const text = renderDeclarations([rawTool("t", { type: "object", properties: { pair, closed, typedRest, prefix } })], { usageNote: false });
    for (const expected of ["pair?: [string?, number?, ...unknown[]];", "closed?: [string, number?];", "typedRest?: [string?, number?, ...boolean[]];", "prefix?: number[];"]) {
      expect(text).toContain(expected);
    }
    expect(
      disagreements([
        { name: "pair", inputSchema: { type: "object", properties: { t: pair } }, valid: [{ t: [] }, { t: ["a"] }, { t: ["a", 1, true, {}] }], invalid: [{ t: [1] }, { t: ["a", "b"] }] },
        { name: "closed", inputSchema: { type: "object", properties: { t: closed } }, valid: [{ t: ["a"] }, { t: ["a", 1] }], invalid: [{ t: [] }, { t: ["a", 1, 2] }] },
        { name: "typedRest", inputSchema: { type: "object", properties: { t: typedRest } }, valid: [{ t: ["a", 1, true] }], invalid: [{ t: ["a", 1, 2] }] },
        // 2020-12's prefixItems is no keyword in draft-07: only `items` counts
        { name: "prefix", inputSchema: { type: "object", properties: { t: prefix } }, valid: [{ t: [1, 2] }, { t: [] }], invalid: [{ t: ["a"] }] },
      ]),
    ).toEqual([]);
  });

  it("adds null for nullable only as ajv does: beside type, and not past an enum without null", () => {
    const inputSchema = {
      type: "object",
      properties: { n: { type: "integer", nullable: true }, e: { type: "string", enum: ["a", "b"], nullable: true }, en: { type: "string", enum: ["a", null], nullable: true } },
    };
    const text = renderDeclarations([rawTool("t", inputSchema)], { usageNote: false });
    expect(text).toContain('t(args: { n?: number | null; e?: "a" | "b"; en?: "a" | null }): Promise<InvocationResult>;');
    expect(disagreements([{ name: "t", inputSchema, valid: [{ n: null, e: "a", en: null }, { n: 1 }], invalid: [{ e: null }, { n: "1" }, { e: "c" }] }])).toEqual([]);
  });

  it("declares required keys without properties, and type object beside allOf/anyOf as their intersection", () => {
    const requiredOnly = { type: "object", required: ["q"] };
    const withAllOf = { type: "object", properties: { q: { type: "string" } }, required: ["q"], allOf: [{ required: ["q"] }, { properties: { n: { type: "number" } } }] };
    const withAnyOf = { type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, anyOf: [{ required: ["a"] }, { required: ["b"] }] };
    const text = renderDeclarations([rawTool("requiredOnly", requiredOnly), rawTool("withAllOf", withAllOf), rawTool("withAnyOf", withAnyOf)], { usageNote: false });
    expect(text).toContain("requiredOnly(args: { q: unknown; [key: string]: unknown }): Promise<InvocationResult>;");
    expect(text).toContain("withAllOf(args: { q: string } & { q: unknown; [key: string]: unknown } & { n?: number }): Promise<InvocationResult>;");
    expect(text).toContain(
      "withAnyOf(args: { a?: string; b?: number } & ({ a: unknown; [key: string]: unknown } | { b: unknown; [key: string]: unknown })): Promise<InvocationResult>;",
    );
    expect(
      disagreements([
        { name: "requiredOnly", inputSchema: requiredOnly, valid: [{ q: 1 }, { q: "x", r: 2 }], invalid: [{}] },
        { name: "withAllOf", inputSchema: withAllOf, valid: [{ q: "x" }, { q: "x", n: 1 }], invalid: [{ q: 1 }, {}, { q: "x", n: "1" }] },
        { name: "withAnyOf", inputSchema: withAnyOf, valid: [{ a: "x" }, { b: 1 }, { a: "x", b: 1 }], invalid: [{}, { a: 1 }] },
      ]),
    ).toEqual([]);
  });

  it('leaves out a "__proto__" property, which no call can pass (the invoker drops the key)', () => {
    const inputSchema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"string"},"a":{"type":"string"}},"required":["a"]}');
    const text = renderDeclarations([defineTool({ name: "t", description: "", inputSchema, execute: () => 1 })], { usageNote: false });
    expect(text).toContain("t(args: { a: string }): Promise<InvocationResult>;");
    expect(text).not.toContain("__proto__");
  });
});

describe("renderDeclarations types structured as the result is normalised", () => {
  /** Declares `structured` as the tool's result type says, and assigns the value the runtime makes of `returned`. */
  function structuredDisagreements(outputSchema: Record<string, unknown>, returned: readonly unknown[]): string[] {
    const decl = renderDeclarations([rawTool("t", { type: "object" }, outputSchema)], { usageNote: false });
    const lines = returned.map((value, index) => {
      const normalized = normalizeToolResult(value);
      if (!normalized.ok) throw new Error(normalized.reason);
      return `  if (r.status === "ok") { const s${index}: NonNullable<typeof r.structured> = ${JSON.stringify(normalized.result.structuredContent)}; void s${index}; }`;
    });
    const script = `async function main() {\n  const r = await tools.t({});\n${lines.join("\n")}\n}\nexport {};\nvoid main;\n`;
    return typeCheck({ "/decl.d.ts": decl, "/script.ts": script });
  }

  it.each([
    ["anyOf of objects", { anyOf: [{ type: "object", properties: { a: { type: "string" } } }, { type: "object", properties: { b: { type: "number" } } }] }, "{ a?: string } | { b?: number }", [{ a: "x" }, { b: 1 }]],
    ["oneOf of an object and an array", { oneOf: [{ type: "object", properties: { a: { type: "string" } } }, { type: "array", items: { type: "number" } }] }, "{ a?: string } | { value: number[] }", [{ a: "x" }, [1]]],
    ["an object or null", { type: ["object", "null"], properties: { a: { type: "string" } } }, "{ a?: string } | { value: null }", [{ a: "x" }, null]],
    ["allOf of objects", { allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { type: "object", properties: { b: { type: "number" } } }] }, "{ a: string } & { b?: number }", [{ a: "x", b: 1 }]],
    ["properties without type", { properties: { a: { type: "string" } } }, "{ a?: string }", [{ a: "x" }]],
    ["a string or a number", { type: ["string", "number"] }, "{ value: number }", [1]],
    ["an array", { type: "array", items: { type: "string" } }, "{ value: string[] }", [["x"]]],
  ])("%s", (_case, outputSchema, structured, returned) => {
    expect(renderDeclarations([rawTool("t", { type: "object" }, outputSchema)], { usageNote: false })).toContain(`t(args: Record<string, unknown>): Promise<InvocationResult<${structured}>>;`);
    expect(structuredDisagreements(outputSchema, returned)).toEqual([]);
  });

  it("keeps the default for strings and schemas it cannot read", () => {
    for (const outputSchema of [{ type: "string" }, { $ref: "#/definitions/x" }, { not: { type: "object" } }]) {
      expect(renderDeclarations([rawTool("t", { type: "object" }, outputSchema)], { usageNote: false })).toContain("t(args: Record<string, unknown>): Promise<InvocationResult>;");
    }
  });
});

describe("renderDeclarations on hostile schemas", () => {
  it(`never overflows the stack: past MAX_SCHEMA_DEPTH (${MAX_SCHEMA_DEPTH}) levels an unchecked schema renders as unknown`, () => {
    let arrays: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 5000; i++) arrays = { type: "array", items: arrays };
    let objects: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 2000; i++) objects = { type: "object", properties: { k: objects }, required: ["k"] };
    const text = renderDeclarations([rawTool("a", { type: "object", properties: { a: arrays } }, arrays), rawTool("o", { type: "object", properties: { o: objects } })], { usageNote: false });
    expect(text).toMatch(/unknown\[\]/);
    expect(typeCheck({ "/decl.d.ts": text })).toEqual([]);
  });

  it("keeps every line of a doc comment prefixed, whatever line breaks a description, pattern, format or default holds", () => {
    const inputSchema = {
      type: "object",
      properties: {
        a: { type: "string", pattern: "^a$\n*/ declare const pwned: 1; /*", format: "x\r\ny", default: "1\u20282" },
        b: { type: "string", description: "one\rtwo\u2029three" },
      },
    };
    const text = renderDeclarations([rawTool("t", inputSchema)], { usageNote: false });
    for (const comment of text.match(/\/\*\*[\s\S]*?\*\//g) ?? []) {
      for (const line of comment.split(/\r\n|[\n\r\u2028\u2029]/).slice(1)) expect(line, comment).toMatch(/^ +\*( .*)?$|^ +\*\/$/);
    }
    expect(text).toContain(" * @default \"1");
    const source = ts.createSourceFile("decl.d.ts", text, ts.ScriptTarget.Latest, true);
    expect(source.statements.map((statement) => (statement as unknown as { name?: ts.Identifier }).name?.text)).not.toContain("pwned");
    expect(typeCheck({ "/decl.d.ts": text })).toEqual([]);
  });
});

describe("renderDeclarations puts parentheses where its own operators are, whatever doc comments hold", () => {
  const described = (description: string) => ({ type: "object", properties: { a: { type: "integer", description } } });
  it.each([">", "<", "{", "}", "(", ")", '"', "'", "`", "*/", "|", "count, must be >= 1", "x -> y"])("a member described with %s", (description) => {
    const inputSchema = {
      type: "object",
      properties: {
        list: { type: "array", items: { anyOf: [described(description), { type: "string" }] } },
        tuple: { type: "array", items: [{ anyOf: [described(description), { type: "string" }] }] },
        both: { type: "array", items: { allOf: [described(description), { properties: { b: { type: "string" } } }] } },
      },
    };
    const text = renderDeclarations([rawTool("t", inputSchema)], { usageNote: false });
    expect(text).toMatch(/list\?: \(\{\n[^]*?\} \| string\)\[\];\n/);
    expect(text).toMatch(/tuple\?: \[\(\{\n[^]*?\} \| string\)\?, \.\.\.unknown\[\]\];\n/);
    expect(text).toMatch(/both\?: \(\{\n[^]*?\} & \{ b\?: string \}\)\[\];\n/);
    expect(
      disagreements([
        {
          name: "t",
          inputSchema,
          valid: [{ list: ["s", { a: 1 }], tuple: [{ a: 1 }], both: [{ a: 1, b: "x" }] }, { list: [{ a: 2 }, "s"], tuple: ["s", 2] }],
          invalid: [{ list: [true] }, { tuple: [true] }, { both: [{ a: "1" }] }],
        },
      ]),
    ).toEqual([]);
  });
});

/**
 * Type-checks calls validation accepts that the declarations refuse on purpose (a misspelt key
 * on an object whose keys are all named); `[]` when each is a type error.
 */
function refusedOnPurpose(cases: readonly { readonly name: string; readonly inputSchema: Record<string, unknown>; readonly calls: readonly unknown[] }[]): string[] {
  const tools = cases.map((c) => defineTool({ name: c.name, description: "", inputSchema: c.inputSchema as ObjectJsonSchema, execute: () => 1 }));
  const lines: string[] = [];
  for (const c of cases) {
    const compiled = compileInputSchema(c.inputSchema);
    if (!compiled.ok) throw new Error(`${c.name}: ${compiled.reason}`);
    for (const args of c.calls) {
      expect(compiled.validate(args), `${c.name} accepts ${JSON.stringify(args)}`).toBe(true);
      lines.push("  // @ts-expect-error", `  await tools.${c.name}(${JSON.stringify(args)});`);
    }
  }
  const script = `async function main() {\n${lines.join("\n")}\n}\nexport {};\nvoid main;\n`;
  return typeCheck({ "/decl.d.ts": renderDeclarations(tools, { usageNote: false }), "/script.ts": script });
}

describe("renderDeclarations reads $ref, and opens objects to keys it cannot type, as validation does", () => {
  const order = {
    type: "object",
    $defs: { base: { type: "object", properties: { customerId: { type: "string" } }, required: ["customerId"] } },
    allOf: [{ $ref: "#/$defs/base" }, { properties: { note: { type: "string" } } }],
  };

  it("reads a $ref into the schema in place, beside the keywords next to it", () => {
    const pointers = {
      type: "object",
      definitions: { "a/b": { type: "number" }, "c~d": { type: "boolean" }, "e f": { enum: ["x", "y"] } },
      properties: { slash: { $ref: "#/definitions/a~1b" }, tilde: { $ref: "#/definitions/c~0d" }, escaped: { $ref: "#/definitions/e%20f", const: "x" }, again: { $ref: "#/properties/slash" } },
    };
    const text = renderDeclarations([rawTool("order", order), rawTool("pointers", pointers)], { usageNote: false });
    expect(text).toContain("order(args: { customerId: string } & { note?: string }): Promise<InvocationResult>;");
    expect(text).toContain('pointers(args: { slash?: number; tilde?: boolean; escaped?: "x"; again?: number }): Promise<InvocationResult>;');
    expect(
      disagreements([
        { name: "order", inputSchema: order, valid: [{ customerId: "1", note: "n" }, { customerId: "1" }], invalid: [{ note: "n" }, { customerId: 1 }, { customerId: "1", note: 2 }] },
        { name: "pointers", inputSchema: pointers, valid: [{ slash: 1, tilde: true, escaped: "x", again: 2 }], invalid: [{ slash: "1" }, { tilde: 1 }, { escaped: "y" }, { again: "1" }] },
      ]),
    ).toEqual([]);
  });

  it("renders a recursive $ref as unknown where it recurs, objects open", () => {
    const tree = {
      type: "object",
      $defs: {
        node: {
          type: "object",
          properties: {
            value: { type: "number" },
            children: { type: "array", items: { $ref: "#/$defs/node" } },
            next: { allOf: [{ $ref: "#/$defs/node" }, { properties: { weight: { type: "number" } } }] },
          },
          required: ["value"],
        },
      },
      properties: { root: { $ref: "#/$defs/node" } },
    };
    const text = renderDeclarations([rawTool("tree", tree)], { usageNote: false });
    expect(text).toContain(
      [
        "  tree(args: {",
        "    root?: {",
        "      value: number;",
        "      children?: unknown[];",
        "      next?: { [key: string]: unknown } & { weight?: number };",
        "    };",
        "  }): Promise<InvocationResult>;",
      ].join("\n"),
    );
    expect(
      disagreements([
        {
          name: "tree",
          inputSchema: tree,
          valid: [{ root: { value: 1, children: [{ value: 2, children: [] }], next: { value: 3, weight: 1 } } }],
          invalid: [{ root: { value: "1" } }, { root: {} }, { root: { value: 1, next: { value: 2, weight: "1" } } }],
        },
      ]),
    ).toEqual([]);
    // (ajv refuses `$ref: "#"` in a tool, as compiled without registering the root; unchecked, it is recursion at once)
    expect(renderDeclarations([rawTool("t", { type: "object", properties: { self: { $ref: "#" } } })], { usageNote: false })).toContain("t(args: { self?: unknown }): Promise<InvocationResult>;");
  });

  it("leaves a $ref unread (unknown) when a subschema has an $id of its own, which moves what # names", () => {
    const inputSchema = {
      type: "object",
      definitions: { q: { type: "number" } },
      properties: { inner: { $id: "http://example.com/inner", definitions: { q: { type: "string" } }, properties: { z: { $ref: "#/definitions/q" } } }, outer: { $ref: "#/definitions/q" } },
    };
    expect(renderDeclarations([rawTool("t", inputSchema)], { usageNote: false })).toContain("t(args: { inner?: { z?: unknown }; outer?: unknown }): Promise<InvocationResult>;");
    expect(disagreements([{ name: "t", inputSchema, valid: [{ inner: { z: "s" }, outer: 1 }], invalid: [] }])).toEqual([]);
  });

  it("expands a bounded number of $refs, so definitions used twice over cannot multiply without end", () => {
    const definitions: Record<string, unknown> = { d0: { type: "string" } };
    for (let i = 1; i <= 40; i++) definitions[`d${i}`] = { type: "object", properties: { a: { $ref: `#/definitions/d${i - 1}` }, b: { $ref: `#/definitions/d${i - 1}` } } };
    const text = renderDeclarations([rawTool("t", { type: "object", definitions, properties: { top: { $ref: "#/definitions/d40" } } })], { usageNote: false });
    expect(text.length).toBeLessThan(100_000);
    expect(typeCheck({ "/decl.d.ts": text })).toEqual([]);
  });

  it("takes extra keys where keywords it cannot type (patternProperties, dependencies, if/then, a $ref not read) may allow them", () => {
    const withA = { type: "object", properties: { a: { type: "string" } } };
    expect(
      disagreements([
        { name: "patterns", inputSchema: { ...withA, patternProperties: { "^x_": { type: "number" } } }, valid: [{ a: "s", x_1: 5 }], invalid: [{ a: 1 }] },
        { name: "dependencies", inputSchema: { ...withA, dependencies: { a: { properties: { b: { type: "number" } } } } }, valid: [{ a: "s", b: 1 }], invalid: [{ a: 1 }] },
        { name: "requires", inputSchema: { ...withA, dependencies: { a: ["b"] } }, valid: [{ a: "s", b: 1 }], invalid: [{ a: 1, b: 1 }] },
        { name: "dependentSchemas", inputSchema: { ...withA, dependentSchemas: { a: { properties: { b: { type: "number" } } } } }, valid: [{ a: "s", b: 1 }], invalid: [{ a: 1 }] },
        {
          name: "ifThen",
          inputSchema: { type: "object", properties: { kind: { enum: ["x", "y"] } }, if: { properties: { kind: { const: "x" } } }, then: { properties: { xval: { type: "number" } } } },
          valid: [{ kind: "x", xval: 1 }],
          invalid: [{ kind: "z" }],
        },
        {
          name: "ifThenMember",
          inputSchema: { ...withA, allOf: [{ if: { required: ["a"] }, then: { properties: { b: { type: "number" } } } }] },
          valid: [{ a: "s", b: 1 }],
          invalid: [{ a: 1 }],
        },
        {
          name: "metaRef",
          inputSchema: { type: "object", allOf: [{ $ref: "http://json-schema.org/draft-07/schema#" }, { properties: { title: { type: "string" } } }] },
          valid: [{ title: "t", description: "d" }],
          invalid: [{ title: 1 }],
        },
        {
          name: "metaRefBranch",
          inputSchema: { ...withA, anyOf: [{ $ref: "http://json-schema.org/draft-07/schema#" }, { required: ["a"] }] },
          valid: [{ a: "s", title: "t" }],
          invalid: [{ a: 1 }],
        },
        {
          name: "metaRefOrAny",
          inputSchema: { ...withA, anyOf: [{ not: { type: "null" } }, { $ref: "http://json-schema.org/draft-07/schema#" }] },
          valid: [{ a: "s", title: "t" }],
          invalid: [{ a: 1 }],
        },
        { name: "extraTrue", inputSchema: { type: "object", additionalProperties: true, allOf: [withA] }, valid: [{ a: "s", other: 1 }], invalid: [{ a: 1 }] },
      ]),
    ).toEqual([]);
    const text = renderDeclarations([rawTool("patterns", { ...withA, patternProperties: { "^x_": { type: "number" } } })], { usageNote: false });
    expect(text).toContain("patterns(args: { a?: string; [key: string]: unknown }): Promise<InvocationResult>;");
  });

  it("still refuses a misspelt key where every key is named, $refs read or not", () => {
    expect(
      refusedOnPurpose([
        { name: "plain", inputSchema: { type: "object", properties: { a: { type: "string" } } }, calls: [{ a: "s", misspelt: 1 }] },
        { name: "order", inputSchema: order, calls: [{ customerId: "1", nots: "n" }] },
        { name: "members", inputSchema: { type: "object", properties: { a: { type: "string" } }, allOf: [{ properties: { b: { type: "number" } } }, { not: { required: ["c"] } }] }, calls: [{ a: "s", d: 1 }] },
        { name: "typed", inputSchema: { type: "object", properties: { a: { type: "string" } }, allOf: [{ type: "object" }, { minProperties: 1 }] }, calls: [{ a: "s", d: 1 }] },
      ]),
    ).toEqual([]);
  });
});
