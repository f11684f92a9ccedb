import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChainTrace,
  defineTool,
  describeJsonDiff,
  FileTraceStore,
  InProcessSandboxDriver,
  loadTraceFile,
  MemoryBlobStore,
  MemoryTraceStore,
  replay,
  type SandboxDriver,
  ToolChainTool,
  TRACE_FORMAT_VERSION,
  traceToTest,
} from "../../src/index.ts";
import { DEADLOCK_MESSAGE, NEVER_ANSWERED_DEADLOCK_MESSAGE } from "../../sandbox/sandbox-driver.ts";

const lookup = defineTool({
  name: "lookup",
  description: "Look up a contact.",
  inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] } as const,
  execute: ({ key }) => ({ email: `${key}@example.com`, at: Math.random() }),
});
const send = defineTool({
  name: "send_email",
  description: "Send.",
  risk: "high",
  inputSchema: { type: "object", properties: { to: { type: "string" }, cc: { type: "array", items: { type: "string" } } }, required: ["to"] } as const,
  execute: ({ to }) => ({ sent: to }),
});

const SCRIPT = `
const [ceo, cfo] = await Promise.all([tools.lookup({ key: "ceo" }), tools.lookup({ key: "cfo" })]);
const mail = await tools.send_email({ to: ceo.structured.email, cc: [cfo.structured.email] });
console.log("sent", mail.status);
return { mail: mail.status, picked: Math.floor(Math.random() * 1000), year: new Date().getUTCFullYear() };
`;

let dir: string;
let trace: ChainTrace;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "isochain-strict-"));
  const store = new FileTraceStore({ dir, fsync: false });
  const chain = new ToolChainTool({ tools: [lookup, send], traceStore: store, policy: { maxRiskUnapproved: "high" }, driver: "in-process" });
  const run = await chain.run(SCRIPT, { chainId: "recorded" });
  await chain.close();
  expect(run.status).toBe("ok");
  // Read back from the file, as another process would.
  trace = await loadTraceFile(join(dir, "recorded.trace"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("replay strict", () => {
  it("is identical with no tool implementations present, with the same seed and clock", async () => {
    const report = await replay(trace, { mode: "strict", driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect([...report.replayedCalls].sort()).toEqual(["c0", "c1", "c2"]);
    expect(report.run.returnValue).toEqual(trace.outcome?.returnValue);
    expect(report.run.seed).toBe(trace.seed);
    expect(report.run.clockStart).toBe(trace.clockStart);
  });

  it("reports the first call whose arguments differ, with a readable diff", async () => {
    const edited = SCRIPT.replace("cc: [cfo.structured.email]", 'cc: ["ops@example.com"]');
    const report = await replay(trace, { mode: "strict", source: edited, driver: "in-process" });
    expect(report.identical).toBe(false);
    expect(report.divergence).toMatchObject({
      kind: "call-mismatch",
      callId: "c2",
      expected: { tool: "send_email", args: { to: "ceo@example.com", cc: ["cfo@example.com"] } },
      actual: { tool: "send_email", args: { to: "ceo@example.com", cc: ["ops@example.com"] } },
    });
    expect(report.divergence?.diff).toEqual(['args.cc[0]: expected "cfo@example.com", got "ops@example.com"']);
    expect(report.divergence?.message).toContain("Call c2 (tools.send_email) differs from the trace: other arguments.");
    expect(report.run.status).toBe("cancelled"); // stopped at the divergence
    expect(report.run.error).toBeUndefined(); // the divergence says why; nobody's signal fired
  });

  it("reports a call to another tool", async () => {
    const edited = SCRIPT.replace('tools.lookup({ key: "cfo" })', 'tools.send_email({ to: "cfo" })');
    const report = await replay(trace, { mode: "strict", source: edited, driver: "in-process" });
    expect(report.divergence).toMatchObject({ kind: "call-mismatch", callId: "c1" });
    expect(report.divergence?.diff).toContain('tool: expected "lookup", got "send_email"');
  });

  it("reports a call the trace does not have, and a recorded call never made", async () => {
    const extra = await replay(trace, { mode: "strict", source: SCRIPT.replace("return {", "await tools.lookup({ key: 'x' });\nreturn {"), driver: "in-process" });
    expect(extra.divergence).toMatchObject({ kind: "unexpected-call", callId: "c3", actual: { tool: "lookup", args: { key: "x" } } });
    const fewer = await replay(trace, {
      mode: "strict",
      source: `const ceo = await tools.lookup({ key: "ceo" }); return 1;`,
      driver: "in-process",
    });
    expect(fewer.divergence).toMatchObject({ kind: "missing-call", callId: "c1" });
  });

  it("compares the return value and status", async () => {
    const report = await replay(trace, { mode: "strict", source: SCRIPT.replace("mail: mail.status", 'mail: "changed"'), driver: "in-process" });
    expect(report.divergence).toMatchObject({ kind: "outcome-mismatch" });
    expect(report.divergence?.diff).toEqual(['returnValue.mail: expected "ok", got "changed"']);
    const thrown = await replay(trace, { mode: "strict", source: SCRIPT.replace("return {", "throw new Error('boom');\nreturn {"), driver: "in-process" });
    expect(thrown.divergence?.diff).toContain('status: expected "ok", got "error"');
  });

  it("compares an offloaded return value by content", async () => {
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [], traceStore: store, blobStore: new MemoryBlobStore(), policy: { maxInlineResultBytes: 1024 }, driver: "in-process" });
    const run = await chain.run(`return "x".repeat(5000);`, { chainId: "big-return" });
    await chain.close();
    expect(run.returnArtifactRef).toBeDefined();
    const big = await store.load("big-return");
    expect((await replay(big, { mode: "strict", driver: "in-process" })).identical).toBe(true);
    expect((await replay(big, { mode: "strict", source: `return "y".repeat(5000);`, driver: "in-process" })).identical).toBe(false);
  });

  it("refuses a recorded error that is not one as TRACE_INVALID, before comparing outcomes", async () => {
    for (const error of [null, "boom", { phase: "runtime", name: null, message: "m" }]) {
      const broken = { ...trace, outcome: { ...trace.outcome, status: "error", error } } as unknown as ChainTrace;
      await expect(replay(broken, { mode: "strict", driver: "in-process" }), JSON.stringify(error)).rejects.toMatchObject({
        code: "TRACE_INVALID",
        message: expect.stringContaining("replay(): not a chain trace: outcome.error is not { phase, name, message, line?, column? }"),
      });
    }
  });

  it("stops at the end of a recording that ends in doubt, without claiming a divergence", async () => {
    const crashed: ChainTrace = {
      ...trace,
      calls: trace.calls.map((call) => (call.callId === "c2" ? { ...call, state: "in-doubt" as const } : call)),
    };
    const { outcome: _outcome, ...withoutOutcome } = crashed;
    const report = await replay(withoutOutcome, { mode: "strict", driver: "in-process" });
    expect(report.identical).toBe(true);
    expect(report.partialAt).toBe("c2");
  });

  it("records a call the isolate refused by what it was refused for: a valid call made there instead is a divergence", async () => {
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [lookup], traceStore: store, driver: "in-process" });
    const code = "const r = await tools.lookup({ key: () => 1 });\nreturn r.code;";
    const run = await chain.run(code, { chainId: "refused-in-isolate" });
    await chain.close();
    expect(run.returnValue).toBe("BRIDGE_ERROR");
    const recorded = await store.load("refused-in-isolate");
    expect(recorded.calls[0]?.args).toEqual({ $refused: expect.stringContaining("found a function at .key") as string });
    expect((await replay(recorded, { mode: "strict", driver: "in-process" })).identical).toBe(true);
    for (const edited of ["tools.lookup({})", "tools.lookup()", 'tools.lookup({ key: "a" })']) {
      const report = await replay(recorded, { mode: "strict", driver: "in-process", source: code.replace("tools.lookup({ key: () => 1 })", edited) });
      expect(report.divergence?.kind, edited).toBe("call-mismatch");
    }
  });

  it("goes on past a call the recorded script returned without awaiting, and checks the outcome", async () => {
    const store = new MemoryTraceStore();
    const audit = defineTool({
      name: "audit",
      description: "Slow: still running when the script returns.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("stopped"), { once: true })),
    });
    const chain = new ToolChainTool({ tools: [lookup, audit], traceStore: store, driver: "in-process" });
    const code = 'const seen = [];\ntools.audit({}).then(() => seen.push("audit"));\nconst who = await tools.lookup({ key: "a" });\nreturn { email: who.structured.email, seen };';
    const run = await chain.run(code, { chainId: "fire-and-forget" });
    await chain.close();
    expect(run.status).toBe("ok");
    const recorded = await store.load("fire-and-forget");
    expect(recorded.calls.map((call) => [call.callId, call.state])).toEqual([
      ["c0", "in-doubt"],
      ["c1", "completed"],
    ]);
    const same = await replay(recorded, { mode: "strict", driver: "in-process" });
    expect(same.identical, same.divergence?.message).toBe(true);
    expect(same.partialAt).toBeUndefined();
    expect(same.replayedCalls).toEqual(["c0", "c1"]);
    // The script never saw audit's answer, in the recording or the replay.
    expect(same.run.returnValue).toEqual({ email: "a@example.com", seen: [] });
    const edited = await replay(recorded, { mode: "strict", driver: "in-process", source: code.replace("seen };", "seen, extra: 1 };") });
    expect(edited.divergence?.kind).toBe("outcome-mismatch");
    // Edited to await it (what CALLS_NOT_AWAITED asks): the recording has no answer to give, so
    // the run ends at once, stuck (not at the default totalTimeoutMs, 300 s: past this test's
    // 30 s), and the divergence says why, on both drivers.
    const explained =
      "The replayed script was left waiting with c0 (tools.audit) out, which the recorded chain never answered: it returned while that call still ran. " +
      "A strict replay has no answer to give; if the script awaits it, replay the recorded script, or resume the trace to run it live.";
    for (const driver of ["in-process", "process"] as const) {
      const awaited = await replay(recorded, {
        mode: "strict",
        driver,
        source: code.replace('tools.audit({}).then(() => seen.push("audit"));', "await tools.audit({});"),
      });
      expect(awaited.divergence?.kind, driver).toBe("missing-call"); // c1, never made: the script waited at c0
      expect(awaited.run.status, driver).toBe("error");
      expect(awaited.run.error, driver).toMatchObject({ name: "DeadlockError", message: NEVER_ANSWERED_DEADLOCK_MESSAGE });
      expect(awaited.divergence?.message, driver).toContain(explained);
      // Awaited beside a call the recording answered: stuck once that answer is in.
      const together = await replay(recorded, {
        mode: "strict",
        driver,
        source: code.replace(
          'tools.audit({}).then(() => seen.push("audit"));\nconst who = await tools.lookup({ key: "a" });',
          'const [, who] = await Promise.all([tools.audit({}), tools.lookup({ key: "a" })]);',
        ),
      });
      expect(together.replayedCalls, driver).toEqual(["c0", "c1"]);
      expect(together.run.error?.name, driver).toBe("DeadlockError");
      expect(together.divergence?.message, driver).toContain(explained);
    }
    // A driver from elsewhere may copy results (a remote sandbox, a wrapper): the call is held
    // until the run ends instead, and the recorded script still replays identically.
    const inner = new InProcessSandboxDriver();
    const copying: SandboxDriver = {
      kind: "copying",
      run: (request) => inner.run({ ...request, onToolCall: (call, signal) => request.onToolCall(call, signal).then((result) => ({ ...result })) }),
      close: () => inner.close(),
    };
    try {
      const elsewhere = await replay(recorded, { mode: "strict", driver: copying });
      expect(elsewhere.identical, elsewhere.divergence?.message).toBe(true);
      expect(elsewhere.run.returnValue).toEqual({ email: "a@example.com", seen: [] });
      // A script stuck on its own promise before any call is told only that.
      const own = await replay(recorded, { mode: "strict", driver: "in-process", source: `await new Promise(() => {});\n${code}` });
      expect(own.run.error).toMatchObject({ name: "DeadlockError", message: DEADLOCK_MESSAGE });
      expect(own.divergence?.message).not.toContain("left waiting");
    } finally {
      await inner.close();
    }
  });

  it("stops where the recording of a run its caller cancelled ends, and does not compare that outcome", async () => {
    const store = new MemoryTraceStore();
    const controller = new AbortController();
    const slow = defineTool({
      name: "slow",
      description: "Answers, then cancels the chain it was called from while the script computes.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: () => {
        setTimeout(() => controller.abort(), 20);
        return "late";
      },
    });
    const chain = new ToolChainTool({ tools: [lookup, slow], traceStore: store, driver: "in-process" });
    // Computes between the calls until well past the cancel (the replay does not cancel, and makes c2).
    const code = 'await tools.lookup({ key: "a" });\nawait tools.slow({});\nconst until = Date.now() + 300;\nwhile (Date.now() < until) {}\nawait tools.lookup({ key: "b" });\nreturn 1;';
    const run = await chain.run(code, { chainId: "cancelled-run", signal: controller.signal });
    await chain.close();
    expect(run.status).toBe("cancelled");
    const cancelled = await store.load("cancelled-run");
    const report = await replay(cancelled, { mode: "strict", driver: "in-process" });
    expect(report.divergence?.message).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(cancelled.calls.map((call) => call.state)).toEqual(["completed", "completed"]);
    expect(report.partialAt).toBe("c2");
  });
});

describe("replay of the tools object", () => {
  it("installs the tools in the same order as the run did: a script that picks one by position replays identically", async () => {
    const named = (name: string) => defineTool({ name, description: name, inputSchema: { type: "object", properties: {} } as const, execute: () => ({ name }) });
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [named("zeta"), named("alpha"), named("mid")], traceStore: store });
    const run = await chain.run("const first = Object.keys(tools)[0];\nawait tools[first]({});\nreturn Object.keys(tools);", { chainId: "by-position" });
    await chain.close();
    expect(run.returnValue).toEqual(["alpha", "mid", "zeta"]);
    const strict = await replay(await store.load("by-position"), { mode: "strict" });
    expect(strict.identical, strict.divergence?.message).toBe(true);
  });
});

describe("traceToTest", () => {
  it("refuses a hostile chainId (no chain has one), so no line of it can become code", () => {
    for (const chainId of ["x\nglobalThis.pwned = 1; //", "x\r\nrequire('fs')", "x\u2028globalThis.pwned = 2", "x\u2029y"]) {
      expect(() => traceToTest({ ...trace, chainId })).toThrow(
        expect.objectContaining({ code: "TRACE_INVALID", message: expect.stringContaining('is not 1 to 128 letters, digits, "_" or "-"') }),
      );
    }
  });

  it('keeps a recorded "__proto__" key as data in the emitted trace literal', () => {
    const structured = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const [first, ...rest] = trace.calls;
    const withProto: ChainTrace = { ...trace, calls: [{ ...(first as ChainTrace["calls"][number]), result: { status: "ok", text: "{}", structured } }, ...rest] };
    const source = traceToTest(withProto);
    const literal = /export const trace = ([\s\S]*) as unknown as ChainTrace;/.exec(source)?.[1];
    expect(literal).toBeDefined();
    const emitted = new Function(`return (${literal as string});`)() as ChainTrace;
    const result = emitted.calls[0]?.result as { structured: Record<string, unknown> };
    expect(Object.keys(result.structured)).toEqual(["__proto__", "a"]);
    expect(Object.getPrototypeOf(result.structured)).toBe(Object.prototype);
    expect(emitted).toEqual(JSON.parse(JSON.stringify(withProto)));
  });

  it("is shown in docs/replay.md as it emits: the header, the trace's first fields and the test", () => {
    const docs = readFileSync(resolve("docs/replay.md"), "utf8");
    const sample = /```ts\n(\/\/ Generated by isochain traceToTest[\s\S]*?)```/.exec(docs)?.[1] ?? "";
    const chainId = /from chain "([^"]+)"/.exec(sample)?.[1] ?? "";
    const emitted = traceToTest({ ...trace, chainId });
    // The sample elides the middle of the trace; everything else is what traceToTest writes.
    const [head = "", tail = ""] = sample.split(/\n {2}"source": .*\n {2}\/\/ \.\.\. .*\n/);
    const createdAt = `  "createdAt": ${trace.createdAt},`;
    expect(head.replace(/ {2}"createdAt": \d+,/, createdAt)).toBe(emitted.slice(0, emitted.indexOf('  "source": ')).trimEnd());
    expect(tail).toBe(emitted.slice(emitted.indexOf("} as unknown as ChainTrace;")));
    expect(head).toContain(`"version": ${TRACE_FORMAT_VERSION},`);
  });

  it("refuses an importFrom or name that is not a non-empty string (it would write broken code)", () => {
    for (const options of [{ importFrom: 5 }, { importFrom: "" }, { name: null }]) {
      expect(() => traceToTest(trace, options as never)).toThrow(expect.objectContaining({ code: "ARGUMENT_INVALID", message: expect.stringMatching(/^traceToTest\(\) options\.(importFrom|name) must be a non-empty string when given; got /) }));
    }
  });

  it("emits a vitest file that passes for the recorded script and fails for a changed one", () => {
    const source = traceToTest(trace, { importFrom: resolve("src/index.ts") });
    expect(source).toContain('import { replay, type ChainTrace } from');
    expect(source).toContain('replay(trace, { mode: "strict" })');
    const broken = traceToTest({ ...trace, source: trace.source.replace("mail: mail.status", 'mail: "changed"') }, { importFrom: resolve("src/index.ts") });
    const testDir = mkdtempSync(join(tmpdir(), "isochain-emitted-"));
    try {
      writeFileSync(join(testDir, "good.test.ts"), source);
      writeFileSync(join(testDir, "broken.test.ts"), broken);
      writeFileSync(join(testDir, "vitest.config.mjs"), `export default { test: { include: ["*.test.ts"], pool: "forks", execArgv: ["--no-node-snapshot"] } };\n`);
      const vitest = resolve("node_modules/vitest/vitest.mjs");
      const good = spawnSync(process.execPath, [vitest, "run", "good.test.ts"], { cwd: testDir, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } });
      expect(good.status, good.stdout + good.stderr).toBe(0);
      const bad = spawnSync(process.execPath, [vitest, "run", "broken.test.ts"], { cwd: testDir, encoding: "utf8", timeout: 60_000, env: { ...process.env, NO_COLOR: "1" } });
      expect(bad.status).toBe(1);
      expect(bad.stdout + bad.stderr).toMatch(/returnValue\.mail: expected \\?"ok\\?", got \\?"changed/);
    } finally {
      rmSync(testDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("describeJsonDiff", () => {
  it("names each differing path, missing and unexpected keys, and length changes", () => {
    expect(describeJsonDiff({ a: 1, b: { c: [1, 2] }, d: "x" }, { a: 2, b: { c: [1] }, e: true })).toEqual([
      "a: expected 1, got 2",
      "b.c: expected 2 items, got 1",
      'd: missing (expected "x")',
      "e: unexpected true",
    ]);
    expect(describeJsonDiff({ same: [1, { x: null }] }, { same: [1, { x: null }] })).toEqual([]);
  });

  it("never throws: a BigInt, a value holding itself, nesting deeper than the stack", () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(describeJsonDiff({ n: 1 }, { n: 2n ** 70n })).toEqual(["n: expected 1, got 1180591620717411303424n"]);
    expect(describeJsonDiff({ v: 1 }, { v: cyclic })).toEqual(["v: expected 1, got (an array JSON cannot write)"]);
    expect(describeJsonDiff({ v: 1 }, { v: deep })).toEqual(["v: expected 1, got (an array JSON cannot write)"]);
    expect(describeJsonDiff({ v: deep }, { v: [[2]] })).toEqual(["v[0][0]: expected (an array JSON cannot write), got 2"]);
    expect(describeJsonDiff(deep, [[...[deep]]])).toEqual(["[0]".repeat(100) + ": values nested deeper than 100 levels, not compared further"]);
  });
});
