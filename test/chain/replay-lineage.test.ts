/**
 * A resume writes a new trace naming the chain it resumes (`parentChainId`), and answers the
 * parent's completed calls from the parent's trace, re-recording each as it reaches it. A resume
 * that dies (or stops at a divergence) before it reached them leaves a trace that holds fewer
 * calls than were done; a resume of that trace answers the rest from the line of chains it
 * resumes, never runs them again.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  defineTool,
  FileTraceStore,
  LIVE_WRITER_EXTENSION,
  fingerprintToolbox,
  isChainRuntimeError,
  replay,
  resumeChain,
  ToolChainTool,
  TRACE_FORMAT_VERSION,
  type ChainTrace,
  type TraceEvent,
} from "../../src/index.ts";

const effects: string[] = [];
const tools = [
  defineTool({
    name: "charge",
    description: "Charges a card (no approval needed).",
    inputSchema: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] } as const,
    execute: ({ amount }) => {
      effects.push(`charge ${amount}`);
      return { charged: amount };
    },
  }),
  defineTool({
    name: "ship",
    description: "Ships an order.",
    risk: "high",
    inputSchema: { type: "object", properties: { order: { type: "number" } }, required: ["order"] } as const,
    execute: ({ order }) => {
      effects.push(`ship ${order}`);
      return { shipped: order };
    },
  }),
];
const SCRIPT = "const paid = await tools.charge({ amount: 42 });\nconst sent = await tools.ship({ order: 7 });\nreturn [paid.status, sent.status];";
type TraceToolCallEvent = Extract<TraceEvent, { type: "tool-call" }>;
const approveAll = { request: () => Promise.resolve("approved" as const) };

const dirs: string[] = [];

function fileStore(): FileTraceStore {
  const dir = mkdtempSync(join(tmpdir(), "isochain-lineage-"));
  dirs.push(dir);
  return new FileTraceStore({ dir, fsync: false });
}

/**
 * What a resume of `parent` leaves when its process dies right after its trace's start: its
 * claim, a chain-start and nothing else (written by a store of its own, whose lease is then
 * removed, as a dead process's lease counts for nothing).
 */
async function deadResume(store: FileTraceStore, parent: ChainTrace, chainId: string, started: readonly TraceToolCallEvent[] = []): Promise<ChainTrace> {
  const writer = new FileTraceStore({ dir: store.dir, fsync: false });
  await writer.append(chainId, {
    type: "chain-start",
    version: TRACE_FORMAT_VERSION,
    chainId,
    parentChainId: parent.chainId,
    source: parent.source,
    sourceHash: parent.sourceHash,
    policy: parent.policy,
    toolbox: fingerprintToolbox(tools),
    seed: parent.seed,
    clockStart: parent.clockStart,
    createdAt: Date.now(),
  });
  for (const event of started) await writer.append(chainId, event);
  await writer.claimResume(parent.chainId, chainId);
  rmSync(join(store.dir, `${chainId}${LIVE_WRITER_EXTENSION}`), { force: true });
  return store.load(chainId);
}

describe("resuming a resume that stopped before it reached its parent's calls", () => {
  const chains: ToolChainTool[] = [];
  afterAll(async () => {
    await Promise.all(chains.map((chain) => chain.close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  async function suspendedRun(store: FileTraceStore): Promise<ChainTrace> {
    const chain = new ToolChainTool({ tools, traceStore: store, approvalMode: "suspend", driver: "in-process" });
    chains.push(chain);
    const run = await chain.run(SCRIPT);
    expect(run.status).toBe("suspended");
    return store.load(run.chainId);
  }

  it("answers the parent's completed call from the parent's trace and runs only the rest live", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    expect(effects).toEqual(["charge 42"]);
    // The parent refuses a second resume and names the dead one: resuming that, as it says, must not charge again.
    const dead = await deadResume(store, original, "dead-resume");
    const refused = await resumeChain(original.chainId, "approved", { traceStore: store, tools }).catch((error: unknown) => error);
    expect(isChainRuntimeError(refused) && refused.message).toContain("Resume dead-resume instead");

    const report = await replay(dead, { mode: "resume", traceStore: store, tools, approvalHandler: approveAll, driver: "in-process" });
    expect(effects).toEqual(["charge 42", "ship 7"]);
    expect(report.replayedCalls).toEqual(["c0"]);
    expect(report.liveCalls).toEqual(["c1"]);
    expect(report.run.returnValue).toEqual(["ok", "ok"]);
    // The new trace holds the whole run: the inherited answer is recorded like any other.
    const resumed = await store.load(report.run.chainId);
    expect(resumed.calls.map((call) => [call.callId, call.tool, call.state])).toEqual([
      ["c0", "charge", "completed"],
      ["c1", "ship", "completed"],
    ]);
  });

  it("answers a call the dead resume left in doubt, when its parent completed it (an answer from the trace never ran)", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    const [charged] = original.calls;
    if (charged === undefined) throw new Error("no call");
    const startedCharge: TraceToolCallEvent = {
      type: "tool-call",
      callId: "c0",
      seq: 0,
      tool: "charge",
      args: charged.args,
      argsDigest: charged.argsDigest,
      risk: "safe",
      startedAt: Date.now(),
    };
    const dead = await deadResume(store, original, "dead-mid-answer", [startedCharge]);
    expect(dead.calls.map((call) => [call.callId, call.state])).toEqual([["c0", "in-doubt"]]);
    const report = await replay(dead, { mode: "resume", traceStore: store, tools, approvalHandler: approveAll, driver: "in-process" });
    expect(effects).toEqual(["charge 42", "ship 7"]);
    expect(report.inDoubt).toEqual([]);
    expect(report.replayedCalls).toEqual(["c0"]);
  });

  it("takes a decision on the call the grandparent was suspended on, through two dead resumes", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    const first = await deadResume(store, original, "dead-1");
    const second = await deadResume(store, first, "dead-2");
    // Keyed by the request's id (its natural key in a UI): refused, saying what the key is.
    const requestId = original.approvalRequests[0]?.id ?? "";
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const byRequest = await replay(second, { mode: "resume", traceStore: store, tools, approvals: { [requestId]: "denied" }, driver: "in-process" }).catch((error: unknown) => error);
    expect((byRequest as Error).message).toContain(
      `has no call suspended for approval ${requestId}; its call suspended for approval is c1 (approvals are keyed by call id, the request's callId, not its id).`,
    );
    const report = await replay(second, { mode: "resume", traceStore: store, tools, approvals: { c1: "denied" }, driver: "in-process" });
    expect(effects).toEqual(["charge 42"]);
    expect(report.run.returnValue).toEqual(["ok", "denied"]);
  });

  it("refuses a resume whose parent's trace is not in the store, unless forced", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    const dead = await deadResume(store, original, "dead-alone");
    const elsewhere = fileStore();
    const error = await replay(dead, { mode: "resume", traceStore: elsewhere, tools, approvalHandler: approveAll }).catch((caught: unknown) => caught);
    expect(isChainRuntimeError(error) && error.code).toBe("REPLAY_FAILED");
    expect((error as Error).message).toContain(`resumes chain ${original.chainId}, whose trace is not in the store`);
    expect(effects).toEqual(["charge 42"]);
  });

  it("says a chain was resumed into a trace that is there but damaged, and that forcing would repeat its calls", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    const first = await replay(original, { mode: "resume", traceStore: store, tools, approvals: { c1: "approved" }, driver: "in-process" });
    expect(effects).toEqual(["charge 42", "ship 7"]);
    // One byte of the resume's second record damaged: the file is there, and does not load.
    const path = join(store.dir, `${first.run.chainId}.trace`);
    const bytes = readFileSync(path);
    const at = 4 + bytes.readUInt32BE(0) + 4;
    bytes.writeUInt8((bytes.readUInt8(at) ^ 0xff) & 0xff, at);
    writeFileSync(path, bytes);
    const again = await replay(original, { mode: "resume", traceStore: store, tools, approvals: { c1: "approved" }, driver: "in-process" }).catch((caught: unknown) => caught);
    expect(isChainRuntimeError(again) && again.code).toBe("REPLAY_FAILED");
    expect((again as Error).message).toContain(`was already resumed as chain ${first.run.chainId}, whose trace is in the store but cannot be read (`);
    expect((again as Error).message).toContain("and so would forcing it");
    expect(effects).toEqual(["charge 42", "ship 7"]);
  });

  it("takes a claiming chain whose trace has no record yet for a resume under way, not for damage", async () => {
    effects.length = 0;
    const store = fileStore();
    const original = await suspendedRun(store);
    // Another caller has claimed the resume and created its log, not yet written.
    expect(await store.claimResume(original.chainId, "starting")).toBeUndefined();
    writeFileSync(join(store.dir, "starting.trace"), "");
    const again = await replay(original, { mode: "resume", traceStore: store, tools, approvals: { c1: "approved" }, driver: "in-process" }).catch((caught: unknown) => caught);
    expect(isChainRuntimeError(again) && again.code).toBe("REPLAY_FAILED");
    expect((again as Error).message).toContain(`is being resumed as chain starting by another caller`);
    expect(effects).toEqual(["charge 42"]);
  });
});
