/**
 * A run that hits a limit tells the model what to change, and a wall timeout names the calls it
 * was waiting for: the error says what, where and how to fix, like a script's own errors.
 */
import { afterAll, describe, expect, it } from "vitest";
import { killOutcome } from "../../sandbox/isolate-common.ts";
import { defineTool, summarizeRun, ToolChainTool } from "../../src/index.ts";

const limits = { memoryLimitMb: 64, cpuTimeMs: 1000, totalTimeoutMs: 2000, maxOutputBytes: 1000, maxArgumentBytes: 1000 };

describe("limit errors", () => {
  it("say how to fix each limit, after the limit and its value", () => {
    expect(killOutcome("memory", limits).error?.message).toBe(
      "the script exceeded memoryLimitMb (64 MiB). The script holds too much data: keep large results as artifact refs, work through data in pieces, and return less.",
    );
    expect(killOutcome("cpu", limits).error?.message).toMatch(/^the script used more than cpuTimeMs \(1000 ms\) of CPU\. A loop that never ends/);
    expect(killOutcome("timeout", limits).error?.message).toMatch(/^the chain ran past totalTimeoutMs \(2000 ms\)\. Do less in one chain/);
  });
});

describe.each(["in-process", "process"] as const)("limit errors (%s driver)", (driver) => {
  const slow = defineTool({
    name: "slow",
    description: "Answers after its signal fires.",
    inputSchema: { type: "object", properties: {} } as const,
    execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("late"), { once: true })),
  });
  const echo = defineTool({ name: "echo", description: "", inputSchema: { type: "object", properties: {} } as const, execute: () => "ok" });
  const chain = new ToolChainTool({ tools: [slow, echo], driver, poolSize: 1, policy: { totalTimeoutMs: 600, cpuTimeMs: 300 } });
  afterAll(() => chain.close());

  it("names the calls a timed-out chain was waiting for, before the hint", async () => {
    const run = await chain.run("await tools.echo({});\nawait Promise.all([tools.slow({}), tools.slow({})]);");
    expect(run.status).toBe("timeout");
    expect(run.error?.name).toBe("TimeoutError");
    expect(run.error?.message).toMatch(/totalTimeoutMs \(600 ms\)[^]*\. It was waiting for tools\.slow \(#1\), tools\.slow \(#2\)\. Do less in one chain/);
    expect(summarizeRun(run)).toContain("It was waiting for tools.slow (#1), tools.slow (#2).");
  });

  it("names them, and keeps the calls that ran in callTrace, under a flood of refused calls that fills the trace", async () => {
    // 1 040 calls on a budget of 50 (under the 1 050 a run may make: MAX_CALLS_PAST_BUDGET): the
    // 990 refusals end first, and the trace keeps 1 000 records.
    const run = await chain.run("await Promise.all(Array.from({ length: 1040 }, (_, i) => (i < 2 ? tools.slow({}) : tools.echo({}))));");
    expect(run.status).toBe("timeout");
    expect(run.error?.message).toMatch(/\. It was waiting for tools\.slow \(#0\), tools\.slow \(#1\)\. Do less in one chain/);
    expect(run.callTrace).toHaveLength(1000);
    expect(run.droppedCallRecords).toBe(40);
    // Every call that ran (the budget's 50) is there; refusals gave their place.
    expect(run.callTrace.slice(0, 50).map((record) => [record.seq, record.code ?? record.status])).toEqual(
      Array.from({ length: 50 }, (_, seq) => [seq, seq < 2 ? "CANCELLED" : "ok"]),
    );
    expect(run.callTrace.slice(50).every((record) => record.code === "BUDGET_EXCEEDED")).toBe(true);
  });

  it("ends a script that keeps calling into a spent budget, and says what to change", async () => {
    // 20 000 calls in one synchronous loop (~3-4 µs of isolate CPU each: well inside cpuTimeMs),
    // sent to the host together when it ends, 1 050 of them enough to end the run.
    const run = await chain.run("for (let i = 0; i < 20000; i++) tools.echo({ i });\nreturn 1;");
    expect(run.status).toBe("error");
    expect(run.error?.name).toBe("CallLimitError");
    expect(run.error?.message).toContain("1050 tool calls, 1000 past its budget (maxToolCalls 50). Each call past the budget is refused");
    expect(run.callTrace).toHaveLength(1000);
    expect(run.stats.toolCalls).toBe(50); // the budget's; the rest were refused
  });

  it("tells a script that spun past its CPU time what to change", async () => {
    const run = await chain.run("let n = 0;\nwhile (true) n++;");
    expect(run.error?.name).toBe("CpuLimitError");
    expect(run.error?.message).toContain("Bound the loop, or leave heavy work to a tool.");
  });
});
