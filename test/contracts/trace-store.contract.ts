/**
 * The behaviour every {@link TraceStore} must have. Each implementation's test file calls
 * `runTraceStoreContract(name, { create })` with a factory giving a fresh, empty store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isChainRuntimeError, type ErrorCode } from "../../src/kernel/index.ts";
import type { TraceEvent } from "../../src/trace/trace-event.ts";
import type { TraceStore } from "../../src/trace/trace-store.ts";
import {
  approvalRequestEvent,
  chainEndEvent,
  chainStartEvent,
  toolCallEvent,
  toolResultEvent,
} from "../trace/fixtures/sample-events.ts";

/** Options of {@link runTraceStoreContract}. */
export interface TraceStoreContractOptions {
  /** A fresh, empty store; closed by the suite after each test. */
  readonly create: () => TraceStore | Promise<TraceStore>;
}

/** Asserts that `promise` rejects with a `ChainRuntimeError` of `code`. */
export async function expectCode(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  const error: unknown = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(isChainRuntimeError(error), `expected a ChainRuntimeError ${code}, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
}

/** Registers the TraceStore contract tests for one implementation. */
export function runTraceStoreContract(name: string, options: TraceStoreContractOptions): void {
  describe(`TraceStore contract: ${name}`, () => {
    let store: TraceStore;
    beforeEach(async () => {
      store = await options.create();
    });
    afterEach(async () => {
      await store.close();
    });

    async function appendAll(chainId: string, events: readonly TraceEvent[]): Promise<void> {
      for (const event of events) await store.append(chainId, event);
    }

    it("says whether it is durable", () => {
      expect(typeof store.durable).toBe("boolean");
    });

    it("loads back a whole chain: start, calls with full results, approvals, outcome", async () => {
      const result = {
        status: "ok" as const,
        text: "preview…",
        artifactRef: `sha256:${"d".repeat(64)}` as const,
        bytes: 200_000,
      };
      await appendAll("chain-1", [
        chainStartEvent("chain-1", { parentChainId: "chain-0" }),
        toolCallEvent(0, { args: { nested: { list: [1, "two", null, true], text: "héllo ✓" } } }),
        toolResultEvent(0, { result }),
        approvalRequestEvent("chain-1"),
        chainEndEvent(),
      ]);
      const trace = await store.load("chain-1");
      expect(trace).toMatchObject({
        version: 2,
        chainId: "chain-1",
        parentChainId: "chain-0",
        createdAt: 1_700_000_000_000,
        seed: 42,
        clockStart: 1_700_000_000_000,
        source: chainStartEvent("x").source,
        sourceHash: chainStartEvent("x").sourceHash,
        toolbox: chainStartEvent("x").toolbox,
        policy: chainStartEvent("x").policy,
        outcome: { status: "ok", returnValue: "hi 0", durationMs: 250 },
      });
      expect(trace.calls).toEqual([
        {
          callId: "c0",
          seq: 0,
          tool: "echo",
          args: { nested: { list: [1, "two", null, true], text: "héllo ✓" } },
          argsDigest: toolCallEvent(0, { args: { nested: { list: [1, "two", null, true], text: "héllo ✓" } } }).argsDigest,
          risk: "safe",
          state: "completed",
          startedAt: 1_700_000_000_100,
          endedAt: 1_700_000_000_200,
          durationMs: 100,
          status: "ok",
          result,
          resultSeq: 0,
        },
      ]);
      expect(trace.approvalRequests).toEqual([approvalRequestEvent("chain-1").request]);
    });

    it("loads a call that started and never ended as in-doubt", async () => {
      await appendAll("chain-2", [chainStartEvent("chain-2"), toolCallEvent(0), toolResultEvent(0), toolCallEvent(1)]);
      const trace = await store.load("chain-2");
      expect(trace.calls.map((call) => [call.callId, call.state])).toEqual([
        ["c0", "completed"],
        ["c1", "in-doubt"],
      ]);
      expect(trace.calls[1]?.result).toBeUndefined();
      expect(trace.outcome).toBeUndefined();
    });

    it("keeps the order of appends that were not awaited", async () => {
      const events: TraceEvent[] = [chainStartEvent("chain-3")];
      for (let seq = 0; seq < 25; seq += 1) events.push(toolCallEvent(seq));
      for (let seq = 24; seq >= 0; seq -= 1) events.push(toolResultEvent(seq));
      events.push(chainEndEvent());
      await Promise.all(events.map((event) => store.append("chain-3", event)));
      const trace = await store.load("chain-3");
      expect(trace.calls).toHaveLength(25);
      expect(trace.calls.every((call) => call.state === "completed")).toBe(true);
      expect(trace.calls.map((call) => call.seq)).toEqual([...Array(25).keys()]);
      expect(trace.outcome?.status).toBe("ok");
    });

    it("keeps chains apart when their appends interleave", async () => {
      await Promise.all([
        store.append("chain-a", chainStartEvent("chain-a")),
        store.append("chain-b", chainStartEvent("chain-b", { seed: 7 })),
        store.append("chain-a", toolCallEvent(0)),
        store.append("chain-b", toolCallEvent(0, { tool: "send_email", args: { to: "x" } })),
        store.append("chain-b", toolResultEvent(0)),
      ]);
      const a = await store.load("chain-a");
      const b = await store.load("chain-b");
      expect(a.calls.map((call) => [call.tool, call.state])).toEqual([["echo", "in-doubt"]]);
      expect(b.seed).toBe(7);
      expect(b.calls.map((call) => [call.tool, call.state])).toEqual([["send_email", "completed"]]);
    });

    it("stores a copy: mutating an event after append changes nothing", async () => {
      const call = toolCallEvent(0, { args: { text: "before" } });
      await store.append("chain-4", chainStartEvent("chain-4"));
      await store.append("chain-4", call);
      (call.args as { text: string }).text = "after";
      expect((await store.load("chain-4")).calls[0]?.args).toEqual({ text: "before" });
    });

    it("keeps large values whole", async () => {
      const text = "x".repeat(300_000);
      await appendAll("chain-5", [chainStartEvent("chain-5"), toolCallEvent(0, { args: { text } })]);
      expect((await store.load("chain-5")).calls[0]?.args).toEqual({ text });
    });

    it("accepts a tool-result after chain-end (a call the chain abandoned)", async () => {
      await appendAll("chain-6", [chainStartEvent("chain-6"), toolCallEvent(0), chainEndEvent({ status: "timeout" })]);
      await store.append("chain-6", toolResultEvent(0, { status: "timeout", result: { status: "error", text: "t", code: "TIMEOUT" } }));
      const trace = await store.load("chain-6");
      expect(trace.outcome?.status).toBe("timeout");
      expect(trace.calls[0]).toMatchObject({ state: "completed", status: "timeout" });
    });

    it("throws TRACE_NOT_FOUND for an unknown chain", async () => {
      await expectCode(store.load("nope"), "TRACE_NOT_FOUND");
    });

    it("refuses chain ids that are not safe file names with TRACE_INVALID", async () => {
      for (const chainId of ["", "../escape", "a/b", "a\\b", "..", "a.b", "x".repeat(129), "name\u0000"]) {
        await expectCode(store.append(chainId, chainStartEvent("x")), "TRACE_INVALID");
        await expectCode(store.load(chainId), "TRACE_INVALID");
      }
      await store.append("x".repeat(128), chainStartEvent("x".repeat(128)));
      expect((await store.load("x".repeat(128))).chainId).toBe("x".repeat(128));
    });

    it("refuses something that is not a trace event with TRACE_INVALID", async () => {
      await expectCode(store.append("chain-7", { type: "tool-mystery" } as unknown as TraceEvent), "TRACE_INVALID");
      await expectCode(store.append("chain-7", null as unknown as TraceEvent), "TRACE_INVALID");
    });

    it("reports a log that does not begin with chain-start as TRACE_INVALID", async () => {
      await store.append("chain-8", toolCallEvent(0));
      await expectCode(store.load("chain-8"), "TRACE_INVALID");
    });

    it("lists summaries newest first, with status, call count and parent; honours limit", async () => {
      await appendAll("old", [chainStartEvent("old", { createdAt: 1000 }), toolCallEvent(0), toolResultEvent(0), chainEndEvent()]);
      await appendAll("new", [chainStartEvent("new", { createdAt: 3000, parentChainId: "old" })]);
      await appendAll("mid", [chainStartEvent("mid", { createdAt: 2000 }), chainEndEvent({ status: "error" })]);
      expect(await store.list()).toEqual([
        { chainId: "new", parentChainId: "old", createdAt: 3000, calls: 0 },
        { chainId: "mid", createdAt: 2000, status: "error", calls: 0 },
        { chainId: "old", createdAt: 1000, status: "ok", calls: 1 },
      ]);
      expect((await store.list({ limit: 1 })).map((summary) => summary.chainId)).toEqual(["new"]);
    });

    it("lists nothing when empty, and skips logs that do not load", async () => {
      expect(await store.list()).toEqual([]);
      await store.append("broken", toolCallEvent(0));
      await appendAll("fine", [chainStartEvent("fine")]);
      expect((await store.list()).map((summary) => summary.chainId)).toEqual(["fine"]);
    });

    it("prunes by age", async () => {
      const now = 1_000_000;
      await appendAll("ancient", [chainStartEvent("ancient", { createdAt: now - 10_000 }), chainEndEvent()]);
      await appendAll("recent", [chainStartEvent("recent", { createdAt: now - 10 }), chainEndEvent()]);
      expect(await store.prune({ olderThanMs: 1000, now })).toBe(1);
      await expectCode(store.load("ancient"), "TRACE_NOT_FOUND");
      expect((await store.load("recent")).chainId).toBe("recent");
      expect(await store.prune({ olderThanMs: 1000, now })).toBe(0);
    });

    it("prunes by count, keeping the newest", async () => {
      for (let index = 0; index < 5; index += 1) {
        await appendAll(`t${index}`, [chainStartEvent(`t${index}`, { createdAt: 1000 + index }), chainEndEvent()]);
      }
      expect(await store.prune({ keep: 2 })).toBe(3);
      expect((await store.list()).map((summary) => summary.chainId)).toEqual(["t4", "t3"]);
    });

    it("prunes nothing without a rule, and refuses bad rules", async () => {
      await appendAll("only", [chainStartEvent("only", { createdAt: 1 }), chainEndEvent()]);
      expect(await store.prune({})).toBe(0);
      await expectCode(store.prune({ keep: -1 }), "TRACE_INVALID");
      await expectCode(store.prune({ olderThanMs: Number.NaN }), "TRACE_INVALID");
    });

    it("never prunes a chain it is still writing", async () => {
      await appendAll("running", [chainStartEvent("running", { createdAt: 1 }), toolCallEvent(0)]);
      await appendAll("done", [chainStartEvent("done", { createdAt: 2 }), chainEndEvent()]);
      expect(await store.prune({ olderThanMs: 0 })).toBe(1);
      expect((await store.load("running")).calls).toHaveLength(1);
      await expectCode(store.load("done"), "TRACE_NOT_FOUND");
    });

    it("refuses a second chain-start for a chain id, leaving its log whole", async () => {
      await appendAll("taken", [chainStartEvent("taken"), toolCallEvent(0)]);
      await expectCode(store.append("taken", chainStartEvent("taken")), "TRACE_INVALID");
      await store.append("taken", toolResultEvent(0)); // the run that owns the log goes on
      await store.append("taken", chainEndEvent());
      await expectCode(store.append("taken", chainStartEvent("taken")), "TRACE_INVALID"); // also once it ended
      const trace = await store.load("taken");
      expect(trace.calls.map((call) => call.state)).toEqual(["completed"]);
      expect(trace.outcome).toBeDefined();
    });

    it("grants one resume claim per chain; every other claim gets its holder", async () => {
      const claim = store.claimResume?.bind(store);
      expect(claim, "the built-in stores implement claimResume").toBeDefined();
      if (claim === undefined) return;
      const contenders = ["r1", "r2", "r3", "r4"];
      const answers = await Promise.all(contenders.map((id) => claim("parent", id)));
      const winner = contenders[answers.indexOf(undefined)];
      expect(answers.filter((answer) => answer === undefined)).toHaveLength(1);
      expect(answers.filter((answer) => answer !== undefined)).toEqual([winner, winner, winner]);
      expect(await claim("parent", "r5")).toBe(winner); // never replaced
      expect(await claim("other", "r5")).toBeUndefined(); // claims are per chain
      expect(await store.list()).toEqual([]); // a claim is not a trace
      await expectCode(claim("../parent", "r6"), "TRACE_INVALID");
      await expectCode(claim("parent", "r 6"), "TRACE_INVALID");
    });

    it("drops a trace's resume claim when it prunes the trace", async () => {
      const claim = store.claimResume?.bind(store);
      if (claim === undefined) throw new Error("the built-in stores implement claimResume");
      await appendAll("old", [chainStartEvent("old", { createdAt: 1 }), chainEndEvent()]);
      await appendAll("new", [chainStartEvent("new", { createdAt: 2 }), chainEndEvent()]);
      expect(await claim("old", "old-resumed")).toBeUndefined();
      expect(await claim("new", "new-resumed")).toBeUndefined();
      expect(await store.prune({ keep: 1 })).toBe(1);
      expect(await claim("old", "again")).toBeUndefined();
      expect(await claim("new", "again")).toBe("new-resumed");
    });

    it("names a live writer of a chain until its chain-end is stored, and none once the store closed", async () => {
      const live = store.liveWriter?.bind(store);
      expect(live, "the built-in stores implement liveWriter").toBeDefined();
      if (live === undefined) return;
      expect(await live("never")).toBeUndefined();
      await appendAll("ending", [chainStartEvent("ending"), toolCallEvent(0)]);
      await appendAll("open", [chainStartEvent("open")]);
      expect(await live("ending")).toBe("this process");
      await appendAll("ending", [toolResultEvent(0), chainEndEvent()]);
      await store.load("ending"); // after every pending write
      expect(await live("ending")).toBeUndefined();
      expect(await live("open")).toBe("this process");
      await store.close();
      expect(await live("open")).toBeUndefined(); // closed: nothing more is written
      await expectCode(live("../open"), "TRACE_INVALID");
    });

    it("refuses appends after close with STORE_FAILED, and still reads", async () => {
      await appendAll("closing", [chainStartEvent("closing"), toolCallEvent(0)]);
      await store.close();
      await expectCode(store.append("closing", toolResultEvent(0)), "STORE_FAILED");
      expect((await store.load("closing")).calls[0]?.state).toBe("in-doubt");
    });
  });
}
