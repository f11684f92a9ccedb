import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defineTool, FileTraceStore, isChainRuntimeError, MemoryTraceStore, replay, ToolChainTool, type TraceStore } from "../../src/index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A chain that waits in a safe lookup (until `release`), then sends an email (high risk, approved). */
function slowChain(store: TraceStore) {
  const sent: string[] = [];
  let release!: () => void;
  let entered!: () => void;
  const inLookup = new Promise<void>((resolve) => (entered = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tools = [
    defineTool({
      name: "lookup",
      description: "A slow safe read.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: async () => {
        entered();
        await gate;
        return { email: "ceo@example.com" };
      },
    }),
    defineTool({
      name: "send_email",
      description: "Sends an email.",
      risk: "high",
      inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] } as const,
      execute: ({ to }) => {
        sent.push(to);
        return { sent: to };
      },
    }),
  ];
  const approvalHandler = { request: async () => "approved" as const };
  const chain = new ToolChainTool({ tools, traceStore: store, driver: "in-process", approvalHandler });
  const script = `const who = await tools.lookup({}); const mail = await tools.send_email({ to: who.structured.email }); return mail.status;`;
  return { chain, tools, approvalHandler, sent, release: () => release(), inLookup, script };
}

async function refusal(action: Promise<unknown>): Promise<string> {
  try {
    await action;
    return "no throw";
  } catch (error) {
    return isChainRuntimeError(error) ? `${error.code}: ${error.message}` : `untyped ${String(error)}`;
  }
}

describe.each([
  ["MemoryTraceStore", () => new MemoryTraceStore()],
  [
    "FileTraceStore",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "isochain-live-"));
      dirs.push(dir);
      return new FileTraceStore({ dir, fsync: false });
    },
  ],
] as const)("resume of a chain that is still running (%s)", (_name, createStore) => {
  it("is refused while it runs, refused from a copy loaded before it ended, and never sends twice", async () => {
    const store = createStore();
    const { chain, tools, approvalHandler, sent, release, inLookup, script } = slowChain(store);
    const running = chain.run(script, { chainId: "running" });
    await inLookup;
    const midway = await store.load("running");
    expect(midway.outcome).toBeUndefined();
    expect(midway.calls.map((call) => call.state)).toEqual(["in-doubt"]);

    const live = await refusal(replay(midway, { mode: "resume", tools, traceStore: store, approvalHandler, driver: "in-process" }));
    expect(live).toMatch(/^REPLAY_FAILED: Chain running is still running \(this process is writing its trace\)/);

    release();
    expect((await running).status).toBe("ok");
    expect(sent).toEqual(["ceo@example.com"]);

    // The copy loaded mid-run lacks the email the run sent since: resuming it would send it again.
    const stale = await refusal(replay(midway, { mode: "resume", tools, traceStore: store, approvalHandler, driver: "in-process" }));
    expect(stale).toMatch(/^REPLAY_FAILED: The trace of chain running given to resume is older than the one in the store \(1 call\(s\), 0 completed, no outcome against 2 call\(s\), 2 completed, ended ok\)/);
    expect(sent).toEqual(["ceo@example.com"]);

    // The stored trace itself resumes: every call is answered from it, nothing runs again.
    const resumed = await replay(await store.load("running"), { mode: "resume", tools, traceStore: store, approvalHandler, driver: "in-process" });
    expect(resumed.identical).toBe(true);
    expect(resumed.liveCalls).toEqual([]);
    expect(sent).toEqual(["ceo@example.com"]);
    await chain.close();
    await store.close();
  });
});

describe("a call still running when the chain ended", () => {
  it("stays in doubt in the trace: resume does not call it not-run, strict replay stops there", async () => {
    const store = new MemoryTraceStore();
    const charged: number[] = [];
    const looked: number[] = [];
    let finishCharge!: () => void;
    const chargeDone = new Promise<void>((resolve) => (finishCharge = resolve));
    const tools = [
      defineTool({
        name: "charge",
        description: "Charges a card; ignores its signal.",
        risk: "high",
        inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] } as const,
        execute: async ({ amount }) => {
          await new Promise((resolve) => setTimeout(resolve, 400));
          charged.push(amount);
          finishCharge();
          return { charged: amount };
        },
      }),
      defineTool({
        name: "lookup",
        description: "A slow safe read.",
        inputSchema: { type: "object", properties: {} } as const,
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, 400));
          looked.push(1);
          return { ok: true };
        },
      }),
    ];
    const approvalHandler = { request: async () => "approved" as const };
    const chain = new ToolChainTool({ tools, traceStore: store, driver: "in-process", approvalHandler, policy: { totalTimeoutMs: 150 } });
    const script = `const [c, l] = await Promise.all([tools.charge({ amount: 100 }), tools.lookup({})]); return [c.status, l.status];`;
    const run = await chain.run(script, { chainId: "cut" });
    expect(run.status).toBe("timeout");
    expect(run.callTrace.map((call) => call.code)).toEqual(["CANCELLED", "CANCELLED"]);
    await chainDone(chargeDone);
    expect(charged).toEqual([100]); // it charged anyway

    const trace = await store.load("cut");
    expect(trace.calls.map((call) => [call.tool, call.state])).toEqual([
      ["charge", "in-doubt"],
      ["lookup", "in-doubt"],
    ]);
    const strict = await replay(trace, { mode: "strict", driver: "in-process" });
    expect(strict).toMatchObject({ identical: true, partialAt: "c0" });

    const resumed = await replay(trace, { mode: "resume", tools, traceStore: store, approvalHandler, policy: { totalTimeoutMs: 5_000 }, driver: "in-process" });
    expect(resumed.inDoubt).toEqual([
      { callId: "c0", tool: "charge", risk: "high", resolution: "in-doubt" },
      { callId: "c1", tool: "lookup", risk: "safe", resolution: "re-execute" },
    ]);
    expect(resumed.run.returnValue).toEqual(["error", "ok"]);
    expect(charged).toEqual([100]); // never charged twice
    await chain.close();
  });
});

async function chainDone(done: Promise<void>): Promise<void> {
  await done;
  await new Promise((resolve) => setTimeout(resolve, 10));
}
