/**
 * A call the script starts and does not await ("fire and forget", then return): the tool runs,
 * and the trace says what it did. Under the process driver the child's calls and its outcome
 * can arrive in one read, so the chain's end aborts the calls' signal while a tool that has
 * already finished waits for its result to be picked up.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, ToolChainTool } from "../../src/index.ts";

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
});
