import { describe, expect, it } from "vitest";
import { defineTool, MemoryTraceStore, replay, ToolChainTool } from "../../src/index.ts";

const delay = defineTool({
  name: "delay",
  description: "Answers `tag` after `ms` milliseconds.",
  inputSchema: { type: "object", properties: { ms: { type: "integer" }, tag: { type: "string" } }, required: ["ms", "tag"] } as const,
  execute: async ({ ms, tag }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { tag };
  },
});

const SCRIPT = `
const winner = await Promise.race([tools.delay({ ms: 90, tag: "A" }), tools.delay({ ms: 5, tag: "B" })]);
const order = [];
await Promise.all([
  tools.delay({ ms: 120, tag: "1" }).then(() => order.push(1)),
  tools.delay({ ms: 10, tag: "2" }).then(() => order.push(2)),
  tools.delay({ ms: 60, tag: "3" }).then(() => order.push(3)),
]);
return { winner: winner.structured.tag, order: order.join(",") };`;

describe("answers from a trace arrive in the order the original run received them", () => {
  it.each(["in-process", "process"] as const)("so a race or a completion order replays as recorded (%s driver)", async (driver) => {
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [delay], traceStore: store, driver });
    const run = await chain.run(SCRIPT, { chainId: "raced" });
    await chain.close();
    expect(run.returnValue).toEqual({ winner: "B", order: "2,3,1" });
    const trace = await store.load("raced");
    expect(trace.calls.map((call) => [call.callId, call.resultSeq])).toEqual([
      ["c0", 3],
      ["c1", 0],
      ["c2", 4],
      ["c3", 1],
      ["c4", 2],
    ]);
    const strict = await replay(trace, { mode: "strict", driver });
    expect(strict.divergence).toBeUndefined();
    expect(strict.run.returnValue).toEqual({ winner: "B", order: "2,3,1" });
    const resumed = await replay(trace, { mode: "resume", tools: [delay], traceStore: new MemoryTraceStore(), driver });
    expect(resumed.identical).toBe(true);
    expect(resumed.run.returnValue).toEqual({ winner: "B", order: "2,3,1" });
  }, 30_000);

  it.each(["in-process", "process"] as const)("traces an answered call the script did not await before the chain's end (%s driver)", async (driver) => {
    const store = new MemoryTraceStore();
    const noted: string[] = [];
    const note = defineTool({
      name: "note",
      description: "Notes a value.",
      inputSchema: { type: "object", properties: { v: { type: "number" } } } as const,
      execute: ({ v }) => {
        noted.push(String(v));
        return { noted: v };
      },
    });
    const chain = new ToolChainTool({ tools: [note], traceStore: store, driver });
    const run = await chain.run("tools.note({ v: 1 }); await tools.note({ v: 2 }); tools.note({ v: 3 }); return 1;", { chainId: "loose" });
    await chain.close();
    const trace = await store.load("loose");
    const recorded = trace.calls.filter((call) => call.state === "completed").map((call) => call.callId);
    expect(run.callTrace.map((call) => call.callId).sort()).toEqual([...recorded].sort());

    const strict = await replay(trace, { mode: "strict", driver });
    expect(strict.identical).toBe(true);
    expect(strict.run.callTrace.map((call) => call.callId).sort()).toEqual([...recorded].sort());

    const resumed = await replay(trace, { mode: "resume", tools: [note], traceStore: store, driver });
    const again = await store.load(resumed.run.chainId);
    expect(resumed.run.callTrace.map((call) => call.callId).sort()).toEqual([...recorded].sort());
    expect(again.calls.filter((call) => call.state === "completed").map((call) => call.callId).sort()).toEqual([...recorded].sort());
    expect(new Set(noted).size).toBe(noted.length); // nothing the trace answered ran again
  }, 30_000);
});
