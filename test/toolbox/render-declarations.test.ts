import ts from "typescript";
import { describe, expect, it } from "vitest";
import type { AnyTool, ObjectJsonSchema } from "../../src/kernel/index.ts";
import { defineTool } from "../../src/toolbox/define-tool.ts";
import { renderDeclarations } from "../../src/toolbox/render-declarations.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { expectGolden } from "./golden.ts";
import { chainTool, dropTableTool, oddNameTool, searchTool, sendEmailTool, shellProviderDefined, webSearchHosted } from "./sample-tools.ts";

const everything = (): AnyTool[] => [searchTool, sendEmailTool, dropTableTool, oddNameTool, webSearchHosted, shellProviderDefined, chainTool()];

const libFiles = new Map<string, ts.SourceFile | undefined>();

/** Type-checks `files` (virtual paths → text) with the standard lib only; returns the diagnostics as text. */
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
    .map((d) => `${d.file?.fileName ?? ""}:${d.start ?? 0}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
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
      "closed?: {};",
      "open?: Record<string, unknown>;",
      "mixed?: { a: string } & { [key: string]: number };",
      "tuple?: [boolean];",
      "unionItems?: (string | number)[];",
      'quoted?: "say \\"hi\\" | ok";',
      'pipes?: "a|b"[];',
      "objectConst?: unknown;",
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
