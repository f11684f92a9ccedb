import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AutoApprovalHandler,
  type ApprovalHandler,
  type ChainRunResult,
  defineTool,
  InProcessSandboxDriver,
  isChainRuntimeError,
  MemoryBlobStore,
  MemoryTraceStore,
  type ProgressStep,
  type SandboxDriver,
  ToolChainTool,
  Toolbox,
  toOpenAITools,
} from "../../src/index.ts";

const executed: string[] = [];

const echo = defineTool({
  name: "echo",
  description: "Echo the arguments back.",
  inputSchema: { type: "object", properties: { value: {} } } as const,
  execute: (args) => ({ echoed: args.value ?? null }),
});
const add = defineTool({
  name: "add",
  description: "Add two numbers.",
  inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } as const,
  outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] } as const,
  execute: ({ a, b }) => ({ sum: a + b }),
});
const big = defineTool({
  name: "big",
  description: "Return a large text.",
  inputSchema: { type: "object", properties: { bytes: { type: "integer" } }, required: ["bytes"] } as const,
  execute: ({ bytes }) => ({ content: [{ type: "text" as const, text: "x".repeat(bytes) }] }),
});
const length = defineTool({
  name: "length",
  description: "Length of a text (or an artifact's text).",
  inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] } as const,
  execute: ({ text }) => ({ length: text.length }),
});
const send = defineTool({
  name: "send",
  description: "A side effect needing approval.",
  risk: "high",
  inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] } as const,
  execute: ({ to }) => {
    executed.push(to);
    return { sent: to };
  },
});
const slow = defineTool({
  name: "slow",
  description: "Wait until aborted.",
  inputSchema: { type: "object", properties: {} } as const,
  execute: (_args, ctx) =>
    new Promise((resolve) => {
      ctx.signal.addEventListener("abort", () => {
        executed.push("slow-aborted");
        resolve({ aborted: true });
      });
    }),
});
const oddName = defineTool({
  name: "odd-name",
  description: "A tool whose name is not an identifier.",
  inputSchema: { type: "object", properties: {} } as const,
  execute: () => ({ odd: true }),
});

function makeChain(options: { approvalHandler?: ApprovalHandler; policy?: Record<string, unknown> } = {}): ToolChainTool {
  return new ToolChainTool({
    toolbox: new Toolbox([echo, add, big, length, send, slow, oddName]),
    blobStore: new MemoryBlobStore(),
    policy: { callTimeoutMs: 2_000, approvalTimeoutMs: 300, totalTimeoutMs: 5_000, cpuTimeMs: 2_000, ...options.policy },
    ...(options.approvalHandler ? { approvalHandler: options.approvalHandler } : {}),
  });
}

describe("ToolChainTool", () => {
  let chain: ToolChainTool;
  beforeAll(() => {
    chain = makeChain({ approvalHandler: new AutoApprovalHandler("approved") });
  });
  afterAll(async () => {
    await chain.close();
  });

  it("is a Tool named run_chain that drops into a toolbox and a provider encoding", () => {
    expect(chain.name).toBe("run_chain");
    expect(chain.inputSchema.required).toEqual(["code"]);
    const outer = new Toolbox([chain]);
    const [encoded] = toOpenAITools(outer) as { function: { name: string; description: string } }[];
    expect(encoded?.function.name).toBe("run_chain");
    expect(encoded?.function.description).toContain("declare const tools");
    expect(chain.description).toContain(chain.declarations());
  });

  it("runs sequential calls and chains results", async () => {
    const run = await chain.run(`
      const first = await tools.add({ a: 1, b: 2 });
      const second = await tools.add({ a: first.structured.sum, b: 10 });
      return second.structured.sum;
    `);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toBe(13);
    expect(run.callTrace.map((record) => [record.tool, record.status])).toEqual([
      ["add", "ok"],
      ["add", "ok"],
    ]);
    expect(run.stats.toolCalls).toBe(2);
  });

  it("runs parallel calls with Promise.all", async () => {
    const run = await chain.run(`
      const results = await Promise.all([1, 2, 3, 4].map((n) => tools.add({ a: n, b: n })));
      return results.map((result) => result.structured.sum);
    `);
    expect(run.returnValue).toEqual([2, 4, 6, 8]);
    expect(run.callTrace).toHaveLength(4);
  });

  it.each([
    ["null", null],
    ["true", true],
    ["0", 0],
    ["-12.5", -12.5],
    ['"héllo ✓ 🚀"', "héllo ✓ 🚀"],
    ["[1, [2, {}], null]", [1, [2, {}], null]],
    ['({ a: { b: [1, "x"] }, "quoted key": false })', { a: { b: [1, "x"] }, "quoted key": false }],
  ])("round-trips return value %s exactly", async (expression, expected) => {
    const run = await chain.run(`return ${expression};`);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toEqual(expected);
  });

  it("refuses a chainId that is already running, and takes it again once that chain ended", async () => {
    const first = chain.run("await tools.echo({ value: 1 }); return 1;", { chainId: "same-id" });
    await expect(chain.run("return 2;", { chainId: "same-id" })).rejects.toMatchObject({ code: "ARGUMENT_INVALID" });
    expect((await first).returnValue).toBe(1);
    expect((await chain.run("return 3;", { chainId: "same-id" })).returnValue).toBe(3);
  });

  it("routes each concurrent chain's calls to its own trace", async () => {
    const store = new MemoryTraceStore();
    const traced = new ToolChainTool({ toolbox: new Toolbox([echo]), traceStore: store, policy: { totalTimeoutMs: 10_000 } });
    try {
      const runs = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          traced.run(`for (let k = 0; k < ${i + 1}; k++) await tools.echo({ value: ${i} }); return ${i};`, { chainId: `chain-${i}` }),
        ),
      );
      for (const [i, run] of runs.entries()) {
        expect(run.status).toBe("ok");
        expect(run.callTrace).toHaveLength(i + 1);
        const trace = await store.load(`chain-${i}`);
        expect(trace.calls.map((call) => call.args)).toEqual(Array.from({ length: i + 1 }, () => ({ value: i })));
      }
    } finally {
      await traced.close();
    }
  });

  it("returns undefined when the script returns nothing", async () => {
    const run = await chain.run("await tools.echo({ value: 1 });");
    expect(run.status).toBe("ok");
    expect(run.returnValue).toBeUndefined();
  });

  it("passes artifacts between calls without the bytes entering the isolate", async () => {
    const run = await chain.run(`
      const large = await tools.big({ bytes: 100000 });
      if (!large.artifactRef) return "not offloaded";
      const measured = await tools.length({ text: artifact(large.artifactRef) });
      return { ref: large.artifactRef, length: measured.structured.length, preview: large.text.length < 2000 };
    `);
    expect(run.status).toBe("ok");
    expect(run.returnValue).toMatchObject({ length: 100000, preview: true });
  });

  it("reaches tools with names that are not identifiers", async () => {
    const run = await chain.run(`return (await tools["odd-name"]({})).structured;`);
    expect(run.returnValue).toEqual({ odd: true });
  });

  it("exposes the budget and refuses calls past it", async () => {
    const limited = makeChain({ policy: { maxToolCalls: 3 } });
    try {
      const run = await limited.run(`
        const before = budget.remaining;
        const results = [];
        for (let i = 0; i < 5; i++) results.push((await tools.echo({ value: i })).status);
        return { before, after: budget.remaining, results };
      `);
      expect(run.returnValue).toEqual({ before: 3, after: 0, results: ["ok", "ok", "ok", "error", "error"] });
      expect(run.callTrace.filter((record) => record.code === "BUDGET_EXCEEDED")).toHaveLength(2);
    } finally {
      await limited.close();
    }
  });

  it("executes exactly maxToolCalls tools in a flood of 1000 parallel calls", async () => {
    let count = 0;
    const counter = defineTool({
      name: "count",
      description: "Count calls.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: () => ({ n: ++count }),
    });
    const flood = new ToolChainTool({ tools: [counter], policy: { maxToolCalls: 50 } });
    try {
      const run = await flood.run(`
        const results = await Promise.all(Array.from({ length: 1000 }, () => tools.count({})));
        return results.filter((result) => result.status === "ok").length;
      `);
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBe(50);
      expect(count).toBe(50);
    } finally {
      await flood.close();
    }
  });

  describe("approvals inside a chain", () => {
    it("approved: the side effect runs", async () => {
      executed.length = 0;
      const run = await chain.run(`return (await tools.send({ to: "a@example.com" })).status;`);
      expect(run.returnValue).toBe("ok");
      expect(executed).toEqual(["a@example.com"]);
    });

    it("denied: the script sees status denied and nothing runs", async () => {
      executed.length = 0;
      const denying = makeChain({ approvalHandler: new AutoApprovalHandler("denied") });
      try {
        const run = await denying.run(`const r = await tools.send({ to: "b@example.com" }); return [r.status, r.code];`);
        expect(run.returnValue).toEqual(["denied", "APPROVAL_DENIED"]);
        expect(executed).toEqual([]);
        expect(run.callTrace[0]?.status).toBe("denied");
      } finally {
        await denying.close();
      }
    });

    it("timeout: a handler that never answers yields denied after approvalTimeoutMs", async () => {
      executed.length = 0;
      const never: ApprovalHandler = { request: () => new Promise(() => {}) };
      const waiting = makeChain({ approvalHandler: never });
      try {
        const run = await waiting.run(`const r = await tools.send({ to: "c@example.com" }); return r.code;`);
        expect(run.returnValue).toBe("APPROVAL_TIMEOUT");
        expect(executed).toEqual([]);
      } finally {
        await waiting.close();
      }
    });
  });

  describe("bad input", () => {
    it("reports a syntax error with the line and column of the original script and a code frame", async () => {
      const run = await chain.run("const a = 1;\nconst b = ;\nreturn a;");
      expect(run.status).toBe("error");
      expect(run.error?.phase).toBe("compile");
      expect(run.error?.line).toBe(2);
      expect(run.error?.column).toBe(11);
      expect(run.error?.codeFrame).toContain("const b = ;");
      expect(run.callTrace).toEqual([]);
    });

    it.each(['import fs from "node:fs";\nreturn 1;', 'const fs = require("fs");\nreturn 1;', "export const x = 1;"])(
      "refuses modules with a message pointing to tools.*: %s",
      async (code) => {
        const run = await chain.run(code);
        expect(run.status).toBe("error");
        expect(run.error?.phase).toBe("compile");
        expect(run.error?.message).toContain("tools.");
      },
    );

    it("compiles TypeScript-only syntax", async () => {
      const run = await chain.run(`
        interface Sum { sum: number }
        enum Color { Red = 1, Blue = 2 }
        const add = async <T extends number>(a: T, b: T): Promise<Sum> => (await tools.add({ a, b })).structured as Sum;
        const total = (await add(Color.Red, Color.Blue)) satisfies Sum;
        return total!.sum as number;
      `);
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBe(3);
    });

    it("runs decorators (esbuild's helpers stay inside the script's expression), mapping an error's line", async () => {
      const run = await chain.run(
        "function tag(value: unknown, _context: unknown) { return value; }\n@tag class Box { n = 2 }\nconst box = new Box();\nif (box.n === 2) throw new Error('boom');\nreturn box.n;",
      );
      expect(run.status).toBe("error");
      expect(run.error).toMatchObject({ phase: "runtime", message: "boom", line: 4 });
      const ok = await chain.run("function tag(value: unknown, _context: unknown) { return value; }\n@tag class Box { n = 2 }\nreturn new Box().n;");
      expect(ok.status).toBe("ok");
      expect(ok.returnValue).toBe(2);
    });

    it("reports a regular expression V8 refuses as a compile error at its place in the original script", async () => {
      const run = await chain.run("const a = 1;\n\nconst r = /(/;\nreturn a;");
      expect(run.status).toBe("error");
      expect(run.error).toMatchObject({ phase: "compile", name: "SyntaxError", line: 3, column: 11 });
      expect(run.error?.message).toContain("Invalid regular expression");
      expect(run.error?.codeFrame).toContain("const r = /(/;");
    });

    it("runs an empty script", async () => {
      const run = await chain.run("");
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBeUndefined();
    });

    it("runs a 1 MB script", async () => {
      const filler = `// ${"padding ".repeat(100)}\n`.repeat(Math.ceil(1_000_000 / 810));
      const run = await chain.run(`${filler}return "done";`);
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBe("done");
    });

    it("maps a runtime error to the original line with a stack", async () => {
      const run = await chain.run(`const x: number = 1;\n\nconst y = (null as any).field;\nreturn y;`);
      expect(run.status).toBe("error");
      expect(run.error?.phase).toBe("runtime");
      expect(run.error?.name).toBe("TypeError");
      expect(run.error?.line).toBe(3);
      expect(run.error?.codeFrame).toContain("(null as any).field");
      expect(run.error?.stack).toContain(":3:");
    });

    it.each([
      ["setTimeout", "await new Promise((resolve) => setTimeout(resolve, 10));", "no timers"],
      ["process", "return process.env.HOME;", "no Node.js APIs"],
      ["fetch", "return await fetch('https://example.com');", "no network access"],
      ["btoa", "return btoa('x');", "the JavaScript built-ins only, no web APIs"],
    ])("says why %s is missing, at the model's line", async (name, body, hint) => {
      const run = await chain.run(`const a = 1;\n${body}`);
      expect(run.error).toMatchObject({ name: "ReferenceError", line: 2 });
      expect(run.error?.message).toContain(`${name} is not defined (isochain scripts have ${hint}`);
    });

    it("says to call a tool on tools.* when a script calls it as a global", async () => {
      const run = await chain.run("const a = 1;\nreturn await echo({ value: a });");
      expect(run.error).toMatchObject({ name: "ReferenceError", line: 2 });
      expect(run.error?.message).toBe("echo is not defined (echo is a tool: call it as `await tools.echo({...})`).");
    });

    it("names the closest tools when a script calls one that does not exist", async () => {
      const run = await chain.run("const a = 1;\nreturn await (tools as any).ecko({ value: a });");
      expect(run.error).toMatchObject({ name: "TypeError", line: 2 });
      expect(run.error?.message).toBe('tools.ecko is not a function (there is no tool "ecko"; did you mean tools.echo?).');
      const odd = await chain.run("return await (tools as any)['odd-nme']({});");
      expect(odd.error?.message).toContain('did you mean tools["odd-name"]?');
    });

    it("says to await a call (not that a tool is missing) for a method of its promise, and to call a tool for a property of it", async () => {
      const unawaited = await chain.run("const r = (tools.echo({ value: 1 }) as any).map((x: any) => x);\nreturn r;");
      expect(unawaited.error).toMatchObject({ name: "TypeError", line: 1 });
      expect(unawaited.error?.message).toBe(
        "tools.echo(...).map is not a function (tools.echo(...) gives a promise of the call's result: await it first, e.g. " +
          "`const result = await tools.echo({...})`, then read result.structured or result.text).",
      );
      const property = await chain.run("return await (tools.echo as any).invoke({ value: 1 });");
      expect(property.error?.message).toBe("tools.echo.invoke is not a function (tools.echo is the tool itself, a function: call it as `await tools.echo({...})`).");
    });

    it("lists the tools when no name is close", async () => {
      const run = await chain.run("return await (tools as any).fetchWeatherForecast({});");
      // By name, as `Object.keys(tools)` lists them.
      expect(run.error?.message).toMatch(/^tools\.fetchWeatherForecast is not a function \(there is no tool "fetchWeatherForecast"; the tools are tools\.add, tools\.big, tools\.echo, /);
      expect(run.error?.message).toContain('tools["odd-name"]');
    });

    it("reminds a script that returns or passes on a tool call it did not await", async () => {
      const returned = await chain.run("const r = tools.echo({ value: 1 });\nreturn { r };");
      expect(returned.error?.message).toBe(
        "return value must be JSON-compatible: found a Promise at .r (a tool call's result is a promise: await it, e.g. `await tools.name({...})`)",
      );
      const passed = await chain.run("const r = await tools.echo({ value: tools.echo({ value: 1 }) });\nreturn r.text;");
      expect(passed.returnValue).toMatch(/found a Promise at \.value \(a tool call's result is a promise: await it/);
    });

    it("leaves a TypeError of the script's own objects, and of a tool's own result, as V8 wrote it", async () => {
      const own = await chain.run("const api: any = {};\nreturn api.fetch();");
      expect(own.error?.message).toBe("api.fetch is not a function");
      const result = await chain.run("const r: any = await tools.echo({ value: 1 });\nreturn r.text.nope();");
      expect(result.error?.message).toBe("r.text.nope is not a function");
    });

    it("reports an early error V8 finds as a compile error, with no call run", async () => {
      // A new script: V8's check runs while the sandbox compiles it; the sandbox cannot start it.
      const run = await chain.run(`await tools.echo({ value: ${Date.now()} });\nconst res = 1;\nconst res = 2;\nreturn res;`);
      expect(run.status).toBe("error");
      expect(run.error).toMatchObject({ phase: "compile", line: 3, column: 7, message: 'The symbol "res" has already been declared' });
      expect(run.callTrace).toHaveLength(0);
      // A runtime SyntaxError stays one.
      const parsed = await chain.run(`const text = "{ not json ${Date.now()}";\nreturn JSON.parse(text);`);
      expect(parsed.error).toMatchObject({ phase: "runtime", name: "SyntaxError", line: 2 });
    });

    it("leaves a ReferenceError of the script's own names as V8 wrote it", async () => {
      const run = await chain.run("return notDeclaredAnywhere;");
      expect(run.error?.message).toBe("notDeclaredAnywhere is not defined");
    });

    it("keeps the trace when the script throws after calls", async () => {
      const run = await chain.run(`await tools.echo({ value: 1 }); await tools.echo({ value: 2 }); throw new Error("boom");`);
      expect(run.status).toBe("error");
      expect(run.error?.message).toBe("boom");
      expect(run.callTrace).toHaveLength(2);
    });

    it("rejects a non-JSON return value with a clear error", async () => {
      const run = await chain.run("return { f: () => 1, n: 1n };");
      expect(run.status).toBe("error");
      expect(run.error?.message.toLowerCase()).toContain("json");
    });

    it("offloads a large return value to an artifact", async () => {
      const run = await chain.run(`return "y".repeat(10000);`);
      expect(run.status).toBe("ok");
      expect(run.returnArtifactRef).toMatch(/^sha256:/);
    });

    it("throws CHAIN_CLOSED after close", async () => {
      const closed = makeChain();
      await closed.close();
      await expect(closed.run("return 1")).rejects.toSatisfy((error: unknown) => isChainRuntimeError(error) && error.code === "CHAIN_CLOSED");
    });

    it.each([
      ["signal", { signal: {} }],
      ["onProgress", { onProgress: "log" }],
      ["chainId", { chainId: "a/b" }],
      ["chainId", { chainId: "" }],
      ["seed", { seed: Number.NaN }],
      ["seed", { seed: 1.5 }],
      ["clockStart", { clockStart: "2026-01-01" }],
      ["clockStart", { clockStart: Number.POSITIVE_INFINITY }],
      ["clockStart", { clockStart: 1e300 }],
    ])("refuses run options.%s %j with ARGUMENT_INVALID, before anything runs", async (argument, options) => {
      const before = executed.length;
      const error: unknown = await chain.run("await tools.echo({ value: 1 }); return 1", options as never).catch((thrown: unknown) => thrown);
      expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
      expect(isChainRuntimeError(error) && error.message).toContain(`options.${argument}`);
      expect(executed.length).toBe(before);
    });

    it("refuses a misspelt run option with a suggestion instead of ignoring it", async () => {
      const before = executed.length;
      const error: unknown = await chain.run("await tools.echo({ value: 1 }); return 1", { chainid: "x" } as never).catch((thrown: unknown) => thrown);
      expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
      expect(isChainRuntimeError(error) && error.message).toMatch(/run\(\) options has no field "chainid"; did you mean chainId\? \(fields: signal, onProgress, chainId, seed, clockStart\)/);
      expect(executed.length).toBe(before);
    });

    it("takes an AbortSignal look-alike (another realm's, a polyfill's)", async () => {
      const signal = { aborted: false, addEventListener: () => undefined, removeEventListener: () => undefined };
      expect((await chain.run("return 1", { signal: signal as unknown as AbortSignal })).returnValue).toBe(1);
    });

    it.each([
      ["null options", null, /needs options/],
      ["tools that are not a list", { tools: "echo" }, /options\.tools must be a list of tools \(an array or another iterable\); got "echo"/],
      ["a Toolbox as tools", { tools: new Toolbox([]) }, /options\.tools must be a list of tools; got a Toolbox; pass it as toolbox:/],
      ["a misspelt option", { tools: [], approvalhandler: {} }, /ToolChainTool options has no field "approvalhandler"; did you mean approvalHandler\?/],
      ["a policy field beside the policy", { tools: [], memoryLimitMb: 64 }, /ToolChainTool options has no field "memoryLimitMb" \(fields: toolbox, tools, policy,/],
      ["a negative poolSize", { tools: [], poolSize: -1 }, /poolSize must be an integer from 0 to 256/],
      ["a huge poolSize", { tools: [], poolSize: 1e9 }, /poolSize must be an integer from 0 to 256/],
      ["an array as the toolbox", { toolbox: [] }, /options\.toolbox must be a Toolbox; got an array; wrap the tools in one/],
      ["a toolbox that is not one", { toolbox: {} }, /options\.toolbox must be a Toolbox; got an object/],
      ["a driver without run()", { tools: [], driver: {} }, /options\.driver must be "process", "in-process" or a SandboxDriver; it has no run\(\) method/],
      ["a blobStore of 5", { tools: [], blobStore: 5 }, /options\.blobStore must be a BlobStore; got 5/],
      ["a blobStore without unpin()", { tools: [], blobStore: { put() {}, resolve() {}, pin() {} } }, /options\.blobStore must be a BlobStore; it has no unpin\(\) method/],
      ["an approvalHandler without request()", { tools: [], approvalHandler: 5 }, /options\.approvalHandler must be an ApprovalHandler/],
      ["a traceStore that is not one", { tools: [], traceStore: {} }, /options\.traceStore must be a TraceStore; it has no append\(\) method/],
      ["hooks that are not functions", { tools: [], hooks: { TOOL_START: 5 } }, /options\.hooks\.TOOL_START must be a function when given/],
      ["a name with a space", { tools: [], name: "run chain" }, /options\.name must be a tool name matching/],
      ["an empty name", { tools: [], name: "" }, /options\.name must be a tool name/],
      ["a skill that is not one", { tools: [], skill: 5 }, /withSkill\(\) takes a skill/],
      ["an unknown driver name", { tools: [], driver: "in_process" }, /options\.driver must be "process", "in-process" or a SandboxDriver; got "in_process"/],
      ["pool beside driver", { tools: [], pool: 2, driver: "in-process" }, /options\.pool stands for driver and poolSize: give it or driver, not both/],
      ["pool beside poolSize", { tools: [], pool: { size: 2 }, poolSize: 1 }, /give it or poolSize, not both/],
      ["a negative pool", { tools: [], pool: -1 }, /options\.pool must be an integer from 0 to 256; got -1/],
      ["a pool size out of range", { tools: [], pool: { size: 1e9 } }, /options\.pool\.size must be an integer from 0 to 256/],
      ["a pool with an unknown field", { tools: [], pool: { sise: 2 } }, /options\.pool has no field "sise" \(fields: size, driver\)/],
      ["a pool driver name that is none", { tools: [], pool: { driver: "child" } }, /options\.pool\.driver must be "process", "in-process" or a SandboxDriver; got "child"/],
      ["a pool driver without run()", { tools: [], pool: { driver: {} } }, /options\.pool\.driver must be "process", "in-process" or a SandboxDriver; it has no run\(\) method/],
      ["a pool driver without close()", { tools: [], pool: { run() {} } }, /options\.pool must be "process", "in-process" or a SandboxDriver; it has no close\(\) method/],
      ["a pool that is a string", { tools: [], pool: "in-process" }, /options\.pool must be a size \(a number\), \{ size\?, driver\? \} or a SandboxDriver; got string/],
    ])("refuses %s with ARGUMENT_INVALID", (_label, options, message) => {
      expect(() => new ToolChainTool(options as never)).toThrow(message);
      try {
        new ToolChainTool(options as never);
      } catch (error) {
        expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
      }
    });

    it("takes the pool in one option, as the spec names it: a size, { size, driver }, or a driver", async () => {
      const owned = new InProcessSandboxDriver({ poolSize: 1 });
      const chains = [
        new ToolChainTool({ tools: [echo], pool: { size: 1, driver: "in-process" } }),
        new ToolChainTool({ tools: [echo], pool: owned }),
      ];
      try {
        for (const each of chains) expect((await each.run("return (await tools.echo({ value: 3 })).status")).returnValue).toBe("ok");
        // The driver given as the pool is not the tool's own: closing the tool leaves it open.
        await chains[1]?.close();
        const after = new ToolChainTool({ tools: [echo], driver: owned });
        chains.push(after);
        expect((await after.run("return 2")).returnValue).toBe(2);
      } finally {
        for (const each of chains) await each.close();
        await owned.close();
      }
      expect(() => new ToolChainTool({ tools: [], pool: 0 })).not.toThrow();
    });

    it("takes tools as any iterable, as Toolbox does", async () => {
      const fromSet = new ToolChainTool({ tools: new Set([echo]), driver: "in-process", poolSize: 0 });
      try {
        expect((await fromSet.run("return (await tools.echo({ value: 3 })).status")).returnValue).toBe("ok");
      } finally {
        await fromSet.close();
      }
    });

    it("refuses a misspelt policy field instead of ignoring it", () => {
      expect(() => new ToolChainTool({ tools: [], policy: { maxToolCall: 5 } as never })).toThrow(/no field "maxToolCall"; did you mean maxToolCalls\?/);
    });
  });

  describe("cancellation and pending calls", () => {
    it("cancels calls still pending when the script returns and records them", async () => {
      executed.length = 0;
      const run = await chain.run(`tools.slow({}); await tools.echo({ value: 1 }); return "early";`);
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBe("early");
      expect(executed).toContain("slow-aborted");
      const slowRecord = run.callTrace.find((record) => record.tool === "slow");
      expect(slowRecord?.status).toBe("error");
    });

    it("ends with status cancelled when the caller aborts", async () => {
      const controller = new AbortController();
      const pending = chain.run(`await tools.slow({}); return 1;`, { signal: controller.signal });
      setTimeout(() => controller.abort(), 50);
      const run = await pending;
      expect(run.status).toBe("cancelled");
      expect(run.callTrace).toHaveLength(1);
      // Every end but ok and suspended says why (ChainRunResult.error).
      expect(run.error).toMatchObject({ phase: "limit", name: "CancelledError", message: expect.stringContaining("caller's signal") });
      const before = new AbortController();
      before.abort();
      expect((await chain.run("return 1;", { signal: before.signal })).error).toMatchObject({ name: "CancelledError" });
    });
  });

  describe("limits", () => {
    let limited: ToolChainTool;
    beforeAll(() => {
      limited = makeChain({ policy: { totalTimeoutMs: 400, cpuTimeMs: 300, memoryLimitMb: 32, maxOutputBytes: 1000 } });
    });
    afterAll(async () => {
      await limited.close();
    });

    const healthy = async (): Promise<void> => {
      const next = await limited.run("return (await tools.add({ a: 2, b: 2 })).structured.sum;");
      expect(next.status).toBe("ok");
      expect(next.returnValue).toBe(4);
    };

    it.each([
      ["a synchronous infinite loop", "for (;;) {}"],
      ["an infinite loop after an await", "await tools.echo({ value: 1 }); for (;;) {}"],
      ["a microtask storm", "for (;;) await null;"],
      ["a never-resolving promise", "await new Promise(() => {});"],
    ])("ends %s with a timeout or limit error, trace whole, host healthy", async (_name, code) => {
      const run: ChainRunResult = await limited.run(code);
      expect(["timeout", "error"]).toContain(run.status);
      if (run.status === "error") expect(run.error?.phase).toBe("limit");
      if (code.includes("tools.echo")) expect(run.callTrace).toHaveLength(1);
      await healthy();
    });

    it("ends a memory bomb with a limit error and the next chain succeeds", async () => {
      const run = await limited.run(`const keep = []; for (;;) keep.push("x".repeat(1024) + keep.length);`);
      expect(run.status === "error" || run.status === "timeout").toBe(true);
      expect(run.error?.phase).toBe("limit");
      await healthy();
    });

    it("turns deep recursion into a runtime RangeError", async () => {
      const run = await limited.run("const f = (n: number): number => f(n + 1) + 1; return f(0);");
      expect(run.status).toBe("error");
      expect(run.error?.name).toBe("RangeError");
      await healthy();
    });

    it("has the console methods a script reaches for beyond log: table, dir, trace, assert, group, count, time", async () => {
      const run = await limited.run(
        [
          'console.table([{ a: 1 }]);',
          'console.dir({ b: 2 });',
          'console.trace("here");',
          'console.assert(1 === 1, "not shown");',
          'console.assert(false, "x is", 3);',
          'console.group("section");',
          'console.groupEnd();',
          'console.count(); console.count(); console.count("k"); console.countReset(); console.count();',
          'console.time("t"); await tools.echo({ value: 1 }); console.timeLog("t", "mid"); console.timeEnd("t"); console.timeEnd("t");',
          "return 1;",
        ].join("\n"),
      );
      expect(run.status).toBe("ok");
      const lines = run.outputText.trimEnd().split("\n");
      expect(lines.slice(0, 9)).toEqual([
        "[ { a: 1 } ]",
        "{ b: 2 }",
        "Trace: here",
        "Assertion failed: x is 3",
        "section",
        "default: 1",
        "default: 2",
        "k: 1",
        "default: 1",
      ]);
      expect(lines[9]).toMatch(/^t: \d+ms mid$/);
      expect(lines[10]).toMatch(/^t: \d+ms$/);
      expect(lines[11]).toBe('Timer "t" does not exist');
      expect(lines).toHaveLength(12);
    });

    it("bounds console output with a marker", async () => {
      const run = await limited.run(`for (let i = 0; i < 10000; i++) console.log("line", i); return 1;`);
      expect(run.status).toBe("ok");
      expect(Buffer.byteLength(run.outputText)).toBeLessThan(1200);
      expect(run.outputText).toMatch(/truncat/i);
    });
  });

  describe("isolation", () => {
    it.each(["process", "require", "fetch", "setTimeout", "setInterval", "Buffer", "module", "globalThis.Deno", "globalThis.Bun"])(
      "%s is not reachable",
      async (name) => {
        const run = await chain.run(`return typeof ${name};`);
        expect(run.returnValue).toBe("undefined");
      },
    );

    it("checks arguments with the built-ins it captured, whatever the script patched", async () => {
      const run = await chain.run(`
        Array.isArray = () => false;
        Object.getPrototypeOf = () => Object.prototype;
        const asArray = await tools.echo([1, 2]);
        const withMap = await tools.echo({ value: new Map() });
        return [asArray.code, asArray.text, withMap.code, withMap.text];
      `);
      expect(run.returnValue).toEqual([
        "BRIDGE_ERROR",
        "tools.echo: arguments must be one object, e.g. tools.echo({ ... }).",
        "BRIDGE_ERROR",
        expect.stringContaining("a Map at .value"),
      ]);
    });

    it("constructor chains reach only the isolate's own global", async () => {
      const run = await chain.run(`
        const viaTools = tools.echo.constructor.constructor("return this")();
        const viaThis = (function () { return this; }).constructor("return typeof process")();
        return [typeof viaTools.process, viaThis, viaTools === globalThis];
      `);
      expect(run.returnValue).toEqual(["undefined", "undefined", true]);
    });

    it("prototype pollution through arguments never reaches the host", async () => {
      const run = await chain.run(`
        const evil = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}');
        return (await tools.echo({ value: evil })).status;
      `);
      expect(run.status).toBe("ok");
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty("polluted");
    });

    it("getters and proxies handed to tools are refused inside the isolate without running host code", async () => {
      const run = await chain.run(`
        let reads = 0;
        const value = { get sneaky() { reads++; return reads; } };
        const proxy = new Proxy({}, { get: () => { throw new Error("trap"); }, ownKeys: () => { throw new Error("trap"); } });
        const a = await tools.echo({ value });
        const b = await tools.echo({ value: proxy });
        return [a.status, a.structured ?? null, reads, b.status, b.code];
      `);
      expect(run.status).toBe("ok");
      const [aStatus, aStructured, reads, bStatus, bCode] = run.returnValue as unknown[];
      expect(aStatus).toBe("error");
      expect(aStructured).toBeNull();
      expect(reads).toBe(0);
      expect(bStatus).toBe("error");
      expect(bCode).toBe("BRIDGE_ERROR");
    });
  });

  it("reports progress steps in order", async () => {
    const steps: ProgressStep["type"][] = [];
    await chain.run(`console.log("hi"); await tools.echo({ value: 1 });`, { onProgress: (step) => steps.push(step.type) });
    expect(steps).toEqual(["log", "tool_call", "tool_result"]);
  });

  it("seeds Math.random and starts the virtual clock where asked", async () => {
    const code = "return [Math.random(), Math.random(), Date.now(), new Date().getTime() >= 1000];";
    const a = await chain.run(code, { seed: 7, clockStart: 1000 });
    const b = await chain.run(code, { seed: 7, clockStart: 1000 });
    const [r1, r2, now] = a.returnValue as number[];
    expect((b.returnValue as number[]).slice(0, 2)).toEqual([r1, r2]);
    expect(now).toBeGreaterThanOrEqual(1000);
    expect(now).toBeLessThan(2000);
    expect(a.seed).toBe(7);
    expect(a.clockStart).toBe(1000);
  });

  it("execute() gives the model a bounded summary and the full run as structuredContent", async () => {
    const result = await chain.execute({ code: `console.log("working"); await tools.add({ a: 1, b: 1 }); return { ok: true };` });
    expect(result.isError).toBe(false);
    const text = result.content[0]?.type === "text" ? result.content[0].text : "";
    expect(text).toContain("status: ok");
    expect(text).toContain("working");
    expect(text).toContain("#0 add ok");
    expect((result.structuredContent as unknown as ChainRunResult).returnValue).toEqual({ ok: true });
  });

  it("execute() refuses input without code", async () => {
    const result = await chain.execute({} as never);
    expect(result.isError).toBe(true);
  });

  it("execute() refuses input whose code cannot be read, as it refuses a missing code", async () => {
    const throwing = { get code(): string { throw new Error("getter"); } };
    const proxy = new Proxy({}, { get() { throw new Error("trap"); } });
    for (const input of [throwing, proxy]) {
      const result = await chain.execute(input as never);
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: "text", text: 'run_chain needs { "code": string }: the script to run.' }]);
    }
  });

  it("serves a driver that calls a tool before its run() returns", async () => {
    // The chain posts the sandbox run before its own bookkeeping; a driver of its own may call
    // back at once, from inside run(), and must find the session there.
    const driver: SandboxDriver = {
      kind: "in-process",
      async run(request) {
        const result = await request.onToolCall({ callIndex: 0, tool: "add", argsJson: '{"a":2,"b":3}' }, new AbortController().signal);
        const sum = "structured" in result ? (result.structured as { sum: number }).sum : undefined;
        return { status: "ok", returnJson: JSON.stringify(sum), wallMs: 0, cpuMs: 0, heapBytes: 0 };
      },
      warm: () => Promise.resolve(),
      close: () => Promise.resolve(),
    };
    const own = new ToolChainTool({ toolbox: new Toolbox([add]), driver });
    // Twice: a script compiled for the first time holds its calls until V8 has checked it; the
    // second run finds it in the compile cache, and the call comes straight through.
    for (let i = 0; i < 2; i++) {
      const result = await own.run("return 0;");
      expect(result.status).toBe("ok");
      expect(result.returnValue).toBe(5);
      expect(result.callTrace).toMatchObject([{ seq: 0, callId: "c0", tool: "add", status: "ok" }]);
      expect(result.stats.toolCalls).toBe(1);
    }
    await own.close();
  });
});

describe("ToolChainTool on a sandbox not to be trusted", () => {
  it("keeps at most as many clock runs in the trace as the prelude records, so the trace still loads", async () => {
    // Two full frames of distinct readings (the prelude sends at most 10 000 runs in all).
    const frame = (from: number): number[] => Array.from({ length: 10_000 }, (_, i) => [from + i, 1]).flat();
    const flooding: SandboxDriver = {
      kind: "flooding",
      run: (request) => {
        request.onClock?.(frame(0));
        request.onClock?.(frame(10_000));
        return Promise.resolve({ status: "ok", returnJson: "1", wallMs: 1, cpuMs: 1, heapBytes: 0 });
      },
      close: () => Promise.resolve(),
    };
    const traceStore = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [echo], driver: flooding, traceStore });
    try {
      expect((await chain.run("return 1", { chainId: "clock-flood" })).status).toBe("ok");
      const trace = await traceStore.load("clock-flood");
      expect(trace.clockReadings).toEqual(frame(0));
    } finally {
      await chain.close();
    }
  });

  it("answers a return value that is not JSON text as a SandboxError, its trace whole, rather than rejecting", async () => {
    const forged: SandboxDriver = {
      kind: "forged",
      run: () => Promise.resolve({ status: "ok", returnJson: "{not json", wallMs: 1, cpuMs: 1, heapBytes: 0 }),
      close: () => Promise.resolve(),
    };
    const traceStore = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [echo], driver: forged, traceStore });
    try {
      const result = await chain.run("return 1", { chainId: "forged-return" });
      expect(result.status).toBe("error");
      expect(result.error).toEqual({ phase: "limit", name: "SandboxError", message: "the sandbox returned a value that is not JSON text" });
      expect(result.returnValue).toBeUndefined();
      expect((await traceStore.load("forged-return")).outcome).toMatchObject({ status: "error" });
    } finally {
      await chain.close();
    }
  });
});
