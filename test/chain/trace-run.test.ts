import { afterAll, describe, expect, it } from "vitest";
import {
  type ChainTrace,
  ChainRuntimeError,
  defineTool,
  fingerprintToolbox,
  MemoryBlobStore,
  MemoryTraceStore,
  replay,
  summarizeRun,
  ToolChainTool,
  Toolbox,
  type TraceEvent,
  type TracePruneOptions,
  type TraceStore,
  type TraceSummary,
} from "../../src/index.ts";

const ran: string[] = [];

const wait = defineTool({
  name: "wait",
  description: "Answer after `ms` milliseconds.",
  inputSchema: { type: "object", properties: { ms: { type: "integer" }, tag: { type: "string" } }, required: ["ms", "tag"] } as const,
  execute: async ({ ms, tag }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    ran.push(tag);
    return { tag };
  },
});
const echo = defineTool({
  name: "echo",
  description: "Echo a value.",
  inputSchema: { type: "object", properties: { value: {} } } as const,
  execute: (args) => {
    ran.push(`echo:${JSON.stringify(args.value ?? null)}`);
    return { echoed: args.value ?? null };
  },
});
const toolbox = new Toolbox([wait, echo]);

const chains: ToolChainTool[] = [];
function traced(store: TraceStore, extra: Partial<ConstructorParameters<typeof ToolChainTool>[0]> = {}): ToolChainTool {
  const chain = new ToolChainTool({ toolbox, traceStore: store, driver: "in-process", policy: { callTimeoutMs: 2_000, approvalTimeoutMs: 1_000 }, ...extra });
  chains.push(chain);
  return chain;
}
afterAll(async () => {
  for (const chain of chains) await chain.close();
});

/** A store that fails every append of the listed event types (after the first `after` of them). */
class FailingStore implements TraceStore {
  readonly durable: boolean;
  readonly #inner = new MemoryTraceStore();
  readonly #types: ReadonlySet<string>;
  #left: number;
  constructor(types: string[], after = 0, durable = true) {
    this.durable = durable;
    this.#types = new Set(types);
    this.#left = after;
  }
  async append(chainId: string, event: TraceEvent): Promise<void> {
    if (this.#types.has(event.type) && this.#left-- <= 0) throw new ChainRuntimeError("STORE_FAILED", `disk full (${event.type})`);
    return this.#inner.append(chainId, event);
  }
  load(chainId: string): Promise<ChainTrace> {
    return this.#inner.load(chainId);
  }
  list(): Promise<TraceSummary[]> {
    return this.#inner.list();
  }
  prune(options: TracePruneOptions): Promise<number> {
    return this.#inner.prune(options);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

describe("every run writes a trace", () => {
  it("records the script, policy, toolbox fingerprint, seed, clock, each call with parsed args and result, and the outcome", async () => {
    const store = new MemoryTraceStore();
    const chain = traced(store);
    const code = `const a = await tools.echo({ value: [1, "two"] }); return { a: a.structured, r: Math.random() };`;
    const run = await chain.run(code, { chainId: "traced-1", seed: 7, clockStart: 1_700_000_000_000 });
    expect(run.status).toBe("ok");
    expect(run.traceError).toBeUndefined();
    const trace = await store.load("traced-1");
    expect(trace).toMatchObject({ chainId: "traced-1", source: code, seed: 7, clockStart: 1_700_000_000_000 });
    expect(trace.policy).toEqual(chain.policy);
    expect(trace.toolbox).toEqual(fingerprintToolbox(toolbox.callable()));
    expect(trace.calls).toHaveLength(1);
    expect(trace.calls[0]).toMatchObject({ callId: "c0", seq: 0, tool: "echo", args: { value: [1, "two"] }, state: "completed", status: "ok" });
    expect(trace.calls[0]?.result).toMatchObject({ status: "ok", structured: { echoed: [1, "two"] } });
    expect(trace.outcome).toMatchObject({ status: "ok", returnValue: run.returnValue });
  });

  it("traces a compile error with its position, so trace show can mark the line", async () => {
    const store = new MemoryTraceStore();
    const run = await traced(store).run("const x = ;", { chainId: "bad-syntax" });
    const trace = await store.load("bad-syntax");
    expect(trace.outcome?.status).toBe("error");
    expect(trace.outcome?.error).toMatchObject({ phase: "compile", line: 1 });
    expect(run.error?.line).toBe(1);
  });

  it("gives the same program-order call ids on two runs whose parallel calls finish in different orders", async () => {
    const store = new MemoryTraceStore();
    const chain = traced(store);
    // Same calls, same arguments' tags; only the delays are swapped, so the tools finish in
    // opposite orders on the two runs.
    const code = (flip: boolean) => `
      const delays = [0, 40, 80, 120];
      const order = ${flip ? "delays.slice().reverse()" : "delays"};
      const results = await Promise.all(["a", "b", "c", "d"].map((tag, i) => tools.wait({ ms: order[i], tag })));
      return results.map((result) => result.structured.tag);`;
    ran.length = 0;
    await chain.run(code(false), { chainId: "order-1", seed: 1 });
    const firstOrder = [...ran];
    ran.length = 0;
    await chain.run(code(true), { chainId: "order-2", seed: 1 });
    const secondOrder = [...ran];
    expect(firstOrder).toEqual(["a", "b", "c", "d"]);
    expect(secondOrder).toEqual(["d", "c", "b", "a"]);
    const ids = (trace: ChainTrace) => trace.calls.map((call) => [call.callId, (call.args as { tag: string }).tag]);
    const first = await store.load("order-1");
    const second = await store.load("order-2");
    expect(ids(first)).toEqual([["c0", "a"], ["c1", "b"], ["c2", "c"], ["c3", "d"]]);
    expect(ids(second)).toEqual(ids(first));
    // Completion order did differ: the result of c3 was logged first in the second run.
    const endedFirst = (trace: ChainTrace) => [...trace.calls].sort((x, y) => (x.endedAt ?? 0) - (y.endedAt ?? 0))[0]?.callId;
    expect(endedFirst(first)).toBe("c0");
    expect(endedFirst(second)).toBe("c3");
  });

  it("replays a Promise.all chain with random tool delays identically, matching calls by id", async () => {
    const store = new MemoryTraceStore();
    const chain = traced(store);
    const code = `
      const results = await Promise.all([0, 1, 2, 3, 4].map((i) => tools.wait({ ms: Math.floor(Math.random() * 30), tag: "t" + i })));
      return results.map((result) => result.structured.tag).join(",");`;
    await chain.run(code, { chainId: "random-delays" });
    const report = await replay(await store.load("random-delays"), { mode: "strict", driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(report.identical).toBe(true);
    expect(report.replayedCalls).toHaveLength(5);
  });

  it("surfaces a trace store failure in traceError and the model's summary, and refuses later calls", async () => {
    const store = new FailingStore(["tool-result"]);
    const chain = traced(store);
    ran.length = 0;
    const run = await chain.run(`const a = await tools.echo({ value: 1 }); const b = await tools.echo({ value: 2 }); return [a.status, b.status, b.code];`, {
      chainId: "broken-store",
    });
    expect(run.status).toBe("ok");
    expect(run.traceError).toMatchObject({ code: "STORE_FAILED", message: expect.stringContaining("disk full"), lostEvents: 1 });
    expect(run.returnValue).toEqual(["ok", "error", "STORE_FAILED"]);
    expect(ran).toEqual(["echo:1"]); // the second call never ran: it could not have been made at-most-once
    // ...and is in the call trace and the count, refused, like any call that reached the host.
    expect(run.callTrace.map((record) => [record.callId, record.status, record.code])).toEqual([
      ["c0", "ok", undefined],
      ["c1", "error", "STORE_FAILED"],
    ]);
    expect(run.stats.toolCalls).toBe(2);
    expect(summarizeRun(run)).toContain("trace incomplete: STORE_FAILED");
  });

  it("refuses the call whose own start a durable store could not log: it never runs, and the trace still loads", async () => {
    const store = new FailingStore(["tool-call"]);
    ran.length = 0;
    const run = await traced(store).run(`const a = await tools.echo({ value: 1 }); const b = await tools.echo({ value: 2 }); return [a.code, b.code];`, {
      chainId: "start-not-logged",
    });
    expect(ran).toEqual([]); // not even the first: its start was never on disk
    expect(run.returnValue).toEqual(["STORE_FAILED", "STORE_FAILED"]);
    expect(run.callTrace.map((record) => [record.callId, record.code])).toEqual([
      ["c0", "STORE_FAILED"],
      ["c1", "STORE_FAILED"],
    ]);
    expect(run.traceError).toMatchObject({ code: "STORE_FAILED", message: expect.stringContaining("disk full (tool-call)") });
    const trace = await store.load("start-not-logged");
    expect(trace.calls).toEqual([]); // no call logged, and no result without its call
    expect(trace.outcome).toMatchObject({ status: "ok" });
  });

  it("keeps going on a failing store that is not durable, still reporting the failure", async () => {
    const store = new FailingStore(["tool-result"], 0, false);
    ran.length = 0;
    const run = await traced(store).run(`await tools.echo({ value: 1 }); await tools.echo({ value: 2 }); return 1;`, { chainId: "memory-broken" });
    expect(ran).toEqual(["echo:1", "echo:2"]);
    expect(run.traceError?.lostEvents).toBe(2);
  });

  it("still calls the user's hooks, and a throwing user hook neither breaks the call nor the trace", async () => {
    const store = new MemoryTraceStore();
    const seen: string[] = [];
    const errors: string[] = [];
    const chain = traced(store, {
      hooks: {
        TOOL_START: ({ tool }) => {
          seen.push(`start:${tool}`);
          throw new Error("observer bug");
        },
        TOOL_END: ({ tool, result }) => void seen.push(`end:${tool}:${result.status}`),
        onHookError: (_error, event) => void errors.push(event),
      },
    });
    const run = await chain.run(`return (await tools.echo({ value: 3 })).status;`, { chainId: "hooked" });
    expect(run.returnValue).toBe("ok");
    expect(seen).toEqual(["start:echo", "end:echo:ok"]);
    expect(errors).toEqual(["TOOL_START"]);
    expect((await store.load("hooked")).calls[0]?.state).toBe("completed");
  });

  it("resume re-executes an in-doubt SAFE call by default, and answers completed calls from the trace", async () => {
    // The store loses c1's result, as a crash between the tool's end and the log would.
    const lossy = new FailingStore(["tool-result"], 1, false);
    await traced(lossy).run(`const a = await tools.echo({ value: "a" }); const b = await tools.echo({ value: "b" }); return [a.status, b.status];`, {
      chainId: "lost-result",
    });
    const trace = await lossy.load("lost-result");
    expect(trace.calls.map((call) => call.state)).toEqual(["completed", "in-doubt"]);
    ran.length = 0;
    const report = await replay(trace, { mode: "resume", toolbox, traceStore: new MemoryTraceStore(), driver: "in-process" });
    expect(ran).toEqual(['echo:"b"']);
    expect(report.inDoubt).toEqual([{ callId: "c1", tool: "echo", risk: "safe", resolution: "re-execute" }]);
    expect(report.run.returnValue).toEqual(["ok", "ok"]);
    expect(report.toolboxChanged).toBe(false);
    expect(report.run.callTrace.map((record) => [record.seq, record.callId])).toEqual([
      [0, "c0"],
      [1, "c1"],
    ]);
  });
});

describe("values at and past the limits keep the trace whole", () => {
  it("traces a call whose arguments hold an object of 70 000 keys (wider than a 16-bit msgpack map)", async () => {
    const store = new MemoryTraceStore();
    const run = await traced(store).run(
      `const wide = {}; for (let i = 0; i < 70000; i++) wide["k" + i] = i; return (await tools.echo({ value: wide })).status;`,
      { chainId: "wide-args" },
    );
    expect(run.returnValue).toBe("ok");
    expect(run.traceError).toBeUndefined();
    const call = (await store.load("wide-args")).calls[0];
    expect(call?.state).toBe("completed");
    expect(Object.keys((call?.args as { value: object }).value)).toHaveLength(70_000);
  });

  it("logs arguments past the depth limit as their JSON text (a Proxy hid them from the prelude): refused, traced, loadable", async () => {
    const store = new MemoryTraceStore();
    const chain = traced(store);
    // The Proxy shows the prelude's check one flat field and JSON.stringify a 5 000-deep array.
    const code = `
      let deep = 1; for (let i = 0; i < 5000; i++) deep = [deep];
      const hidden = new Proxy({}, {
        ownKeys: () => ["value"],
        getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true, writable: true }),
        get: () => deep,
      });
      const r = await tools.echo(hidden);
      return [r.status, r.code];`;
    ran.length = 0;
    const run = await chain.run(code, { chainId: "deep-args" });
    expect(run.returnValue).toEqual(["error", "INVALID_ARGUMENTS"]);
    expect(ran).toEqual([]);
    expect(run.traceError).toBeUndefined();
    const trace = await store.load("deep-args");
    expect(trace.calls).toHaveLength(1);
    expect(trace.calls[0]).toMatchObject({ state: "completed", status: "error", argsDigest: run.callTrace[0]?.argsDigest });
    expect(typeof trace.calls[0]?.args).toBe("string");
    expect((trace.calls[0]?.args as string).startsWith('{"value":[[[[')).toBe(true);
    // A strict replay of that trace matches the call (same digest) and sees the same refusal.
    const report = await replay(trace, { mode: "strict", toolbox, driver: "in-process" });
    expect(report.divergence).toBeUndefined();
    expect(report.identical).toBe(true);
    expect(report.run.returnValue).toEqual(["error", "INVALID_ARGUMENTS"]);
  });
});

describe("clean-up after the chain", () => {
  it("reports an unpin the blob store refuses as cleanupError: the result stands and the trace ends", async () => {
    class UnpinFails extends MemoryBlobStore {
      override async unpin(): Promise<never> {
        throw new Error("unpin refused (injected)");
      }
    }
    const store = new MemoryTraceStore();
    const chain = traced(store, { blobStore: new UnpinFails() });
    const run = await chain.run(`const r = await tools.echo({ value: "x".repeat(10000) }); return [r.status, typeof r.artifactRef];`, {
      chainId: "unpin-fails",
    });
    expect(run.status).toBe("ok");
    expect(run.returnValue).toEqual(["ok", "string"]);
    expect(run.cleanupError).toMatchObject({ code: "STORE_FAILED", message: expect.stringContaining("unpin refused (injected)") });
    expect(run.traceError).toBeUndefined();
    expect((await store.load("unpin-fails")).outcome).toMatchObject({ status: "ok" });
    // The model's view of the same run: a result, not a throw.
    const forModel = await chain.execute({ code: `return (await tools.echo({ value: "y".repeat(10000) })).status;` });
    expect(forModel.isError).not.toBe(true);
  });
});
