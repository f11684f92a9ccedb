/**
 * Decisions on a resume reach exactly the call they name: an approval request names its call
 * (two identical calls are told apart, and a call that ran is never taken for one that waits), an
 * in-doubt decision cannot be put on a call that waits for approval, and a human's no holds even
 * when the tool no longer needs approval.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  defineTool,
  isChainRuntimeError,
  MemoryTraceStore,
  replay,
  resumeChain,
  suspendedCalls,
  ToolChainTool,
  type AnyTool,
} from "../../src/index.ts";

const charged: number[] = [];
function chargeTool(risk: "critical" | "safe", slow = false): AnyTool {
  return defineTool({
    name: "charge",
    description: "Charge a card.",
    risk,
    inputSchema: { type: "object", properties: { amount: { type: "integer" } }, required: ["amount"] } as const,
    execute: async ({ amount }, ctx) => {
      charged.push(amount);
      if (slow) await new Promise((resolve) => ctx?.signal?.addEventListener("abort", resolve, { once: true }));
      return { charged: amount };
    },
  });
}

const chains: ToolChainTool[] = [];
async function suspendedRun(store: MemoryTraceStore, chainId: string, code: string): Promise<void> {
  const chain = new ToolChainTool({ tools: [chargeTool("critical")], driver: "in-process", traceStore: store, approvalMode: "suspend", poolSize: 1 });
  chains.push(chain);
  const run = await chain.run(code, { chainId });
  expect(run.status).toBe("suspended");
}
afterAll(() => Promise.all(chains.map((chain) => chain.close())));

describe("resume decisions reach the call they name", () => {
  it("tells two identical calls apart: the one that ran and was cut off stays in doubt, the one that waits runs once", async () => {
    const store = new MemoryTraceStore();
    const code = `const [a, b] = await Promise.all([tools.charge({ amount: 5 }), tools.charge({ amount: 5 })]); return [a.status, a.code ?? null, b.status];`;
    await suspendedRun(store, "twins", code);
    charged.length = 0;
    // c0 is approved and starts charging; c1 waits for its own approval; the chain times out
    // while c0 runs, so c0 is left in doubt: it ran.
    const first = await resumeChain("twins", "approved", {
      traceStore: store,
      tools: [chargeTool("critical", true)],
      driver: "in-process",
      policy: { totalTimeoutMs: 800 },
    });
    expect(charged).toEqual([5]);
    const cut = await store.load(first.run.chainId);
    expect(cut.calls.map((call) => [call.callId, call.state])).toEqual([
      ["c0", "in-doubt"],
      ["c1", "in-doubt"],
    ]);
    expect(cut.approvalRequests.map((request) => request.callId)).toEqual(["c1"]);
    expect([...suspendedCalls(cut).values()]).toEqual(["c1"]); // not c0, which ran

    const second = await resumeChain(first.run.chainId, "approved", { traceStore: store, tools: [chargeTool("critical")], driver: "in-process" });
    expect(charged).toEqual([5, 5]); // c1 once; c0 not again
    expect(second.liveCalls).toEqual(["c1"]);
    expect(second.inDoubt.map((call) => call.callId)).toEqual(["c0"]);
    expect(second.run.returnValue).toEqual(["error", "IN_DOUBT", "ok"]);
  });

  it("refuses an in-doubt decision on a call that waits for approval (it would be taken and never read)", async () => {
    const store = new MemoryTraceStore();
    await suspendedRun(store, "waiting", `return (await tools.charge({ amount: 7 })).status;`);
    const trace = await store.load("waiting");
    charged.length = 0;
    const error: unknown = await replay(trace, { mode: "resume", traceStore: store, tools: [chargeTool("critical")], inDoubt: { c0: "assume-done" }, driver: "in-process" }).catch(
      (thrown: unknown) => thrown,
    );
    expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
    expect(isChainRuntimeError(error) && error.message).toContain("c0 of chain waiting is suspended waiting for approval (it never ran), not in doubt");
    expect(charged).toEqual([]);
  });

  it("keeps a human's denial when the tool's risk was lowered before the resume", async () => {
    const store = new MemoryTraceStore();
    await suspendedRun(store, "denied-then-safe", `const r = await tools.charge({ amount: 9 }); return [r.status, r.code ?? null];`);
    charged.length = 0;
    const report = await resumeChain("denied-then-safe", "denied", { traceStore: store, tools: [chargeTool("safe")], driver: "in-process" });
    expect(report.toolboxChanged).toBe(true);
    expect(report.run.returnValue).toEqual(["denied", "APPROVAL_DENIED"]);
    expect(charged).toEqual([]);
    const skipped = new MemoryTraceStore();
    await suspendedRun(skipped, "skipped-then-safe", `const r = await tools.charge({ amount: 9 }); return [r.status, r.code ?? null];`);
    const skippedReport = await resumeChain("skipped-then-safe", "skipped", { traceStore: skipped, tools: [chargeTool("safe")], driver: "in-process" });
    expect(skippedReport.run.returnValue).toEqual(["denied", "APPROVAL_SKIPPED"]);
    expect(charged).toEqual([]);
  });
});
