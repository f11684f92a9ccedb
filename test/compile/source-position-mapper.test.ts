import { describe, expect, it } from "vitest";
import { createSourcePositionMapper, mapRuntimeError } from "../../src/compile/index.ts";
import { compileOk, runCompiled } from "./run-compiled.ts";

const ENGINES = ["auto", "esbuild"] as const;

/** Line 4, column 9 is `new Error`; line 7, column 8 is the call of `inner`. */
const SCRIPT = [
  "const x: number = 1;",
  "await null;",
  "function inner(n: number): never {",
  "  throw new Error('boom ' + String(n));",
  "}",
  "enumless();",
  "return inner(x);",
].join("\n");

async function stackOf(code: string, globals: Record<string, unknown> = {}): Promise<string> {
  try {
    await runCompiled(code, globals);
  } catch (error) {
    return (error as Error).stack ?? "";
  }
  return expect.fail("the script should have thrown");
}

describe("SourcePositionMapper on a real V8 stack", () => {
  it.each(ENGINES)("maps frames back to the original lines and drops host frames (%s)", async (engine) => {
    const result = compileOk(SCRIPT, { engine });
    const stack = await stackOf(result.code, { enumless: () => undefined });
    expect(stack).toContain("chain.js:");
    const mapped = result.map.mapStack(stack, "chain.js");
    expect(mapped.split("\n")).toEqual(["Error: boom 1", "    at inner (chain.ts:4:9)", "    at chain.ts:7:8"]);
    expect(result.map.locateError(stack, "chain.js")).toEqual({ line: 4, column: 9 });
  });

  it.each(ENGINES)("frames from host callbacks are dropped, script frames kept (%s)", async (engine) => {
    const result = compileOk("const r = await tools.fail();\nreturn r", { engine });
    const tools = { fail: () => Promise.reject(new Error("host side")) };
    const stack = await stackOf(result.code, { tools });
    const mapped = result.map.mapStack(stack, "chain.js");
    expect(mapped).not.toContain("source-position-mapper.test");
    expect(mapped).not.toContain("chain.js");
    expect(mapped.startsWith("Error: host side")).toBe(true);
  });

  it.each(ENGINES)("CRLF and unicode before the fault keep lines and columns right (%s)", async (engine) => {
    const source = "const s: string = '😀é';\r\nconst t = s;\r\n  null!.x;\r\nreturn t";
    const result = compileOk(source, { engine });
    const stack = await stackOf(result.code);
    expect(result.map.locateError(stack, "chain.js")).toEqual({ line: 3, column: 9 });
  });

  it("uses the compile filename for the original script", async () => {
    const result = compileOk("throw new Error('x')", { filename: "model-script.ts" });
    const mapped = result.map.mapStack(await stackOf(result.code), "chain.js");
    expect(mapped).toContain("at model-script.ts:1:7");
  });

  it("positions in the wrapper map to nothing", () => {
    const result = compileOk("return 1");
    expect(result.map.originalPosition(1, 1)).toBeUndefined();
    expect(result.map.originalPosition(3, 1)).toBeUndefined();
    expect(result.map.originalPosition(2, 1)).toEqual({ line: 1, column: 1 });
  });

  it("esbuild helper frames before the wrapper map to nothing", () => {
    const result = compileOk("function d(v: unknown, _c: unknown) { return v }\n@d class C {}\nreturn C", { engine: "esbuild" });
    const header = result.code.split("\n").findIndex((line) => line.startsWith("return (async function __chain__"));
    expect(header).toBeGreaterThan(0);
    expect(result.map.originalPosition(1, 1)).toBeUndefined();
  });

  it("a stack that never enters the script maps to its message only", () => {
    const mapper = createSourcePositionMapper({ lineCount: 3, lineOffset: 1 });
    const stack = "RangeError: limit\n    at prelude.js:1:200\n    at node:internal/x:3:4";
    expect(mapper.mapStack(stack, "chain.js")).toBe("RangeError: limit");
    expect(mapper.locateError(stack, "chain.js")).toBeUndefined();
  });

  it.each(ENGINES)("a message line that reads like a frame is message text, kept as it is (%s)", async (engine) => {
    // Each line terminator in the message: only `\n` splits the stack into lines.
    const message = [
      "rpc failed: nonce too low",
      "    at send (/srv/node_modules/web3/lib/blockchain.js:3:14)\r",
      "    at retry (chain.js:2:14)\u2028    at retry (chain.js:2:5)\r    at again (chain.js:2:5)",
      "    at chain.js:2:5",
    ].join("\n");
    const literal = JSON.stringify(message).replace(/\u2028/gu, "\\u2028"); // escaped: a U+2028 in the source ends a line
    const result = compileOk(`const m: string = ${literal};\n\n  throw new Error(m);`, { engine });
    const stack = await stackOf(result.code);
    const header = { name: "Error", message };
    expect(result.map.locateError(stack, "chain.js", header)).toEqual({ line: 3, column: 9 });
    expect(result.map.mapStack(stack, "chain.js", header)).toBe(`Error: ${message}\n    at chain.ts:3:9`);
  });

  it("counts the header's lines from the name too", () => {
    const mapper = createSourcePositionMapper({ lineCount: 3, lineOffset: 1 });
    const stack = "Bad\n    at x (chain.js:2:1)\nName: m\n    at chain.js:3:2";
    expect(mapper.locateError(stack, "chain.js", { name: "Bad\n    at x (chain.js:2:1)\nName", message: "m" })).toEqual({ line: 2, column: 2 });
  });

  it("maps only the script's own file name, whole, in a frame's location", () => {
    const mapper = createSourcePositionMapper({ lineCount: 5, lineOffset: 1 });
    const frames = [
      "    at send (/srv/app/blockchain.js:3:14)",
      "    at toolchain.js:3:14",
      "    at f (/srv/app/chain.js:3:14)",
      "    at g (file:///srv/chain.js:3:14)",
      "    at h (chain.js:3:14x)",
      "    at i (chain.js.map:3:14)",
    ];
    const stack = ["Error: e", ...frames, "    at async __chain__ (chain.js:4:2)", "    at eval (eval at __chain__ (chain.js:3:1), <anonymous>:1:1)"].join("\n");
    expect(mapper.mapStack(stack, "chain.js")).toBe("Error: e\n    at async chain.ts:3:2\n    at eval (eval at __chain__ (chain.ts:2:1), <anonymous>:1:1)");
    expect(mapper.locateError(["Error: e", ...frames, "    at chain.js:4:2"].join("\n"), "chain.js")).toEqual({ line: 3, column: 2 });
  });

  it("keeps async and named frames, escaping the script name in the pattern", () => {
    const mapper = createSourcePositionMapper({ lineCount: 5, lineOffset: 1, filename: "a.ts" });
    const stack = "Error: e\n    at async __chain__ (c+d.js:3:4)\n    at Object.f [as g] (c+d.js:2:1)\n    at cXd.js:2:1";
    expect(mapper.mapStack(stack, "c+d.js")).toBe("Error: e\n    at async a.ts:2:4\n    at Object.f [as g] (a.ts:1:1)");
  });
});

describe("mapRuntimeError", () => {
  it("builds a runtime ChainError with position and code frame in the original text", async () => {
    const result = compileOk(SCRIPT);
    const stack = await stackOf(result.code, { enumless: () => undefined });
    const error = mapRuntimeError({ phase: "runtime", name: "Error", message: "boom 1", stack }, {
      source: SCRIPT, map: result.map, scriptName: "chain.js",
    });
    expect(error).toMatchObject({ phase: "runtime", name: "Error", message: "boom 1", line: 4, column: 9 });
    expect(error.codeFrame).toContain("> 4 |   throw new Error('boom ' + String(n));");
    expect(error.stack).toContain("at inner (chain.ts:4:9)");
  });

  it("keeps frame-like lines of the message as they are and positions the error at its throw", async () => {
    const source = "const text: string = await tools.rpc();\nthrow new Error(`rpc failed: ${text}`);";
    const result = compileOk(source);
    const tools = { rpc: async () => "nonce too low\n    at send (/srv/x/blockchain.js:3:14)\n    at chain.js:1:1" };
    const stack = await stackOf(result.code, { tools });
    const message = "rpc failed: nonce too low\n    at send (/srv/x/blockchain.js:3:14)\n    at chain.js:1:1";
    const error = mapRuntimeError({ phase: "runtime", name: "Error", message, stack }, { source, map: result.map, scriptName: "chain.js" });
    expect(error).toMatchObject({ message, line: 2, column: 7, stack: `Error: ${message}\n    at chain.ts:2:7` });
  });

  it("a fault outside the script keeps no position", () => {
    const mapper = createSourcePositionMapper({ lineCount: 1, lineOffset: 1 });
    const error = mapRuntimeError({ phase: "limit", name: "RangeError", message: "heap", stack: "RangeError: heap\n    at x.js:1:1" }, {
      source: "return 1", map: mapper, scriptName: "chain.js",
    });
    expect(error).toEqual({ phase: "limit", name: "RangeError", message: "heap", stack: "RangeError: heap" });
  });
});
