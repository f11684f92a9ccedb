/**
 * Host code a chain awaits that never settles (a blob store, a trace store, a hook) cannot hold
 * `run()` past `totalTimeoutMs` and a fixed grace: the sandbox is bounded by its watchdog, and
 * the wait on host code after it by the chain's own deadline. The result names what hung.
 */
import { afterAll, describe, expect, it, vi } from "vitest";
import {
  type BlobStore,
  defineTool,
  MemoryBlobStore,
  MAX_POLICY_DURATION_MS,
  MemoryTraceStore,
  ProcessSandboxDriver,
  type TraceEvent,
  ToolChainTool,
  type ToolChainToolOptions,
} from "../../src/index.ts";

const TOTAL_MS = 300;
/** The chain's grace past totalTimeoutMs (STUCK_GRACE_MS), and then some for a loaded machine. */
const WITHIN_MS = TOTAL_MS + 5_000 + 3_000;
const never = (): Promise<never> => new Promise(() => undefined);

const executed: string[] = [];
const big = defineTool({
  name: "big",
  description: "Returns 10 KB of text (offloaded to the blob store).",
  inputSchema: { type: "object" } as const,
  execute: () => {
    executed.push("big");
    return "b".repeat(10_000);
  },
});

const chains: ToolChainTool[] = [];
function chainWith(options: Partial<ToolChainToolOptions>): ToolChainTool {
  const chain = new ToolChainTool({ tools: [big], driver: "in-process", poolSize: 1, policy: { totalTimeoutMs: TOTAL_MS, callTimeoutMs: TOTAL_MS, approvalTimeoutMs: TOTAL_MS - 100 }, ...options });
  chains.push(chain);
  return chain;
}
afterAll(() => Promise.all(chains.map((chain) => chain.close())));

/** A blob store whose `put` never settles. */
function stuckPutStore(): BlobStore {
  const store = new MemoryBlobStore();
  store.put = never;
  return store;
}

/** A trace store whose appends of `type` never settle. */
function stuckTraceStore(type: TraceEvent["type"]): MemoryTraceStore {
  const store = new MemoryTraceStore();
  const append = store.append.bind(store);
  store.append = (chainId, event) => (event.type === type ? never() : append(chainId, event));
  return store;
}

describe("a chain whose host code never settles", () => {
  it("ends by totalTimeoutMs and a grace, naming what hung: a blob store, a trace store, a hook", async () => {
    executed.length = 0;
    const started = performance.now();
    const [put, chainStart, chainEnd, hook] = await Promise.all([
      chainWith({ blobStore: stuckPutStore() }).run(`const r = await tools.big({}); return r.status;`),
      chainWith({ traceStore: stuckTraceStore("chain-start") }).run(`return (await tools.big({})).status;`),
      chainWith({ traceStore: stuckTraceStore("chain-end") }).run(`return 7;`),
      chainWith({ hooks: { CHAIN_END: never } }).run(`return 8;`),
    ]);
    expect(performance.now() - started).toBeLessThan(WITHIN_MS);

    // The script waited on the call until the watchdog; the call's store never answered.
    expect(put.status).toBe("timeout");
    expect(put.error).toMatchObject({ phase: "limit", name: "TimeoutError", message: expect.stringContaining("a call still running after the script ended") });

    // Nothing ran: the chain never got past its trace's start, and never will.
    expect(chainStart.status).toBe("timeout");
    expect(chainStart.error?.message).toContain("the trace store (writing chain-start) did not settle within totalTimeoutMs (300 ms)");
    expect(chainStart.traceError).toMatchObject({ code: "STORE_FAILED", message: expect.stringContaining("left unfinished") });
    expect(chainStart.callTrace).toEqual([]);

    // The script finished: its result stands, with the trace said to be unfinished.
    expect(chainEnd).toMatchObject({ status: "ok", returnValue: 7 });
    expect(chainEnd.traceError?.message).toContain("the trace store (writing chain-end) did not settle");

    // Only the observer hung: the result is the run's own.
    expect(hook).toMatchObject({ status: "ok", returnValue: 8 });
    expect(hook.error).toBeUndefined();

    expect(executed).toEqual(["big"]); // the chain stuck at its start never ran its script
  }, 30_000);

  it("ends a grace after the caller cancels, when it is stuck past the script", async () => {
    const controller = new AbortController();
    const chain = chainWith({ blobStore: stuckPutStore(), policy: { totalTimeoutMs: 60_000, callTimeoutMs: 60_000 } });
    const running = chain.run(`const r = await tools.big({}); return r.status;`, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    const run = await running;
    expect(performance.now() - started).toBeLessThan(WITHIN_MS);
    expect(run.status).toBe("cancelled");
    expect(run.error?.message).toContain("did not settle within 5000 ms after it was cancelled");
    // The tool goes on working for new runs.
    expect((await chain.run("return 1;")).returnValue).toBe(1);
  }, 30_000);

  it("runs normally at the longest totalTimeoutMs a policy takes (its timers are capped at what Node.js can set)", async () => {
    for (const driver of ["in-process", "process"] as const) {
      const chain = new ToolChainTool({ tools: [big], driver, poolSize: 1, policy: { totalTimeoutMs: MAX_POLICY_DURATION_MS } });
      chains.push(chain);
      const run = await chain.run(`await new Promise((resolve) => Promise.resolve().then(resolve)); return (await tools.big({})).status;`);
      expect([driver, run.status, run.returnValue]).toEqual([driver, "ok", "ok"]);
    }
  }, 30_000);

  it("leaves a chain queued for a busy sandbox to its driver: a timeout of its own, and its script never starts late", async () => {
    const started: string[] = [];
    const sleep = defineTool({
      name: "sleep",
      description: "Sleeps.",
      inputSchema: { type: "object", properties: { tag: { type: "string" } }, required: ["tag"] } as const,
      execute: async ({ tag }) => {
        started.push(tag);
        holding.resolve();
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        return tag;
      },
    });
    const holding = Promise.withResolvers<void>();
    // One child, held ~2 s by a chain of a longer budget; the chain queued behind it has 1.5 s in
    // all. (On one budget the queued chain's deadline and the running chain's end would coincide.)
    const driver = new ProcessSandboxDriver({ processes: 1, maxProcesses: 1 });
    const holder = new ToolChainTool({ tools: [sleep], driver, policy: { totalTimeoutMs: 5_000, callTimeoutMs: 4_000, approvalTimeoutMs: 1_000 } });
    const chain = new ToolChainTool({ tools: [sleep], driver, policy: { totalTimeoutMs: 1_500, callTimeoutMs: 1_400, approvalTimeoutMs: 1_000 } });
    chains.push(holder, chain);
    try {
      await chain.warm();
      const script = (tag: string): string => `return (await tools.sleep({ tag: "${tag}" })).status;`;
      const held = holder.run(script("a"), { chainId: "queued-a" });
      await holding.promise; // the child is busy: b queues behind it
      const runs = await Promise.all([held, chain.run(script("b"), { chainId: "queued-b" })]);
      expect(runs.map((run) => run.status)).toEqual(["ok", "timeout"]);
      expect(runs[1]?.error?.message).toContain("waited past totalTimeoutMs (1500 ms) for a sandbox process");
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(started).toEqual(["a"]); // "b" never ran, not even after run() returned
    } finally {
      await driver.close();
    }
  }, 30_000);

  it("cuts the wait to the grace when the caller's signal had fired before run() was called", async () => {
    const controller = new AbortController();
    controller.abort();
    const chain = chainWith({ traceStore: stuckTraceStore("chain-start"), policy: { totalTimeoutMs: 120_000, callTimeoutMs: 60_000 } });
    const started = performance.now();
    const run = await chain.run("return 1;", { signal: controller.signal });
    expect(performance.now() - started).toBeLessThan(WITHIN_MS);
    expect(run.status).toBe("cancelled");
    expect(run.error?.message).toContain("the trace store (writing chain-start) did not settle within 5000 ms after it was cancelled");
  }, 30_000);
});

describe.concurrent("the run deadline leaves healthy work alone", () => {
  it("a chain queued for a busy child ends by totalTimeoutMs counted from its start, from the sandbox's limit, not as stuck", async () => {
    const ended: string[] = [];
    const slow = defineTool({
      name: "slow",
      description: "Takes 2 s.",
      inputSchema: { type: "object", properties: { tag: { type: "string" } }, required: ["tag"] } as const,
      execute: async ({ tag }, ctx) => {
        if (tag === "a") holding.resolve();
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        if (!ctx.signal.aborted) ended.push(tag);
        return tag;
      },
    });
    const holding = Promise.withResolvers<void>();
    const chain = new ToolChainTool({
      tools: [slow],
      driver: new ProcessSandboxDriver({ processes: 1, maxProcesses: 1 }),
      policy: { totalTimeoutMs: 3_000, callTimeoutMs: 2_900, approvalTimeoutMs: 1_000 },
    });
    chains.push(chain);
    await chain.warm();
    // b waits ~2 s for the child, then has ~1 s of its 3 s for a 2 s call: a timeout at ~3 s,
    // the sandbox's own (a fresh budget after the queue let it end ok at ~4 s).
    const started = performance.now();
    const script = (tag: string): string => `return (await tools.slow({ tag: "${tag}" })).structured;`;
    const held = chain.run(script("a"));
    await holding.promise; // the child is busy: b queues behind it
    const runs = await Promise.all([held, chain.run(script("b"))]);
    const took = performance.now() - started;
    expect(runs.map((run) => run.status)).toEqual(["ok", "timeout"]);
    expect(runs[1]?.error?.message).toMatch(/^the chain ran past totalTimeoutMs \(3000 ms\)/);
    expect(took).toBeLessThan(3_000 + 800);
    expect(ended).toEqual(["a"]);
  }, 60_000);

  it("host work after the script has what is left of totalTimeoutMs, not just the grace", async () => {
    const store = new MemoryBlobStore();
    const put = store.put.bind(store);
    store.put = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      return put(...args);
    };
    const chain = chainWith({ blobStore: store, policy: { totalTimeoutMs: 60_000, callTimeoutMs: 30_000, approvalTimeoutMs: 10_000 } });
    const run = await chain.run(`return "r".repeat(10000);`); // the return value goes to the slow store
    expect(run.status).toBe("ok");
    expect(run.returnArtifactRef).toMatch(/^sha256:/);
  }, 30_000);

  it("a driver that never settles is bounded by a backstop: twice totalTimeoutMs and the grace", async () => {
    const chain = chainWith({ driver: { kind: "stuck", run: never, close: async () => undefined } });
    const started = performance.now();
    const run = await chain.run("return 1;");
    expect(performance.now() - started).toBeLessThan(2 * TOTAL_MS + 5_000 + 3_000);
    expect(run.status).toBe("timeout");
    expect(run.error?.message).toContain("the sandbox did not settle within twice totalTimeoutMs (300 ms) and 5000 ms more");
  }, 30_000);

  it("what an abandoned run still records says what its caller got", async () => {
    const traces = new MemoryTraceStore();
    const blobs = new MemoryBlobStore();
    const put = blobs.put.bind(blobs);
    let stored: () => void = () => undefined;
    const storedLate = new Promise<void>((resolve) => (stored = resolve));
    blobs.put = async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 6_500));
      try {
        return await put(...args);
      } finally {
        stored();
      }
    };
    const chain = chainWith({ blobStore: blobs, traceStore: traces });
    const run = await chain.run(`return "r".repeat(10000);`, { chainId: "late-put" });
    expect(run.status).toBe("timeout");
    expect(run.error?.message).toContain("the blob store (storing the return value) did not settle within totalTimeoutMs (300 ms) and 5000 ms more");
    await storedLate;
    await vi.waitFor(async () => expect((await traces.load("late-put")).outcome).toMatchObject({ status: "timeout", error: { name: "TimeoutError" } }), { timeout: 5_000 });
  }, 30_000);
});

describe.concurrent("an abandoned run starts nothing more", () => {
  it("stores no return value when its sandbox settles after its caller was answered", async () => {
    let puts = 0;
    const blobs = new MemoryBlobStore();
    const put = blobs.put.bind(blobs);
    blobs.put = (...args) => {
      puts++;
      return put(...args);
    };
    let settled: () => void = () => undefined;
    const late = new Promise<void>((resolve) => (settled = resolve));
    // A driver of another make, which answers a second after the backstop (2 x 300 ms + 5 s).
    const slowDriver = {
      kind: "late",
      run: async () => {
        await new Promise((resolve) => setTimeout(resolve, 2 * TOTAL_MS + 5_000 + 1_000));
        settled();
        return { status: "ok" as const, returnJson: JSON.stringify("r".repeat(10_000)), wallMs: 1, cpuMs: 1, heapBytes: 1 };
      },
      close: async () => undefined,
    };
    const chain = chainWith({ driver: slowDriver, blobStore: blobs });
    const run = await chain.run("return 1;");
    expect(run.status).toBe("timeout");
    await late;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(puts).toBe(0);
  }, 30_000);

  it("stands no backstop of its own over isochain's drivers, which bound their runs themselves", async () => {
    const { isOwnDriver: boundsItself } = await import("../../src/chain/create-driver.ts");
    const { InProcessSandboxDriver } = await import("../../src/index.ts");
    const inProcess = new InProcessSandboxDriver({ poolSize: 0 });
    const children = new ProcessSandboxDriver({ processes: 0 });
    expect([boundsItself(inProcess), boundsItself(children), boundsItself({ kind: "x", run: never, close: async () => undefined })]).toEqual([true, true, false]);
    await Promise.all([inProcess.close(), children.close()]);
  });
});

