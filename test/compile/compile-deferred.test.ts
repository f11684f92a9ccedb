import { describe, expect, it } from "vitest";
import { CompileCache, compileScript } from "../../src/compile/index.ts";
import type { CachedCompile, CompileResult } from "../../src/compile/index.ts";
import { compileScriptAsync, compileScriptDeferred, isDeferredCompile, type DeferredCompile } from "../../src/compile/compile-script.ts";

function deferred(source: string, cache = new CompileCache<CachedCompile>()): DeferredCompile {
  const compiling = compileScriptDeferred(source, { cache });
  if (!isDeferredCompile(compiling)) expect.fail(`expected a deferred compile for ${JSON.stringify(source)}`);
  return compiling;
}

/** What a result says, without its source map object. */
function essence(result: CompileResult): unknown {
  return result.ok ? { ok: true, code: result.code, engine: result.engine, hash: result.hash } : { ok: false, error: result.error, hash: result.hash };
}

const SOURCES = [
  "const a: number = await Promise.resolve(20);\nreturn a + 1",
  "enum Color { Red = 1 }\nreturn Color.Red", // esbuild: an enum
  "const res = 1;\nconst res = 2;\nreturn res", // the stripper passes it, V8 refuses it: esbuild's error
  "enum E { A }\n\nconst r = /(/;\nreturn E.A", // esbuild passes it, V8 refuses it
  "\n\nconst r = /(/;\nreturn 1;",
  'import("x");\nconst a = 1;\nconst a = 2;', // refused and refused by V8: esbuild's verdict, as before
  "return (await tools.echo({ n: 1 })).status;",
  "const x = 1;\n}, async function () {\nreturn x", // closes its wrapper early: esbuild's second look, the body wrapped twice
];

describe("compileScriptDeferred (V8's check left to confirm)", () => {
  it("ends where compileScript does, for the fast path, esbuild, early errors and refusals", () => {
    for (const source of SOURCES) {
      const expected = essence(compileScript(source, { cache: false }));
      const compiling = compileScriptDeferred(source, { cache: false });
      const final = isDeferredCompile(compiling) ? compiling.confirm() : compiling;
      expect(essence(final), source).toEqual(expected);
    }
  });

  it("hands out the unchecked code at once and confirms it as the same object when V8 accepts it", () => {
    const compiling = deferred("const a: number = 1;\nreturn a");
    expect(compiling.result).toMatchObject({ ok: true, engine: "strip" });
    expect(compiling.confirm()).toBe(compiling.result);
  });

  it("turns a script V8 refuses into a compile error positioned in the original", () => {
    const compiling = deferred("const res = 1;\nconst res = 2;\nreturn res");
    expect(compiling.result.ok).toBe(true); // the type stripper does not check scopes
    const final = compiling.confirm();
    expect(final.ok).toBe(false);
    if (!final.ok) expect(final.error).toMatchObject({ phase: "compile", line: 2, column: 7, message: 'The symbol "res" has already been declared' });
  });

  it("caches the confirmed result only: the next compile is a hit, never deferred again", () => {
    const cache = new CompileCache<CachedCompile>();
    const source = "const x: string = 'y';\nreturn x";
    const compiling = deferred(source, cache);
    expect(cache.size).toBe(0); // nothing cached before the check
    const final = compiling.confirm();
    expect(compileScriptDeferred(source, { cache })).toBe(final);
    expect(compileScript(source, { cache })).toBe(final);
  });

  it("does not defer what fails before the check (a refused import), and caches it", () => {
    const cache = new CompileCache<CachedCompile>();
    const result = compileScriptDeferred('import fs from "fs";\nreturn 1', { cache });
    expect(isDeferredCompile(result)).toBe(false);
    expect(result).toMatchObject({ ok: false, error: { name: "CompileError" } });
    expect(cache.size).toBe(1);
  });
});

describe("compileScriptAsync (esbuild without blocking the thread)", () => {
  it("ends where compileScript does, for every path", async () => {
    for (const source of SOURCES) {
      const expected = essence(compileScript(source, { cache: false }));
      const compiling = await compileScriptAsync(source, { cache: false });
      const final = isDeferredCompile(compiling) ? await compiling.confirm() : compiling;
      expect(essence(final), source).toEqual(expected);
    }
  });

  it("answers without a promise where esbuild is not needed, and with one where it is", async () => {
    const fast = compileScriptAsync("const a: number = 1;\nreturn a", { cache: false });
    expect(fast instanceof Promise).toBe(false);
    const fastConfirmed = isDeferredCompile(fast) ? fast.confirm() : fast;
    expect(fastConfirmed instanceof Promise).toBe(false);

    const typed = compileScriptAsync("enum E { A = 1 }\nreturn E.A", { cache: false });
    expect(typed instanceof Promise).toBe(true);
    // The stripper's code V8 refuses: the fallback to esbuild in confirm is a promise too.
    const refused = compileScriptAsync("const res = 1;\nconst res = 2;\nreturn res", { cache: false });
    if (refused instanceof Promise || !isDeferredCompile(refused)) return expect.fail("expected a deferred compile on the fast path");
    const confirming = refused.confirm();
    expect(confirming instanceof Promise).toBe(true);
    expect(await confirming).toMatchObject({ ok: false, error: { line: 2, column: 7 } });
  });

  it("does not cache a compile esbuild was stopped on: the stop says how busy the host was, not only what the script is", async () => {
    const cache = new CompileCache<CachedCompile>();
    const stopped = await compileScriptAsync(`enum E { A }\n${"let v = 1;\n".repeat(60_000)}return 1`, { cache });
    expect(stopped).toMatchObject({ ok: false, error: { name: "CompileError", message: expect.stringMatching(/^The compiler \(esbuild\) was stopped after 3 s/) } });
    expect(cache.size).toBe(0);
  }, 30_000);

  it("caches the final result: the next compile of the source is a hit", async () => {
    const cache = new CompileCache<CachedCompile>();
    const source = "enum E { A = 2 }\nreturn E.A";
    const first = await compileScriptAsync(source, { cache });
    const final = isDeferredCompile(first) ? await first.confirm() : first;
    expect(compileScriptAsync(source, { cache })).toBe(final);
    expect(compileScript(source, { cache })).toBe(final);
  });
});
