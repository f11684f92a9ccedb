/**
 * A call the script starts and does not await ("fire and forget", then return): the tool runs,
 * and the trace says what it did. Under the process driver the child's calls and its outcome
 * can arrive in one read, so the chain's end aborts the calls' signal while a tool that has
 * already finished waits for its result to be picked up.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, summarizeRun, ToolChainTool } from "../../src/index.ts";

describe.each(["in-process", "process"] as const)("un-awaited calls (%s driver)", (driver) => {
  const finished: boolean[] = [];
  const send = defineTool({
    name: "send",
    description: "Sends at once.",
    inputSchema: { type: "object", properties: {} } as const,
    execute: async (_args, ctx) => {
      finished.push(!ctx.signal.aborted);
      return { sent: true };
    },
  });
  const chain = new ToolChainTool({ tools: [send], driver, poolSize: 1 });
  afterAll(() => chain.close());

  it("records a tool that finished before the chain ended as what it returned", async () => {
    for (let i = 0; i < 6; i++) {
      const run = await chain.run("tools.send({}); return 1;");
      expect(run.status).toBe("ok");
      expect(run.callTrace.map((record) => [record.tool, record.status])).toEqual([["send", "ok"]]);
    }
    expect(finished).toEqual([true, true, true, true, true, true]);
  });
  it("warns, with the calls' numbers and how to fix it, when the script returned before its calls were answered", async () => {
    const run = await chain.run("[1, 2, 3].forEach(async () => {\n  await tools.send({});\n});\nreturn 'sent';");
    expect(run.status).toBe("ok");
    expect(run.callTrace).toHaveLength(3);
    expect(run.warnings).toEqual([{ code: "CALLS_NOT_AWAITED", message: expect.stringContaining("forEach") as string, seqs: [0, 1, 2] }]);
    expect(run.warnings?.[0]?.message).toContain("3 tool calls (#0, #1, #2) had not been answered when the script returned");
    expect(summarizeRun(run)).toContain("warning (CALLS_NOT_AWAITED): 3 tool calls (#0, #1, #2)");
  });

  it("names only the calls left unanswered: the awaited ones are not in the warning", async () => {
    const run = await chain.run("await tools.send({});\nvoid tools.send({});\nreturn 1;");
    expect(run.status).toBe("ok");
    expect(run.warnings?.map((warning) => (warning.code === "CALLS_NOT_AWAITED" ? warning.seqs : warning.code))).toEqual([[1]]);
    expect(run.warnings?.[0]?.message).toContain("1 tool call (#1) had not been answered");
  });

  it("gives no warning when every call was awaited, nor to a run that failed", async () => {
    const awaited = await chain.run("await Promise.all([1, 2].map(() => tools.send({})));\nreturn 1;");
    expect(awaited.status).toBe("ok");
    expect(awaited.warnings).toBeUndefined();
    expect(summarizeRun(awaited)).not.toContain("warning");
    const failed = await chain.run("void tools.send({});\nthrow new Error('stop');");
    expect(failed.status).toBe("error");
    expect(failed.warnings).toBeUndefined();
  });
});
