import { describe, expect, it } from "vitest";
import { InvokerSession } from "../../src/invoker/invoker-session.ts";
import { isChainRuntimeError, type ArtifactRef, type ToolContext } from "../../src/kernel/index.ts";
import { deferred, echoTool, localTool, makeInvoker, SpyBlobStore } from "./invoker-fixtures.ts";

const PNG = Buffer.from([1, 2, 3, 4]).toString("base64");

async function pinsOf(store: SpyBlobStore, refs: readonly ArtifactRef[]): Promise<number[]> {
  return Promise.all(refs.map(async (ref) => (await store.stat(ref))?.pins ?? -1));
}

describe("InvokerSession", () => {
  it("unpins every pinned ref at the end of an `await using` block", async () => {
    const store = new SpyBlobStore();
    const big = localTool("big", (args) => `${String(args.n)}`.repeat(5000));
    const chart = localTool("chart", () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }));
    const invoker = makeInvoker([big, chart], { blobStore: store });
    let refs: readonly ArtifactRef[] = [];
    {
      await using session = invoker.openSession();
      await invoker.invoke({ name: "big", arguments: { n: 1 } }, { session });
      await invoker.invoke({ name: "big", arguments: { n: 2 } }, { session });
      await invoker.invoke({ name: "big", arguments: { n: 1 } }, { session }); // same blob, pinned twice
      await invoker.invoke({ name: "chart", arguments: {} }, { session });
      refs = [...session.pinnedRefs];
      expect(refs).toHaveLength(4);
      expect(await pinsOf(store, [...new Set(refs)])).toEqual([2, 1, 1]);
    }
    expect(await pinsOf(store, [...new Set(refs)])).toEqual([0, 0, 0]);
    expect(store.unpinned.slice().sort()).toEqual(refs.slice().sort());
  });

  it("close() is idempotent: each ref is unpinned exactly once", async () => {
    const store = new SpyBlobStore();
    const invoker = makeInvoker([localTool("big", () => "x".repeat(5000))], { blobStore: store });
    const session = invoker.openSession();
    await invoker.invoke({ name: "big", arguments: {} }, { session });
    await Promise.all([session.close(), session.close()]);
    await session.close();
    expect(store.unpinned).toHaveLength(1);
    expect(session.pinnedRefs).toEqual([]);
    expect(session.closed).toBe(true);
  });

  it("refuses calls after close with CANCELLED, and still records them", async () => {
    const tool = echoTool();
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    await session.close();
    const result = await invoker.invoke({ name: "echo", arguments: {} }, { session });
    expect(result).toMatchObject({ status: "error", code: "CANCELLED" });
    expect(result.text).toContain("session was closed");
    expect(tool.calls).toHaveLength(0);
    expect(session.trace).toHaveLength(1);
    expect(session.callCount).toBe(0);
  });

  it("aborts running calls on close, and releases a pin that lands after close", async () => {
    const store = new SpyBlobStore();
    const started = deferred<ToolContext>();
    const finish = deferred();
    const tool = localTool("late", async (_args, ctx) => {
      started.resolve(ctx);
      await finish.promise;
      return "y".repeat(5000);
    });
    const invoker = makeInvoker([tool], { blobStore: store, policy: { callTimeoutMs: 5_000, approvalTimeoutMs: 100 } });
    const session = invoker.openSession();
    const pending = invoker.invoke({ name: "late", arguments: {} }, { session });
    const ctx = await started.promise;
    await session.close();
    expect(ctx.signal.aborted).toBe(true);
    finish.resolve();
    expect(await pending).toMatchObject({ status: "error", code: "CANCELLED" });
  });

  it("cancels through the signal given to openSession", async () => {
    const controller = new AbortController();
    const invoker = makeInvoker([echoTool()]);
    const session = invoker.openSession({ signal: controller.signal });
    expect(session.signal.aborted).toBe(false);
    controller.abort();
    expect(session.signal.aborted).toBe(true);
  });

  // The signal is made on first read; read late, it must be in the state an eager one would be.
  it("hands out a signal first read after close already aborted, with the close reason", async () => {
    const session = makeInvoker([echoTool()]).openSession();
    await session.close();
    expect(session.signal.aborted).toBe(true);
    expect(session.signal.reason).toMatchObject({ name: "AbortError", message: "The invoker session was closed." });
  });

  it("hands out a signal first read after the caller cancelled, with the caller's reason", () => {
    const controller = new AbortController();
    const session = makeInvoker([echoTool()]).openSession({ signal: controller.signal });
    const reason = new Error("user pressed stop");
    controller.abort(reason);
    expect(session.signal.aborted).toBe(true);
    expect(session.signal.reason).toBe(reason);
  });

  it("exposes id, callCount and remaining", async () => {
    const invoker = makeInvoker([echoTool()], { policy: { maxToolCalls: 3 } });
    const named = invoker.openSession({ chainId: "abc" });
    expect(named.id).toBe("abc");
    expect(invoker.openSession().id).toMatch(/^[0-9a-f-]{36}$/);
    await invoker.invoke({ name: "echo", arguments: {} }, { session: named });
    expect(named.callCount).toBe(1);
    expect(named.remaining).toBe(2);
  });

  it("takes policy overrides per session and rejects bad ones", () => {
    const invoker = makeInvoker([echoTool()]);
    expect(invoker.openSession({ policy: { maxToolCalls: 7 } }).policy.maxToolCalls).toBe(7);
    expect(invoker.openSession({ policy: { maxToolCalls: 7 } }).policy.callTimeoutMs).toBe(200);
    try {
      invoker.openSession({ policy: { approvalTimeoutMs: 500 } });
      expect.unreachable();
    } catch (error) {
      expect(isChainRuntimeError(error) && error.code).toBe("POLICY_INVALID");
    }
  });

  it("keeps at most maxTraceRecords records and counts the rest", async () => {
    const invoker = makeInvoker([echoTool()], { maxTraceRecords: 3, policy: { maxToolCalls: 1000 } });
    const session = invoker.openSession();
    for (let i = 0; i < 10; i++) await invoker.invoke({ name: "echo", arguments: {} }, { session });
    expect(session.trace).toHaveLength(3);
    expect(session.trace.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(session.droppedRecords).toBe(7);
    expect(session.callCount).toBe(10);
    const roomy = invoker.openSession({ maxTraceRecords: 20 });
    for (let i = 0; i < 10; i++) await invoker.invoke({ name: "echo", arguments: {} }, { session: roomy });
    expect(roomy.trace).toHaveLength(10);
  });

  it("keeps the records of calls that ran over refusals when full: a flood of refused calls, which end first, cannot push them out", async () => {
    const invoker = makeInvoker([echoTool()], { maxTraceRecords: 4, policy: { maxToolCalls: 3 } });
    const session = invoker.openSession();
    // Three calls that run (they end later), then six refused by the budget (they end at once).
    const running = Array.from({ length: 3 }, () => invoker.invoke({ name: "echo", arguments: {} }, { session }));
    const refused = Array.from({ length: 6 }, () => invoker.invoke({ name: "echo", arguments: {} }, { session }));
    await Promise.all([...running, ...refused]);
    expect(session.trace.map((r) => [r.seq, r.code ?? r.status]).sort((a, b) => Number(a[0]) - Number(b[0]))).toEqual([
      [0, "ok"],
      [1, "ok"],
      [2, "ok"],
      [3, "BUDGET_EXCEEDED"], // the earliest refusal kept; the later ones gave their place
    ]);
    expect(session.droppedRecords).toBe(5);
    expect(session.callCount).toBe(3); // counts what the budget let through
  });

  it("rejects a bad maxTraceRecords", () => {
    expect(() => new InvokerSession({ id: "x", policy: makeInvoker([]).policy, maxTraceRecords: -1 })).toThrow(/maxTraceRecords/);
  });
});
