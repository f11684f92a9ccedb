/**
 * A tool that runs a chain on the same driver (a sub-agent): the inner run must not wait for a
 * sandbox its caller holds, and a tool whose chain calls it again must stop. Work a tool call
 * left behind (a timer, an interval) starts runs that are not nested once its run is over.
 */
import { describe, expect, it, vi } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { ProcessSandboxDriver } from "../../sandbox/process-driver.ts";
import { MAX_NESTED_RUNS, type SandboxDriver } from "../../sandbox/sandbox-driver.ts";
import { defineTool, ToolChainTool, type TracedChainRunResult } from "../../src/index.ts";

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

  it("queues the runs of an interval a tool call set once its run is over: the cap holds for them", async () => {
    const driver = create();
    let active = 0;
    let peak = 0;
    const release = Promise.withResolvers<void>();
    const hold = defineTool({
      name: "hold",
      description: "Holds its run's sandbox until the test releases it.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: async () => {
        active++;
        peak = Math.max(peak, active);
        await release.promise;
        active--;
        return "held";
      },
    });
    // A job queue whose worker (an interval) is first made inside a tool call: the interval keeps
    // that call's async context, and every job it runs later starts a chain from there.
    const jobs: (() => void)[] = [];
    let worker: ReturnType<typeof setInterval> | undefined;
    const startWorker = defineTool({
      name: "startWorker",
      description: "Starts the job queue's worker.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: () => {
        worker ??= setInterval(() => jobs.shift()?.(), 5);
        return Promise.resolve("started");
      },
    });
    const chain = new ToolChainTool({ tools: [hold, startWorker], driver, policy: { totalTimeoutMs: 30_000 } });
    try {
      expect((await chain.run("await tools.startWorker({}); return 1;")).status).toBe("ok");
      const runs = Array.from({ length: 3 }, () => {
        const { promise, resolve } = Promise.withResolvers<string>();
        jobs.push(() => void chain.run("return (await tools.hold({})).text;").then((run) => resolve(run.status)));
        return promise;
      });
      // One job's script holds the one sandbox; the others wait for it, as from host code.
      await vi.waitFor(() => expect(active).toBe(1), { timeout: 10_000, interval: 5 });
      for (let waited = 0; waited < 1_500 && peak < 2; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(peak).toBe(1);
      release.resolve();
      expect(await Promise.all(runs)).toEqual(["ok", "ok", "ok"]);
      expect(peak).toBe(1);
    } finally {
      clearInterval(worker);
      await chain.close();
      await driver.close();
    }
  }, 30_000);

  it("does not count a run started by a timer of a finished run's tool call as nested, however many generations", async () => {
    const driver = create();
    const generations = MAX_NESTED_RUNS + 2;
    const runs: Promise<TracedChainRunResult>[] = [];
    const script = (n: number): string => `await tools.relay({ n: ${n} }); return ${n};`;
    const ref: { chain?: ToolChainTool } = {};
    // Each call sets a timer that starts the next generation's chain once this one's run is over
    // (its call with it): each generation runs in the context of the one before.
    const relay = defineTool({
      name: "relay",
      description: "Starts the next generation later.",
      inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } as const,
      execute: ({ n }) => {
        const mine = runs[n] as Promise<TracedChainRunResult>;
        if (n + 1 < generations) setTimeout(() => (runs[n + 1] = mine.then(() => (ref.chain as ToolChainTool).run(script(n + 1)))), 0);
        return Promise.resolve("relayed");
      },
    });
    const chain = new ToolChainTool({ tools: [relay], driver, policy: { totalTimeoutMs: 30_000 } });
    ref.chain = chain;
    try {
      runs[0] = chain.run(script(0));
      for (let n = 0; n < generations; n++) {
        await vi.waitFor(() => expect(runs[n]).toBeDefined(), { timeout: 10_000, interval: 5 });
        const run = await (runs[n] as Promise<TracedChainRunResult>);
        expect({ n, status: run.status, error: run.error?.message }).toEqual({ n, status: "ok", error: undefined });
        expect(run.returnValue).toBe(n);
      }
    } finally {
      await chain.close();
      await driver.close();
    }
  }, 30_000);
});
