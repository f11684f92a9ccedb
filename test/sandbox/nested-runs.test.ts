/**
 * A tool that runs a chain on the same driver (a sub-agent): the inner run must not wait for a
 * sandbox its caller holds, and a tool whose chain calls it again must stop.
 */
import { describe, expect, it } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { ProcessSandboxDriver } from "../../sandbox/process-driver.ts";
import { MAX_NESTED_RUNS, type SandboxDriver } from "../../sandbox/sandbox-driver.ts";
import { defineTool, ToolChainTool } from "../../src/index.ts";

const drivers: [string, () => SandboxDriver][] = [
  ["in-process, maxIsolates 1", () => new InProcessSandboxDriver({ poolSize: 1, maxIsolates: 1 })],
  ["process, maxProcesses 1", () => new ProcessSandboxDriver({ processes: 1, maxProcesses: 1 })],
];

describe.each(drivers)("nested runs (%s)", (_label, create) => {
  it("runs a chain started from inside a tool call without waiting, and stops nesting at MAX_NESTED_RUNS", async () => {
    const driver = create();
    const ref: { chain?: ToolChainTool } = {};
    let completed = 0;
    const RECURSE = "const r = await tools.sub({ again: true }); return r.structured;";
    const sub = defineTool({
      name: "sub",
      description: "Runs a chain: the answer, or (again) the same script.",
      inputSchema: { type: "object", properties: { again: { type: "boolean" } } } as const,
      execute: async ({ again }, ctx) => {
        const run = await (ref.chain as ToolChainTool).run(again ? RECURSE : "return 41 + 1", { signal: ctx.signal });
        if (run.status === "ok") completed++;
        return { status: run.status, value: run.returnValue ?? null, error: run.error?.message ?? null };
      },
    });
    const chain = new ToolChainTool({ tools: [sub], driver, policy: { totalTimeoutMs: 30_000 } });
    ref.chain = chain;
    try {
      // With one sandbox, the inner chain would otherwise wait for the outer one's forever.
      const once = await chain.run("const r = await tools.sub({}); return r.structured.value;");
      expect(once).toMatchObject({ status: "ok", returnValue: 42 });
      completed = 0;
      const deep = await chain.run(RECURSE);
      expect(deep.status).toBe("ok");
      expect(JSON.stringify(deep.returnValue)).toContain(`at most ${MAX_NESTED_RUNS} are run`);
      expect(completed).toBe(MAX_NESTED_RUNS - 1);
    } finally {
      await chain.close();
      await driver.close();
    }
  }, 60_000);
});
