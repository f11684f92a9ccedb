import { describe, expect, it } from "vitest";
import { MemoryTraceStore, replay, ToolChainTool, Toolbox } from "../../src/index.ts";

describe("a cold driver's start is not the chain's budget", () => {
  it("replays a chain of a small totalTimeoutMs on replay()'s own fresh process driver, identical", async () => {
    const traceStore = new MemoryTraceStore();
    const chain = new ToolChainTool({ toolbox: new Toolbox([]), driver: "in-process", traceStore, policy: { totalTimeoutMs: 300 } });
    await chain.warm();
    const original = await chain.run("let n = 0;\nfor (let i = 0; i < 1e5; i++) n += i;\nreturn n;");
    await chain.close();
    expect(original.status).toBe("ok");
    // replay() starts a process driver of its own: its child's start (spawn, prelude, isolate)
    // took the whole 300 ms, and the replay ended `timeout`, not identical.
    const report = await replay(await traceStore.load(original.chainId), { mode: "strict" });
    expect({ status: report.run.status, identical: report.identical }).toEqual({ status: "ok", identical: true });
  }, 30_000);
});
