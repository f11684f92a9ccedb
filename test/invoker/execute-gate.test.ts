import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import type { ToolContext } from "../../src/kernel/index.ts";
import { sessionStateOf } from "../../src/invoker/invoker-session.ts";
import { deferred, localTool, makeInvoker } from "./invoker-fixtures.ts";

const never = () => new Promise<never>(() => {});

describe("ToolInvoker execute gate", () => {
  it("times out past callTimeoutMs with TIMEOUT, fires the tool's signal, and records status timeout", async () => {
    let seen: ToolContext | undefined;
    const tool = localTool("slow", (_args, ctx) => {
      seen = ctx;
      return never();
    });
    const invoker = makeInvoker([tool], { policy: { callTimeoutMs: 60, approvalTimeoutMs: 10 } });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "slow", arguments: {} }, { session });
    expect(result).toMatchObject({ status: "error", code: "TIMEOUT" });
    expect(result.text).toContain("60 ms");
    expect(seen?.signal.aborted).toBe(true);
    expect((seen?.signal.reason as DOMException).name).toBe("TimeoutError");
    expect(() => seen?.check()).toThrow();
    expect(session.trace[0]).toMatchObject({ status: "timeout", code: "TIMEOUT" });
  });

  it("counts a tool that rejects with its own abort after the timeout as timed out", async () => {
    const tool = localTool("polite", (_args, ctx) => new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))));
    const invoker = makeInvoker([tool], { policy: { callTimeoutMs: 30, approvalTimeoutMs: 10 } });
    const result = await invoker.invoke({ name: "polite", arguments: {} }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "error", code: "TIMEOUT" });
  });

  it("records what a tool returned when its promise settled before the caller's signal fired", async () => {
    // The process driver reads a chain's calls and its end in one chunk: the tool has finished
    // (its promise resolved) when the end aborts the caller's signal, before any microtask ran.
    const controller = new AbortController();
    const tool = localTool("send", () => {
      queueMicrotask(() => controller.abort(new Error("the chain ended")));
      return Promise.resolve({ sent: true });
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "send", arguments: {} }, { session, ctx: { signal: controller.signal } });
    expect(result).toMatchObject({ status: "ok", structured: { sent: true } });
    expect(session.trace[0]).toMatchObject({ status: "ok" });
  });

  it("cancels a running call when the caller's signal fires", async () => {
    let seen: ToolContext | undefined;
    const started = deferred();
    const tool = localTool("slow", (_args, ctx) => {
      seen = ctx;
      started.resolve();
      return never();
    });
    const invoker = makeInvoker([tool]);
    const controller = new AbortController();
    const session = invoker.openSession();
    const pending = invoker.invoke({ name: "slow", arguments: {} }, { session, ctx: { signal: controller.signal } });
    await started.promise;
    controller.abort(new Error("user hit stop"));
    const result = await pending;
    expect(result).toMatchObject({ status: "error", code: "CANCELLED" });
    expect(seen?.signal.aborted).toBe(true);
    expect(session.trace[0]).toMatchObject({ status: "error", code: "CANCELLED" });
  });

  it("hands execute a ToolContext with chainId, callId and check()", async () => {
    const tool = localTool("ctx", (_args, ctx) => {
      ctx.check();
      const { check } = ctx; // detached use works too
      check();
      return { chainId: ctx.chainId, callId: ctx.callId, aborted: ctx.signal.aborted };
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession({ chainId: "c1" });
    const byDefault = await invoker.invoke({ name: "ctx", arguments: {} }, { session });
    expect(byDefault.structured).toEqual({ chainId: "c1", callId: "c1:0", aborted: false });
    const fromCall = await invoker.invoke({ id: "call_abc", name: "ctx", arguments: {} }, { session });
    expect(fromCall.structured).toMatchObject({ callId: "call_abc" });
    const fromCtx = await invoker.invoke({ id: "call_abc", name: "ctx", arguments: {} }, { session, ctx: { callId: "c1:c9" } });
    expect(fromCtx.structured).toMatchObject({ callId: "c1:c9" });
    expect(session.trace.map((r) => r.callId)).toEqual(["c1:0", "call_abc", "c1:c9"]);
  });

  it("times a call from its start even when the tool first reads ctx.signal after a synchronous stretch", async () => {
    let seen: ToolContext | undefined;
    const tool = localTool("late", (_args, ctx) => {
      const until = performance.now() + 100;
      while (performance.now() < until) {
        // busy: the timer cannot fire during synchronous code
      }
      seen = ctx;
      return new Promise((_resolve, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
    });
    const invoker = makeInvoker([tool], { policy: { callTimeoutMs: 100, approvalTimeoutMs: 10 } });
    const started = performance.now();
    const result = await invoker.invoke({ name: "late", arguments: {} }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "error", code: "TIMEOUT" });
    expect(seen?.signal.aborted).toBe(true);
    // Due at 100 ms, right after the busy stretch; a timer started when the signal was first read would fire at ~200 ms.
    expect(performance.now() - started).toBeLessThan(170);
  });

  it("gives a tool that returns without a promise a live signal; a session closed meanwhile cancels it", async () => {
    const invoker = makeInvoker([
      localTool("sync", (_args, ctx) => ({ aborted: ctx.signal.aborted })),
      localTool("closer", () => {
        void session.close();
        return "done anyway";
      }),
      localTool("thrower", () => {
        throw new Error("sync boom");
      }),
    ]);
    const session = invoker.openSession();
    expect((await invoker.invoke({ name: "sync", arguments: {} }, { session })).structured).toEqual({ aborted: false });
    expect(await invoker.invoke({ name: "thrower", arguments: {} }, { session })).toMatchObject({ status: "error", code: "TOOL_ERROR" });
    expect(await invoker.invoke({ name: "closer", arguments: {} }, { session })).toMatchObject({ status: "error", code: "CANCELLED" });
  });

  it("runs at most maxConcurrentCalls executes at once; the rest queue and all finish", async () => {
    let active = 0;
    let maxActive = 0;
    const gates: { resolve: () => void }[] = [];
    const tool = localTool("work", async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      const gate = deferred();
      gates.push(gate);
      await gate.promise;
      active--;
      return "done";
    });
    const invoker = makeInvoker([tool], { policy: { maxConcurrentCalls: 2 } });
    const session = invoker.openSession();
    const pending = Array.from({ length: 5 }, () => invoker.invoke({ name: "work", arguments: {} }, { session }));
    // Release executes one by one as they start.
    for (let released = 0; released < 5; released++) {
      while (gates.length <= released) await new Promise((resolve) => setImmediate(resolve));
      expect(active).toBeLessThanOrEqual(2);
      gates[released]?.resolve();
    }
    const results = await Promise.all(pending);
    expect(results.every((r) => r.status === "ok")).toBe(true);
    expect(maxActive).toBe(2);
  });

  it("gives a sync tool's slot back as it returns: parallel calls of sync tools never queue", async () => {
    const invoker = makeInvoker([localTool("quick", (args) => args.n)], { policy: { maxConcurrentCalls: 2 } });
    const session = invoker.openSession();
    const pending = Array.from({ length: 10 }, (_, n) => invoker.invoke({ name: "quick", arguments: { n } }, { session }));
    const slots = sessionStateOf(session)?.slots;
    expect(slots?.waiting).toBe(0);
    expect(slots?.active).toBe(0);
    expect((await Promise.all(pending)).map((r) => r.text)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  });

  it("turns a returned value whose `then` getter throws into TOOL_ERROR, and frees the slot", async () => {
    const hostile = localTool("hostile", (_args, ctx) => {
      void ctx.signal; // links the call's scope to the session: it must be undone
      return Object.defineProperty({}, "then", {
        get() {
          throw new Error("no then for you");
        },
      });
    });
    const invoker = makeInvoker([hostile, localTool("ok", () => "fine")], { policy: { maxConcurrentCalls: 1 } });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "hostile", arguments: {} }, { session });
    expect(result).toMatchObject({ status: "error", code: "TOOL_ERROR" });
    expect(result.text).toContain("no then for you");
    expect(sessionStateOf(session)?.slots.active).toBe(0);
    expect(getEventListeners(session.signal, "abort")).toHaveLength(0);
    expect((await invoker.invoke({ name: "ok", arguments: {} }, { session })).status).toBe("ok");
  });

  it("lets a queued call be cancelled while it waits for a slot; it never executes", async () => {
    const gate = deferred();
    const tool = localTool("work", async (args) => {
      if (args.hold) await gate.promise;
      return "done";
    });
    const invoker = makeInvoker([tool], { policy: { maxConcurrentCalls: 1 } });
    const session = invoker.openSession();
    const holder = invoker.invoke({ name: "work", arguments: { hold: true } }, { session });
    await new Promise((resolve) => setImmediate(resolve));
    const controller = new AbortController();
    const queued = invoker.invoke({ name: "work", arguments: { queued: true } }, { session, ctx: { signal: controller.signal } });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect(await queued).toMatchObject({ status: "error", code: "CANCELLED" });
    gate.resolve();
    expect((await holder).status).toBe("ok");
    expect(tool.calls.map((c) => c.args)).toEqual([{ hold: true }]);
    // The slot is free again.
    expect((await invoker.invoke({ name: "work", arguments: {} }, { session })).status).toBe("ok");
  });

  it("emits tool_call then tool_result progress, and survives a throwing listener", async () => {
    const steps: string[] = [];
    const invoker = makeInvoker([localTool("a", () => "x")]);
    const session = invoker.openSession();
    const result = await invoker.invoke(
      { name: "a", arguments: { q: 1 } },
      {
        session,
        onProgress: (step) => {
          steps.push(`${step.type}:${"status" in step ? step.status : JSON.stringify("args" in step ? step.args : null)}`);
          throw new Error("listener bug");
        },
      },
    );
    expect(result.status).toBe("ok");
    expect(steps).toEqual(['tool_call:{"q":1}', "tool_result:ok"]);
  });
});
