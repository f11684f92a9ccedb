import { describe, expect, it } from "vitest";
import {
  ChainRuntimeError,
  DEFAULT_CHAIN_POLICY,
  digestJson,
  sha256Hex,
  type ChainRunResult,
  type ToolEndEvent,
  type ToolStartEvent,
} from "../../src/kernel/index.ts";
import { MemoryTraceStore } from "../../src/trace/memory-trace-store.ts";
import type { TraceEvent } from "../../src/trace/trace-event.ts";
import { TraceRecorder, type TraceRecorderFailure, type TraceStartMeta } from "../../src/trace/trace-recorder.ts";
import type { TraceStore } from "../../src/trace/trace-store.ts";
import { SAMPLE_TOOLBOX } from "./fixtures/sample-events.ts";

const META: TraceStartMeta = {
  source: "await tools.echo({ text: 'a' });",
  policy: DEFAULT_CHAIN_POLICY,
  toolbox: SAMPLE_TOOLBOX,
  seed: 9,
  clockStart: 1_000,
  createdAt: 2_000,
};

function toolStart(chainId: string, seq: number, tool = "echo", args: unknown = { text: `a${seq}` }): ToolStartEvent {
  return { event: "TOOL_START", chainId, callId: `c${seq}`, seq, tool, args, startedAt: 10_000 + seq };
}

function toolEnd(chainId: string, seq: number, tool = "echo", status: "ok" | "timeout" = "ok"): ToolEndEvent {
  return {
    event: "TOOL_END",
    chainId,
    callId: `c${seq}`,
    seq,
    tool,
    record: { seq, callId: `c${seq}`, tool, argsDigest: "e".repeat(64), status, startedAt: 10_000 + seq, durationMs: 7 },
    result: status === "ok" ? { status: "ok", text: `done ${seq}` } : { status: "error", text: "too slow", code: "TIMEOUT" },
    executed: true,
  };
}

/** A store whose appends wait until released, to see what awaits them. */
class GatedStore implements TraceStore {
  readonly durable = true;
  readonly inner = new MemoryTraceStore();
  readonly waiting: (() => void)[] = [];
  append(chainId: string, event: TraceEvent): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push(() => {
        this.inner.append(chainId, event).then(resolve, reject);
      });
    });
  }
  release(): void {
    for (const go of this.waiting.splice(0)) go();
  }
  load = (chainId: string) => this.inner.load(chainId);
  list = () => this.inner.list();
  prune = () => Promise.resolve(0);
  close = () => Promise.resolve();
}

/** A store that fails every append of the listed event types. */
function failingStore(types: readonly string[]): MemoryTraceStore {
  const store = new MemoryTraceStore();
  const append = store.append.bind(store);
  store.append = async (chainId, event) => {
    if (types.includes(event.type)) throw new Error(`disk full (${event.type})`);
    return append(chainId, event);
  };
  return store;
}

describe("TraceRecorder", () => {
  it("records start, calls and end into a trace the store loads back", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "rec-1" });
    const hooks = recorder.hooks();
    await recorder.start({ ...META, parentChainId: "rec-0" });
    await hooks.TOOL_START?.(toolStart("rec-1", 0));
    await hooks.TOOL_START?.(toolStart("rec-1", 1, "send_email", { to: "x@example.com" }));
    await hooks.TOOL_END?.(toolEnd("rec-1", 1, "send_email", "timeout"));
    await hooks.TOOL_END?.(toolEnd("rec-1", 0));
    await recorder.recordApprovalRequest({ id: "ap", chainId: "rec-1", tool: "send_email", args: {}, risk: "high", createdAt: 3 });
    await recorder.end({ status: "ok", returnValue: { n: 1 }, durationMs: 40, stats: { wallMs: 40, cpuMs: 2, heapBytes: 10, toolCalls: 2 } });

    expect(recorder.error).toBeUndefined();
    const trace = await store.load("rec-1");
    expect(trace).toMatchObject({
      chainId: "rec-1",
      parentChainId: "rec-0",
      createdAt: 2_000,
      source: META.source,
      sourceHash: sha256Hex(META.source),
      seed: 9,
      clockStart: 1_000,
      toolbox: SAMPLE_TOOLBOX,
      outcome: { status: "ok", returnValue: { n: 1 }, durationMs: 40 },
    });
    expect(trace.calls).toEqual([
      {
        callId: "c0",
        seq: 0,
        tool: "echo",
        args: { text: "a0" },
        argsDigest: digestJson({ text: "a0" }),
        risk: "safe",
        state: "completed",
        startedAt: 10_000,
        endedAt: 10_007,
        durationMs: 7,
        status: "ok",
        result: { status: "ok", text: "done 0" },
        resultSeq: 1, // c1's result was logged first
      },
      expect.objectContaining({ callId: "c1", risk: "high", status: "timeout", result: { status: "error", text: "too slow", code: "TIMEOUT" } }),
    ]);
    expect(trace.approvalRequests.map((request) => request.id)).toEqual(["ap"]);
  });

  it("does not let TOOL_START or TOOL_END return before the store has the event", async () => {
    const store = new GatedStore();
    const recorder = new TraceRecorder({ store, chainId: "gated" });
    const started = recorder.start(META);
    store.release();
    await started;
    let settled = false;
    const hook = Promise.resolve(recorder.hooks().TOOL_START?.(toolStart("gated", 0))).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    store.release();
    await hook;
    expect((await store.load("gated")).calls[0]?.state).toBe("in-doubt");

    settled = false;
    const end = Promise.resolve(recorder.hooks().TOOL_END?.(toolEnd("gated", 0))).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    store.release();
    await end;
    expect((await store.load("gated")).calls[0]?.state).toBe("completed");
  });

  it("logs a call that ended without TOOL_START (budget refusal) as a whole entry", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "budget" });
    await recorder.start(META);
    await recorder.hooks().TOOL_END?.(toolEnd("budget", 0));
    const [call] = (await store.load("budget")).calls;
    expect(call).toMatchObject({ callId: "c0", state: "completed", argsDigest: "e".repeat(64), startedAt: 10_000, risk: "safe" });
    expect(call?.args).toBeUndefined();
    expect(recorder.failures).toEqual([]);
  });

  it("logs a stand-in call before the result of a call whose tool-call the store refused: never a result without its call", async () => {
    const store = new MemoryTraceStore();
    const append = store.append.bind(store);
    let refused = 0;
    store.append = async (chainId, event) => {
      if (event.type === "tool-call" && refused++ === 0) throw new Error("disk hiccup (tool-call)");
      return append(chainId, event);
    };
    const recorder = new TraceRecorder({ store, chainId: "hiccup" });
    await recorder.start(META);
    await recorder.hooks().TOOL_START?.(toolStart("hiccup", 0));
    await recorder.hooks().TOOL_END?.(toolEnd("hiccup", 0));
    const [call] = (await store.load("hiccup")).calls;
    expect(call).toMatchObject({ callId: "c0", state: "completed", argsDigest: "e".repeat(64), status: "ok" });
    expect(call?.args).toBeUndefined();
    expect(recorder.failures.map((failure) => [failure.event, failure.callId])).toEqual([["tool-call", "c0"]]);
  });

  it("ignores hook payloads of other chains", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "mine" });
    await recorder.start(META);
    await recorder.hooks().TOOL_START?.(toolStart("theirs", 0));
    await recorder.hooks().TOOL_END?.(toolEnd("theirs", 0));
    expect((await store.load("mine")).calls).toEqual([]);
  });

  it("leaves risk out for a tool the toolbox fingerprint does not have", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "unknown-tool" });
    await recorder.start(META);
    await recorder.hooks().TOOL_START?.(toolStart("unknown-tool", 0, "nope"));
    expect("risk" in ((await store.load("unknown-tool")).calls[0] ?? {})).toBe(false);
  });

  it("keeps store failures, exposes the first as error, tells onError, and never throws from a hook", async () => {
    const seen: TraceRecorderFailure[] = [];
    const recorder = new TraceRecorder({
      store: failingStore(["tool-call", "chain-end"]),
      chainId: "flaky",
      onError: (failure) => {
        seen.push(failure);
        throw new Error("listener trouble is ignored");
      },
    });
    await recorder.start(META);
    await expect(Promise.resolve(recorder.hooks().TOOL_START?.(toolStart("flaky", 0)))).resolves.toBeUndefined();
    await recorder.end({ status: "ok", durationMs: 1, stats: { wallMs: 1, cpuMs: 0, heapBytes: 0, toolCalls: 1 } });
    expect(recorder.failures.map((failure) => [failure.event, failure.callId, failure.error.code])).toEqual([
      ["tool-call", "c0", "STORE_FAILED"],
      ["chain-end", undefined, "STORE_FAILED"],
    ]);
    expect(recorder.error?.code).toBe("STORE_FAILED");
    expect((recorder.error?.cause as Error).message).toBe("disk full (tool-call)");
    expect(seen).toEqual(recorder.failures);
  });

  it("logs nothing more once its chain-start is refused: a taken chain id's log stays the other run's", async () => {
    const store = new MemoryTraceStore();
    const owner = new TraceRecorder({ store, chainId: "taken" });
    await owner.start(META);
    await owner.hooks().TOOL_START?.(toolStart("taken", 0));
    const intruder = new TraceRecorder({ store, chainId: "taken" });
    await intruder.start(META);
    await intruder.hooks().TOOL_START?.(toolStart("taken", 1));
    await intruder.hooks().TOOL_END?.(toolEnd("taken", 1));
    await intruder.end({ status: "ok", durationMs: 1, stats: { wallMs: 1, cpuMs: 0, heapBytes: 0, toolCalls: 1 } });
    expect(intruder.failures.map((failure) => [failure.event, failure.error.code])).toEqual([
      ["chain-start", "TRACE_INVALID"],
      ["tool-call", "STORE_FAILED"],
      ["tool-result", "STORE_FAILED"],
      ["chain-end", "STORE_FAILED"],
    ]);
    expect(intruder.error?.message).toMatch(/already has a trace/);
    await owner.hooks().TOOL_END?.(toolEnd("taken", 0));
    const trace = await store.load("taken");
    expect(trace.calls.map((call) => [call.callId, call.state])).toEqual([["c0", "completed"]]);
    expect(trace.outcome).toBeUndefined();
    expect(owner.failures).toEqual([]);
  });

  it("records a hook that fires before start() as a TRACE_INVALID failure", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "early" });
    await recorder.hooks().TOOL_START?.(toolStart("early", 0));
    expect(recorder.error?.code).toBe("TRACE_INVALID");
    expect((await store.list()).length).toBe(0);
  });

  it("throws TRACE_INVALID for a bad chain id, a second start and a second end", async () => {
    const store = new MemoryTraceStore();
    expect(() => new TraceRecorder({ store, chainId: "../x" })).toThrow(ChainRuntimeError);
    const recorder = new TraceRecorder({ store, chainId: "twice" });
    await recorder.start(META);
    await expect(recorder.start(META)).rejects.toMatchObject({ code: "TRACE_INVALID" });
    const outcome = { status: "ok" as const, durationMs: 1, stats: { wallMs: 1, cpuMs: 0, heapBytes: 0, toolCalls: 0 } };
    await recorder.end(outcome);
    await expect(recorder.end(outcome)).rejects.toMatchObject({ code: "TRACE_INVALID" });
  });

  it("takes a ChainRunResult as the outcome and keeps only the outcome fields", async () => {
    const store = new MemoryTraceStore();
    const recorder = new TraceRecorder({ store, chainId: "run-result" });
    await recorder.start(META);
    const result: ChainRunResult = {
      chainId: "run-result",
      status: "error",
      outputText: "hello\n",
      error: { phase: "runtime", name: "TypeError", message: "x is undefined", line: 3 },
      callTrace: [],
      durationMs: 12,
      stats: { wallMs: 12, cpuMs: 1, heapBytes: 5, toolCalls: 0 },
      seed: 9,
    };
    await recorder.end(result);
    expect((await store.load("run-result")).outcome).toEqual({
      status: "error",
      outputText: "hello\n",
      error: { phase: "runtime", name: "TypeError", message: "x is undefined", line: 3 },
      durationMs: 12,
      stats: { wallMs: 12, cpuMs: 1, heapBytes: 5, toolCalls: 0 },
    });
  });
});
