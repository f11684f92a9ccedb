import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ChainTrace,
  defineTool,
  FileTraceStore,
  isChainRuntimeError,
  loadTraceFile,
  MemoryTraceStore,
  replay,
  type ReplayOptions,
  ToolChainTool,
  Toolbox,
} from "../../src/index.ts";
import { decodeTraceFrames, encodeTraceFrame } from "../../src/trace/trace-frame-codec.ts";

const echo = defineTool({
  name: "echo",
  description: "Echoes its arguments.",
  inputSchema: { type: "object", properties: { x: { type: "string" } } } as const,
  execute: (args) => args,
});

const SCRIPT = `const a = await tools.echo({ x: "a" });\nconst b = await tools.echo({ x: "b" });\nreturn [a.status, b.status];`;

let dir: string;
/** The trace of SCRIPT, run to the end: two completed calls and an `ok` outcome. */
let trace: ChainTrace;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "isochain-replay-input-"));
  const store = new FileTraceStore({ dir: join(dir, "traces"), fsync: false });
  const chain = new ToolChainTool({ tools: [echo], traceStore: store, driver: "in-process" });
  await chain.run(SCRIPT, { chainId: "two-calls" });
  await chain.close();
  trace = await store.load("two-calls");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `action`'s rejection as `CODE: message` (`untyped ...` for anything but a ChainRuntimeError). */
async function refusal(action: Promise<unknown>): Promise<{ code: string; message: string; argument?: unknown }> {
  try {
    await action;
  } catch (error) {
    if (!isChainRuntimeError(error)) return { code: "untyped", message: String(error) };
    return { code: error.code, message: error.message, argument: error.details.argument };
  }
  return { code: "no throw", message: "" };
}

describe("strict replay of a trace that ends between calls", () => {
  it("stops where the trace ends (partialAt), identical, when the chain died after c0's result", async () => {
    // The log as a crash right after c0's tool-result leaves it: c0 whole, no c1, no chain-end.
    const { events } = decodeTraceFrames(readFileSync(join(dir, "traces", "two-calls.trace")));
    const cut = events.findIndex((event) => event.type === "tool-result");
    const path = join(dir, "crash-after-c0.trace");
    writeFileSync(path, Buffer.concat(events.slice(0, cut + 1).map((event) => encodeTraceFrame(event))));
    const crashed = await loadTraceFile(path);
    expect(crashed.outcome).toBeUndefined();
    expect(crashed.calls.map((call) => [call.callId, call.state])).toEqual([["c0", "completed"]]);

    const report = await replay(crashed, { mode: "strict", driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report).toMatchObject({ identical: true, partialAt: "c1", replayedCalls: ["c0"] });
  });

  it("still reports an unexpected call when the trace has an outcome", async () => {
    const oneCall: ChainTrace = { ...trace, calls: trace.calls.filter((call) => call.callId === "c0") };
    const report = await replay(oneCall, { mode: "strict", driver: "in-process" });
    expect(report.identical).toBe(false);
    expect(report.partialAt).toBeUndefined();
    expect(report.divergence).toMatchObject({ kind: "unexpected-call", callId: "c1" });
  });
});

describe("replay() refuses a trace object of an unsupported format version", () => {
  it("as loading the same trace from a file would (TRACE_INVALID)", async () => {
    const refused = await refusal(replay({ ...trace, version: 99 }, { mode: "strict", driver: "in-process" }));
    expect(refused.code).toBe("TRACE_INVALID");
    expect(refused.message).toContain("Trace format version 99 is not supported");
    expect((await refusal(replay({ ...trace, version: 99 }, { mode: "resume", tools: [echo], traceStore: new MemoryTraceStore(), driver: "in-process" }))).code).toBe("TRACE_INVALID");
  });

  it("still replays the versions it reads", async () => {
    expect((await replay({ ...trace, version: 1 }, { mode: "strict", driver: "in-process" })).identical).toBe(true);
  });
});

describe("replay() options of the wrong kind", () => {
  // Cast: these are what a JavaScript caller (or `as any`) can hand over.
  const cases: [string, Record<string, unknown>][] = [
    ["source", { source: 5 }],
    ["source", { source: null }],
    ["toolbox", { toolbox: [echo] }],
    ["tools", { tools: 5 }],
    ["traceStore", { traceStore: {} }],
    ["blobStore", { blobStore: 5 }],
    ["approvalHandler", { approvalHandler: () => "approved" }],
    ["approvalMode", { approvalMode: "ask" }],
    ["hooks", { hooks: 5 }],
    ["hooks.TOOL_START", { hooks: { TOOL_START: "log" } }],
    ["policy", { policy: 5 }],
    ["chainId", { chainId: "a b" }],
    ["force", { force: "yes" }],
    ["signal", { signal: {} }],
    ["onProgress", { onProgress: 5 }],
  ];

  it.each(["strict", "resume"] as const)("are ARGUMENT_INVALID naming the option, in %s mode", async (mode) => {
    for (const [argument, option] of cases) {
      const options = { mode, driver: "in-process", ...(mode === "resume" && !("toolbox" in option) ? { tools: [echo] } : {}), ...option } as unknown as ReplayOptions;
      const refused = await refusal(replay(trace, options));
      expect(refused, argument).toMatchObject({ code: "ARGUMENT_INVALID", argument });
      expect(refused.message, argument).toContain(`replay() options.${argument} must be`);
    }
  });

  it("a toolbox that is an array of tools says to wrap them in a Toolbox (not a bare TypeError)", async () => {
    const refused = await refusal(replay(trace, { mode: "resume", toolbox: [echo] as unknown as Toolbox, traceStore: new MemoryTraceStore(), driver: "in-process" }));
    expect(refused.code).toBe("ARGUMENT_INVALID");
    expect(refused.message).toContain("new Toolbox([...])");
    const wrapped = await replay(trace, { mode: "resume", toolbox: new Toolbox([echo]), traceStore: new MemoryTraceStore(), driver: "in-process" });
    expect(wrapped.identical).toBe(true);
  });

  it("an unusable chainId is ARGUMENT_INVALID before the store is asked (not TRACE_INVALID), and the trace can still be resumed", async () => {
    const storeDir = mkdtempSync(join(dir, "claim-"));
    const store = new FileTraceStore({ dir: storeDir, fsync: false });
    const chain = new ToolChainTool({ tools: [echo], traceStore: store, driver: "in-process" });
    await chain.run(SCRIPT, { chainId: "to-resume" });
    await chain.close();
    const original = await store.load("to-resume");
    const refused = await refusal(replay(original, { mode: "resume", tools: [echo], traceStore: store, chainId: "not an id", driver: "in-process" }));
    expect(refused).toMatchObject({ code: "ARGUMENT_INVALID", argument: "chainId" });
    const resumed = await replay(original, { mode: "resume", tools: [echo], traceStore: store, driver: "in-process" });
    expect(resumed.identical).toBe(true);
  });
});

describe("strict replay of a script that failed before a recorded call", () => {
  it.each([
    ["a runtime error", `const o = undefined;\nreturn o.x;`, /never made it: it failed first \(runtime error at 2:10\) with TypeError: Cannot read properties of undefined/],
    ["a compile error", `const a = await tools.echo({ x: "a" };`, /never made it: it failed first \(compile error at 1:\d+\) with SyntaxError: /],
    ["a thrown non-Error", `throw 5;`, /never made it: it failed first \(runtime error\) with Error: Uncaught 5\.$/],
  ])("says why in the divergence: %s", async (_what, source, expected) => {
    const report = await replay(trace, { mode: "strict", source, driver: "in-process" });
    expect(report.divergence).toMatchObject({ kind: "missing-call", callId: "c0" });
    expect(report.divergence?.message).toMatch(/^Call c0 \(tools\.echo\) is in the trace, but the replayed script never made it: /);
    expect(report.divergence?.message).toMatch(expected);
  });

  it("quotes a long or multi-line error message on one bounded line", async () => {
    const source = `throw new Error("first line\\n" + "x".repeat(5000));`;
    const report = await replay(trace, { mode: "strict", source, driver: "in-process" });
    const message = report.divergence?.message ?? "";
    expect(message).toContain("with Error: first line xxx");
    expect(message.split("\n")).toHaveLength(1);
    expect(message.length).toBeLessThan(500);
    expect(message.endsWith("…")).toBe(true);
  });

  it("adds nothing when the script ended without making the call", async () => {
    const report = await replay(trace, { mode: "strict", source: `return ["ok", "ok"];`, driver: "in-process" });
    expect(report.divergence?.message).toBe("Call c0 (tools.echo) is in the trace, but the replayed script never made it.");
  });
});

describe("options a strict replay does not read", () => {
  it("are still fine when well-formed", async () => {
    const report = await replay(trace, {
      mode: "strict",
      driver: "in-process",
      toolbox: new Toolbox([echo]),
      traceStore: new MemoryTraceStore(),
      approvalMode: "suspend",
      force: false,
      hooks: { TOOL_START: () => undefined },
      policy: {},
    });
    expect(report.identical).toBe(true);
  });
});
