import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  COMPILED_SCRIPT_PREFIX,
  COMPILED_SCRIPT_SUFFIX,
  COMPILED_SCRIPT_TRAILER,
  CompileCache,
  compileScript,
  MAX_SCRIPT_CHARS,
  MAX_SCRIPT_NESTING,
  MODULE_SYNTAX_MESSAGE,
} from "../../src/compile/index.ts";
import type { CachedCompile, CompileError, CompileResult } from "../../src/compile/index.ts";
import { sha256Hex } from "../../src/kernel/index.ts";
import { compileOk, runCompiled } from "./run-compiled.ts";

const ENGINES = ["auto", "esbuild"] as const;

function compileError(source: string, engine: "auto" | "esbuild" = "auto"): CompileError {
  const result: CompileResult = compileScript(source, { cache: false, engine });
  if (result.ok) expect.fail(`expected a compile error for ${JSON.stringify(source)}`);
  expect(result.error.phase).toBe("compile");
  return result.error;
}

describe("compileScript: output contract", () => {
  it.each(ENGINES)("evaluates to an async function whose return is the script's (%s)", async (engine) => {
    const result = compileOk("const a: number = await Promise.resolve(20);\nreturn a + 1", { engine });
    expect(await runCompiled(result.code)).toBe(21);
    expect(result.engine).toBe(engine === "auto" ? "strip" : "esbuild");
  });

  it("the fast path keeps the wrapper verbatim around the stripped body, then the trailer", () => {
    const result = compileOk("const a: number = 1;\nreturn a");
    expect(result.code.startsWith(COMPILED_SCRIPT_PREFIX)).toBe(true);
    expect(result.code.endsWith(`${COMPILED_SCRIPT_SUFFIX}${COMPILED_SCRIPT_TRAILER}`)).toBe(true);
    expect(result.code).toBe(`${COMPILED_SCRIPT_PREFIX}const a         = 1;\nreturn a${COMPILED_SCRIPT_SUFFIX}${COMPILED_SCRIPT_TRAILER}`);
  });

  it.each(ENGINES)("runs a script file that starts with a #! line, and keeps its positions (%s)", async (engine) => {
    const source = "#!/usr/bin/env isochain\nconst n: number = 2;\nreturn n * 21";
    const result = compileOk(source, { engine });
    expect(await runCompiled(result.code)).toBe(42);
    expect(result.hash).toBe(sha256Hex(source));
    const error = compileError("#!/usr/bin/env isochain\nconst x = ;", engine);
    expect([error.line, error.column]).toEqual([2, 11]);
  });

  it.each(ENGINES)("says a script nests too deeply instead of passing on a stack overflow (%s)", (engine) => {
    const error = compileError(`return ${"[".repeat(20_000)}${"]".repeat(20_000)};`, engine);
    expect(error).toMatchObject({ name: "CompileError", message: expect.stringMatching(/nests .*deep/) });
  });

  it.each(ENGINES)("refuses a body that closes the wrapper function early where a `/` after a block is a division (%s)", (engine) => {
    // `{}` is an object literal, so `/ 1 }` divides and its `}` closes the wrapper: the whole is
    // valid JavaScript that would run the middle part before the script starts.
    const source = 'let o = {}\n/ 1 }), (() => { throw new Error("ran before the start") })(), (async function () { let z = 1 /\n1';
    const error = compileError(source, engine);
    expect(error).toMatchObject({ name: "SyntaxError", line: 2, column: 1, message: expect.stringContaining("closes its own function early") });
  });

  it("compiles in a host run with --disallow-code-generation-from-strings", () => {
    const module = new URL("../../src/compile/compile-script.ts", import.meta.url).href;
    const program =
      `import { compileScript } from ${JSON.stringify(module)};` +
      'const out = ["auto", "esbuild"].map((engine) => { const r = compileScript("const a: number = 1;\\nreturn a + 1;", { cache: false, engine }); return r.ok ? r.engine : r.error.message; });' +
      "console.log(JSON.stringify(out));";
    const child = spawnSync(process.execPath, ["--no-node-snapshot", "--disallow-code-generation-from-strings", "--input-type=module", "-e", program], { encoding: "utf8" });
    expect(child.stderr).not.toMatch(/Error/);
    expect(JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "null")).toEqual(["strip", "esbuild"]);
  });

  it.each(ENGINES)("still reads a `/` after a block and a line break as what V8 reads (%s)", async (engine) => {
    expect(await runCompiled(compileOk('if (true) {}\n/re/.test("re");\nreturn "regex"', { engine }).code)).toBe("regex");
    expect(await runCompiled(compileOk("const a = {}\n/ 2 / 1;\nreturn typeof a", { engine }).code)).toBe("number");
  });

  it.each(ENGINES)("refuses functions nested past MAX_SCRIPT_NESTING before any compiler sees them (%s)", (engine) => {
    // esbuild's time grows with the cube of this depth: 3 000 nested arrows held the host's thread 55 s.
    const deep = [
      `const f = ${"a => ".repeat(3_000)}1;\nreturn 1;`,
      `const f = ${"a =>\n".repeat(3_000)}1;\nreturn 1;`,
      `const f = ${"function () { return ".repeat(3_000)}1${" }".repeat(3_000)};\nreturn 1;`,
      `const f = ${'a => ")" + ('.repeat(3_000)}1${")".repeat(3_000)};\nreturn 1;`,
      // Hidden from one reading of the scanner: a regular expression after a block on the same line…
      `{} /'/; const f = (${Array.from({ length: 3_000 }, (_, i) => `x${i} => `).join("")}0);\nreturn 1;`,
      // …a U+2028 inside a string, a comma inside type arguments.
      `let s = "\u2028"; const f = (${"x => ".repeat(3_000)}0);\nreturn 1;`,
      `const f = ${"x => g<A, B>(".repeat(1_000)}0${")".repeat(1_000)};\nreturn 1;`,
    ];
    for (const source of deep) {
      const error = compileError(source, engine);
      expect(error).toMatchObject({ name: "CompileError", message: expect.stringContaining(`more than the ${MAX_SCRIPT_NESTING} compiled`) });
    }
    // Placed at the deepest point: the 300th arrow.
    expect(compileError(`const f = ${"a => ".repeat(300)}1;`, engine)).toMatchObject({ line: 1, column: 11 + 299 * 5 + 2 });
    expect(compileError(`const f = ${"a =>\n".repeat(300)}1;`, engine)).toMatchObject({ line: 300, column: 3 });
  });

  it.each(ENGINES)("compiles many functions side by side, in any statement style (%s)", async (engine) => {
    const asi = Array.from({ length: 600 }, (_, i) => `const f${i} = (x: number) => x + ${i}`).join("\n");
    expect(await runCompiled(compileOk(`${asi}\nreturn f599(1)`, { engine }).code)).toBe(600);
    const list = `const fs = [${Array.from({ length: 600 }, (_, i) => `(x: number) => x + ${i}`).join(", ")}];\nreturn fs.length`;
    expect(await runCompiled(compileOk(list, { engine }).code)).toBe(600);
    const nested = `const f = ${"(a: number) => ".repeat(MAX_SCRIPT_NESTING)}1;\nreturn 2`;
    expect(await runCompiled(compileOk(nested, { engine }).code)).toBe(2);
  });

  it("refuses a script longer than MAX_SCRIPT_CHARS", () => {
    const error = compileError(`return 1;${" ".repeat(MAX_SCRIPT_CHARS)}`);
    expect(error.name).toBe("CompileError");
    expect(error.message).toContain(`${MAX_SCRIPT_CHARS + 9} characters long`);
  });

  it("keeps deeply nested or long scripts away from the type stripper, which one of them would break for the process", () => {
    const plain = "const n: number = 1;\nreturn n";
    expect(compileOk(plain).engine).toBe("strip");
    // Each of these makes Node's stripper fault, and every later call with it (measured).
    const hostile = [
      `return ${"[".repeat(1_500)}${"]".repeat(1_500)};`,
      `return ${"x => ".repeat(1_000)}1;`,
      `return ${"!".repeat(10_000)}1;`,
      `return ${"1 + ".repeat(10_000)}1;`,
    ];
    for (const source of hostile) {
      const result = compileScript(source, { cache: false });
      if (result.ok) expect(result.engine).toBe("esbuild");
    }
    expect(compileOk(`${plain} + 0`).engine).toBe("strip"); // the fast path still works
    expect(compileOk(`${"// padding\n".repeat(600)}${plain}`).engine).toBe("esbuild"); // over 6 KiB
  });

  it("esbuild never takes an input source map from the script", async () => {
    const map = { version: 3, sources: ["chain.ts"], names: [], mappings: "AAIA;AAAA;AAAA;AAAA;AAAA" };
    const comment = `//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString("base64")}`;
    const result = compileOk(`const o: any = {};\no.x.y;\n${comment}`, { engine: "esbuild" });
    const stack = await runCompiled(result.code).then(() => "", (error: unknown) => (error as Error).stack ?? "");
    expect(result.map.locateError(stack, "chain.js")).toEqual({ line: 2, column: 5 });
  });

  it("hash is the sha256 of the source", () => {
    expect(compileOk("return 1").hash).toBe(sha256Hex("return 1"));
  });

  it.each(ENGINES)("script faults reject the returned promise (%s)", async (engine) => {
    const result = compileOk("throw new TypeError('nope')", { engine });
    await expect(runCompiled(result.code)).rejects.toThrow("nope");
  });

  it("tools come from the context's globals", async () => {
    const result = compileOk("const r = await tools.add({ a: 1, b: 2 });\nreturn r.value as number");
    const tools = { add: async (args: { a: number; b: number }) => ({ status: "ok", value: args.a + args.b }) };
    expect(await runCompiled(result.code, { tools })).toBe(3);
  });
});

describe("compileScript: TypeScript syntax", () => {
  const cases: Record<string, string> = {
    annotations: "const a: number = 1; let b: string | undefined; return [a, b]",
    interface: "interface P { x: number; y?: string }\nconst p: P = { x: 1 };\nreturn p",
    typeAlias: "type T<U> = { v: U };\nconst t: T<number> = { v: 2 };\nreturn t",
    as: "const v = (JSON.parse('1') as unknown) as number;\nreturn v",
    generics: "function id<T>(x: T): T { return x }\nconst f = <T,>(x: T): T => x;\nreturn [id<number>(1), f(2)]",
    satisfies: "const c = { a: 1 } satisfies Record<string, number>;\nreturn c",
    nonNull: "const m = new Map([[1, 2]]);\nreturn m.get(1)! / 2",
    enum: "enum Color { Red, Green = 5 }\nreturn [Color.Red, Color.Green, Color[5]]",
    constEnum: "const enum K { A = 'a' }\nreturn K.A",
    parameterProperty: "class P { constructor(public x: number) {} }\nreturn new P(4).x",
    classMembers: "abstract class A { abstract f(): number; private readonly z = 1; declare w: string }\nclass B extends A { f() { return 2 } }\nreturn new B().f()",
    decorators: "function d(v: unknown, _c: unknown) { return v }\n@d class C { x = 1 }\nreturn new C().x",
    using: "const log: string[] = [];\n{ using r = { [Symbol.dispose]() { log.push('done') } }; }\nreturn log",
    typeOnlyImportType: "let t: import('x').T | undefined;\nreturn t ?? 1",
  };
  const expected: Record<string, unknown> = {
    annotations: [1, null], interface: { x: 1 }, typeAlias: { v: 2 }, as: 1, generics: [1, 2],
    satisfies: { a: 1 }, nonNull: 1, enum: [0, 5, "Green"], constEnum: "a", parameterProperty: 4,
    classMembers: 2, decorators: 1, using: ["done"], typeOnlyImportType: 1,
  };

  it.each(Object.keys(cases))("%s compiles and runs", async (name) => {
    const result = compileOk(cases[name] ?? "");
    expect(JSON.parse(JSON.stringify(await runCompiled(result.code)))).toEqual(expected[name]);
  });

  it("enums and decorators take the esbuild path; plain TS takes the fast path", () => {
    expect(compileOk(cases.enum ?? "").engine).toBe("esbuild");
    expect(compileOk(cases.decorators ?? "").engine).toBe("esbuild");
    expect(compileOk(cases.generics ?? "").engine).toBe("strip");
  });

  it("does not lower async/await or using", () => {
    const code = compileOk("await using r = null;\nreturn await Promise.resolve(1)", { engine: "esbuild" }).code;
    expect(code).toContain("await using r = null");
    expect(code).toContain("async function __chain__");
    expect(code).not.toContain("__async");
  });
});

describe("compileScript: syntax errors", () => {
  it.each([
    ["an unterminated group", "\n\nconst r = /(/;\nreturn 1;", 3, 11, /^Invalid regular expression: \/\(\/: Unterminated group/],
    ["a range out of order, after TypeScript", "const n: number = 1;\nconst r = /[b-a]/;", 2, 11, /Range out of order/],
  ])("a regular expression V8 refuses: %s, positioned in the original text", (_label, source, line, column, message) => {
    for (const engine of ENGINES) {
      const error = compileError(source, engine);
      expect(error).toMatchObject({ phase: "compile", name: "SyntaxError", line, column });
      expect(error.message).toMatch(message);
    }
  });

  it.each(ENGINES)("says what to do for a namespace, and ends no message with a dangling colon (%s)", (engine) => {
    const namespace = compileError("namespace N { export const a = 1 }\nreturn N.a", engine);
    expect(namespace).toMatchObject({ name: "SyntaxError", line: 1 });
    expect(namespace.message).toContain("TypeScript namespaces cannot be declared in a chain script");
    const awaitName = compileError("var await = 1;\nreturn 1", engine);
    expect(awaitName.message).toBe('Cannot use "await" as an identifier here');
  });

  it.each(ENGINES)("an error on line 1 (%s)", (engine) => {
    const error = compileError("const = 1;\nreturn 2", engine);
    expect(error).toMatchObject({ name: "SyntaxError", line: 1, column: 7 });
    expect(error.message).toBe('Expected identifier but found "="');
  });

  it.each(ENGINES)("an error mid-file (%s)", (engine) => {
    const error = compileError("const a = 1;\nconst b = 2;\nconst c = ;\nconst d = 4;\nreturn a", engine);
    expect(error).toMatchObject({ name: "SyntaxError", line: 3, column: 11, message: 'Unexpected ";"' });
  });

  it("an error on the last line, without a trailing newline", () => {
    expect(compileError("const a = 1;\nreturn a +")).toMatchObject({ line: 2, column: 11 });
  });

  it("an error inside type syntax", () => {
    const error = compileError("const a = 1;\nconst b: Array<string = [];\nreturn b");
    expect(error).toMatchObject({ name: "SyntaxError", line: 2, column: 23, message: 'Expected ">" but found "="' });
  });

  it("a redeclaration (a scope error the type stripper does not see)", () => {
    const error = compileError("const res = 1;\nconst res = 2;\nreturn res");
    expect(error).toMatchObject({ line: 2, column: 7, message: 'The symbol "res" has already been declared' });
  });

  it.each(ENGINES)("a U+FEFF at the start of a line does not move the column (%s)", (engine) => {
    expect(compileError("\uFEFFconst b = ;", engine)).toMatchObject({ line: 1, column: 12 });
    expect(compileError("\uFEFFconst b = ;\nreturn 1;", engine)).toMatchObject({ line: 1, column: 12 });
    expect(compileError("const a = 1;\n\uFEFFconst b = ;", engine)).toMatchObject({ line: 2, column: 12 });
    expect(compileError("const a = 1;\r\n\uFEFF\uFEFFconst é = ;\r\nreturn a", engine)).toMatchObject({ line: 2, column: 13 });
  });

  it("columns count UTF-16 code units after non-ASCII text", () => {
    expect(compileError("const é = '😀'; const b = ;")).toMatchObject({ line: 1, column: 27 });
  });

  it("CRLF line endings give the same positions as LF", () => {
    const lf = compileError("const a = 1;\nconst b = 2;\nconst c = ;\n");
    const crlf = compileError("const a = 1;\r\nconst b = 2;\r\nconst c = ;\r\n");
    expect({ line: crlf.line, column: crlf.column }).toEqual({ line: lf.line, column: lf.column });
    expect(crlf.codeFrame).toBe(lf.codeFrame);
  });

  it("an extra `}` is reported where it is, not at the wrapper", () => {
    const error = compileError("foo();\n}\nbar();");
    expect(error).toMatchObject({ name: "SyntaxError", line: 2, column: 1 });
    expect(error.message).toContain('Unexpected "}"');
  });

  it("a `}` that would close the wrapper early and reopen it is an error", () => {
    const error = compileError("return 1; }); (function(){");
    expect(error).toMatchObject({ name: "SyntaxError", line: 1, column: 11 });
  });

  it("a block left open points at its `{`", () => {
    const error = compileError("const x = 1;\nif (x) {\n  foo();\n");
    expect(error).toMatchObject({ name: "SyntaxError", line: 2, column: 8 });
    expect(error.message).toContain("never closed");
  });

  it("a script that stops mid-expression says so where its text ends, not that a `}` it lacks is unexpected", () => {
    for (const source of ["return 1 +\n", "const a = 1;\nconst b = a ?", "return 1 +   \n\n"]) {
      const error = compileError(source);
      expect(error.name, source).toBe("SyntaxError");
      expect(error.message, source).toBe("Unexpected end of the script: it stops in the middle of an expression or statement");
      const lines = source.trimEnd().split("\n");
      expect([error.line, error.column], source).toEqual([lines.length, (lines.at(-1) ?? "").length + 1]);
    }
  });

  it("carries a code frame of the original text", () => {
    const error = compileError("const a = 1;\nconst b = ;\nreturn b");
    expect(error.codeFrame).toBe(["  1 | const a = 1;", "> 2 | const b = ;", "    |           ^", "  3 | return b"].join("\n"));
  });
});

describe("compileScript: modules are refused", () => {
  it.each([
    ["static import", "const a = 1;\nimport fs from 'node:fs';\nreturn a", 2, 1],
    ["import type", "import type { T } from 'x';\nreturn 1", 1, 1],
    ["named import", "  import { readFile } from 'fs'", 1, 3],
    ["side-effect import", "import 'x';", 1, 1],
    ["export", "const a = 1;\nexport const b = 2;", 2, 1],
    ["export default", "export default 1", 1, 1],
    ["dynamic import", "const m = await import('node:fs');\nreturn m", 1, 17],
    ["import.meta", "return import.meta.url", 1, 8],
    ["require", "const fs = require('node:fs');", 1, 12],
    ["require in a template expression", "return `${require('x')}`", 1, 11],
    ["require after a type", "const x: string = 'a';\nconst p = require ('path') as { join(): string };", 2, 11],
  ])("%s", (_name, source, line, column) => {
    for (const engine of ENGINES) {
      const error = compileError(source, engine);
      expect(error).toMatchObject({ name: "CompileError", message: MODULE_SYNTAX_MESSAGE, line, column });
    }
  });

  it.each([
    ["a string", "const s = 'require(\"fs\")'; const t = \"import('x')\"; return s + t"],
    ["a template", "return `require('x') import(y) ${'import(z)'}`"],
    ["comments", "// const fs = require('fs');\n/* import x from 'y'; import('z') */\nreturn 1"],
    ["a property call", "const o = { require: (x: number) => x, import: (y: number) => y };\nreturn o.require(1) + o.import(2)"],
    ["a method definition", "const o = { require(x: number) { return x }, import(): number { return 2 } };\nreturn o.require(1)"],
    ["a regex", "return /require\\(x\\)|import\\(/.test('require(x)')"],
    ["a local require function", "function require(n: number) { return n * 2 }\nreturn require(21)"],
    ["an import type annotation", "let t: import('x').T | undefined;\nreturn t ?? 1"],
    ["a key named export", "const o = { export: 1, import: 2 };\nreturn o.export + o.import"],
  ])("no false positive for the word in %s", async (_name, source) => {
    const result = compileOk(source);
    await expect(runCompiled(result.code)).resolves.toBeDefined();
  });
});

describe("compileScript: edge scripts", () => {
  it.each(ENGINES)("an empty script returns undefined (%s)", async (engine) => {
    expect(await runCompiled(compileOk("", { engine }).code)).toBeUndefined();
    expect(await runCompiled(compileOk("   \n\n", { engine }).code)).toBeUndefined();
  });

  it.each(ENGINES)("a last-line comment without a newline does not swallow the wrapper (%s)", async (engine) => {
    expect(await runCompiled(compileOk("return 7 // done", { engine }).code)).toBe(7);
  });

  it("a namespace (not allowed in a function body) is a syntax error", () => {
    expect(compileError("namespace N { export const v = 3 }\nreturn N.v")).toMatchObject({ name: "SyntaxError", line: 1 });
  });

  it("an unterminated block comment at the end is a syntax error, not a swallowed wrapper", () => {
    expect(compileError("return 8 /* done").name).toBe("SyntaxError");
  });

  it.each(ENGINES)("unicode identifiers and strings survive (%s)", async (engine) => {
    const result = compileOk("const café: string = 'héllo 😀';\nconst π = 3;\nreturn `${café} ${π} \\u2028 ok`", { engine });
    expect(await runCompiled(result.code)).toBe("héllo 😀 3 \u2028 ok");
  });

  it.each(ENGINES)("CRLF scripts run (%s)", async (engine) => {
    expect(await runCompiled(compileOk("const a: number = 1;\r\nconst b = 2;\r\nreturn a + b\r\n", { engine }).code)).toBe(3);
  });

  it("a 1 MB script compiles and runs", async () => {
    const block = "{\n  const value: number = 1;\n  total += value; // add\n}\n";
    const source = `let total = 0;\n${block.repeat(Math.ceil(1_048_576 / block.length))}return total`;
    expect(source.length).toBeGreaterThan(1_048_576);
    const result = compileOk(source);
    expect(await runCompiled(result.code)).toBe(Math.ceil(1_048_576 / block.length));
  });
});

describe("compileScript: cache", () => {
  it("a hit returns the same object, keyed by the source text", () => {
    const cache = new CompileCache<CachedCompile>();
    const source = "const n: number = 1;\nreturn n";
    const first = compileScript(source, { cache });
    expect(compileScript(` ${source}`.slice(1), { cache })).toBe(first);
    expect(compileScript(`${source} `, { cache })).not.toBe(first);
  });

  it("failures are cached too", () => {
    const cache = new CompileCache<CachedCompile>();
    const first = compileScript("const = 1", { cache });
    expect(first.ok).toBe(false);
    expect(compileScript("const = 1", { cache })).toBe(first);
  });

  it("a different filename or engine is a miss", () => {
    const cache = new CompileCache<CachedCompile>();
    const first = compileScript("return 1", { cache });
    const renamed = compileScript("return 1", { cache, filename: "other.ts" });
    expect(renamed).not.toBe(first);
    expect(renamed.ok && renamed.map.filename).toBe("other.ts");
    const forced = compileScript("return 1", { cache, engine: "esbuild" });
    expect(forced.ok && forced.engine).toBe("esbuild");
  });

  it("uses the default cache unless told not to", () => {
    const source = `return ${String(Math.random())}`;
    expect(compileScript(source)).toBe(compileScript(source));
    expect(compileScript(source, { cache: false })).not.toBe(compileScript(source, { cache: false }));
  });
});
