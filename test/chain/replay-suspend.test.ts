import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ChainRunResult,
  FileTraceStore,
  isChainRuntimeError,
  pendingApprovals,
  resumeChain,
  suspendedCalls,
  ToolChainTool,
} from "../../src/index.ts";
import { outboxTools, type OutboxCounters } from "./fixtures/outbox-tools.ts";

const FIXTURE = join(import.meta.dirname, "fixtures", "suspend-chain.ts");
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "isochain-suspend-"));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

/** Suspends a chain in a real child process, which then exits. */
function suspendInChild(traceDir: string, outbox: string, chainId: string): ChainRunResult {
  const child = spawnSync(process.execPath, ["--no-node-snapshot", FIXTURE, traceDir, outbox, chainId], { encoding: "utf8", timeout: 30_000 });
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as ChainRunResult;
}

describe("durable approvals (approvalMode: suspend)", () => {
  it("suspends in one process and resumes in another with the decision applied to that call", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    const suspended = suspendInChild(traceDir, outbox, "suspended-chain");
    expect(suspended.status).toBe("suspended");
    expect(suspended.pendingApproval).toMatchObject({ chainId: "suspended-chain", tool: "send_email", risk: "high", args: { to: "ceo@example.com" } });
    expect(suspended.callTrace.map((record) => record.tool)).toEqual(["lookup"]);
    expect(suspended.stats.toolCalls).toBe(1); // the suspended call never ran
    expect(lines(outbox)).toEqual([]);

    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    const trace = await store.load("suspended-chain");
    expect(trace.outcome?.status).toBe("suspended");
    expect(trace.calls.map((call) => [call.callId, call.tool, call.state])).toEqual([
      ["c0", "lookup", "completed"],
      ["c1", "send_email", "in-doubt"], // open: waiting for the human, never ran
    ]);
    expect(pendingApprovals(trace).map((request) => request.id)).toEqual([suspended.pendingApproval?.id]);
    expect([...suspendedCalls(trace)]).toEqual([[suspended.pendingApproval?.id, "c1"]]);
    const mismatch = await resumeChain("suspended-chain", "approved", { traceStore: store, trace: { ...trace, chainId: "another" }, tools: outboxTools(outbox) }).catch(
      (error: unknown) => error,
    );
    expect(isChainRuntimeError(mismatch) && mismatch.code).toBe("ARGUMENT_INVALID");

    const counters: OutboxCounters = { lookups: 0, crashes: 0 };
    const report = await resumeChain("suspended-chain", "approved", { traceStore: store, tools: outboxTools(outbox, counters), driver: "in-process" });
    expect(report.run.status).toBe("ok");
    expect(report.run.returnValue).toEqual({ mail: "ok", code: null, note: "ok", day: "2026-01-15" });
    expect(counters.lookups).toBe(0); // answered from the trace
    expect(lines(outbox)).toHaveLength(1);
    expect(lines(`${outbox}.notes`)).toEqual(["mail ok"]);
    expect(report.replayedCalls).toEqual(["c0"]);
    expect(report.liveCalls).toEqual(["c1", "c2"]);
    const resumed = await store.load(report.run.chainId);
    expect(resumed.parentChainId).toBe("suspended-chain");
    expect(resumed.outcome?.status).toBe("ok");

    // Resuming the same suspension twice would send the email twice: refused.
    const twice = await resumeChain("suspended-chain", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" }).catch((error: unknown) => error);
    expect(isChainRuntimeError(twice) && twice.code).toBe("REPLAY_FAILED");
    expect(lines(outbox)).toHaveLength(1);
  }, 60_000);

  it("runs one of two resumes started at once; the other is refused and names the one that runs", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    suspendInChild(traceDir, outbox, "raced");
    // Two stores over one folder: two processes (or servers) acting on the same decision.
    const stores = [new FileTraceStore({ dir: traceDir, fsync: false }), new FileTraceStore({ dir: traceDir, fsync: false })];
    const outcomes = await Promise.allSettled(
      stores.map((traceStore, index) =>
        resumeChain("raced", "approved", { traceStore, tools: outboxTools(outbox), driver: "in-process", chainId: `raced-resume-${index}` }),
      ),
    );
    const ran = outcomes.filter((outcome) => outcome.status === "fulfilled");
    const refused = outcomes.filter((outcome) => outcome.status === "rejected");
    expect(ran).toHaveLength(1);
    expect(refused).toHaveLength(1);
    const winner = (ran[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof resumeChain>>>).value.run.chainId;
    const error = (refused[0] as PromiseRejectedResult).reason as unknown;
    expect(isChainRuntimeError(error) && error.code).toBe("REPLAY_FAILED");
    expect(isChainRuntimeError(error) && error.details).toMatchObject({ chainId: "raced", resumedAs: winner });
    expect(lines(outbox)).toHaveLength(1); // the email went out once
    // The loser left nothing behind; a later resume is refused as "already resumed".
    expect((await stores[0]?.list())?.filter((summary) => summary.parentChainId === "raced").map((summary) => summary.chainId)).toEqual([winner]);
    const later = await resumeChain("raced", "approved", { traceStore: stores[0] as FileTraceStore, tools: outboxTools(outbox), driver: "in-process" }).catch(
      (thrown: unknown) => thrown,
    );
    expect(isChainRuntimeError(later) && later.message).toContain(`already resumed as chain ${winner}`);
  }, 60_000);

  it("refuses a resume whose claim is held by one that never logged anything, until forced", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    suspendInChild(traceDir, outbox, "stale");
    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    expect(await store.claimResume("stale", "died-early")).toBeUndefined(); // a resume that died before its first event
    const refused = await resumeChain("stale", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" }).catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(refused) && refused.code).toBe("REPLAY_FAILED");
    expect(isChainRuntimeError(refused) && refused.message).toMatch(/being resumed as chain died-early.*force/);
    expect(lines(outbox)).toEqual([]);
    const forced = await resumeChain("stale", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process", force: true });
    expect(forced.run.status).toBe("ok");
    expect(lines(outbox)).toHaveLength(1);
  }, 60_000);

  it("refuses a resume under a chain id that already names a trace, before claiming or running anything", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    suspendInChild(traceDir, outbox, "keep-me");
    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    const other = new ToolChainTool({ tools: [], traceStore: store, driver: "in-process" });
    await other.run("return 1;", { chainId: "other-run" });
    await other.close();
    for (const chainId of ["keep-me", "other-run"]) {
      const error = await resumeChain("keep-me", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process", chainId }).catch(
        (thrown: unknown) => thrown,
      );
      expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
      expect(isChainRuntimeError(error) && error.message).toContain(`"${chainId}" already names a trace`);
    }
    expect(lines(outbox)).toEqual([]);
    expect((await store.load("keep-me")).outcome?.status).toBe("suspended"); // both traces still load
    expect((await store.load("other-run")).outcome?.status).toBe("ok");
    const resumed = await resumeChain("keep-me", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" }); // not claimed by the refusals
    expect(resumed.run.status).toBe("ok");
  }, 60_000);

  it("runs no tool of a chain whose id already has a durable trace, and leaves that trace whole", async () => {
    const dir = tempDir();
    const store = new FileTraceStore({ dir: join(dir, "traces"), fsync: false });
    const outbox = join(dir, "outbox.jsonl");
    const chain = new ToolChainTool({ tools: outboxTools(outbox), traceStore: store, driver: "in-process", approvalHandler: { request: async () => "approved" } });
    const code = `return (await tools.send_email({ to: "a@example.com", subject: "once" })).status;`;
    expect((await chain.run(code, { chainId: "used-once" })).returnValue).toBe("ok");
    const again = await chain.run(code, { chainId: "used-once" });
    await chain.close();
    expect(again.returnValue).toBe("error"); // the call was refused: it could not be logged
    expect(again.traceError?.code).toBe("TRACE_INVALID");
    expect(lines(outbox)).toHaveLength(1);
    const trace = await store.load("used-once");
    expect(trace.calls).toHaveLength(1);
    expect(trace.outcome?.status).toBe("ok");
  }, 60_000);

  it("a denial reaches the script as APPROVAL_DENIED and nothing is sent", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    suspendInChild(traceDir, outbox, "to-deny");
    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    const report = await resumeChain("to-deny", "denied", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" });
    expect(report.run.returnValue).toMatchObject({ mail: "denied", code: "APPROVAL_DENIED", note: "ok" });
    expect(lines(outbox)).toEqual([]);
  }, 60_000);

  it("suspends again at the next call that needs approval, without holding the first decision over", async () => {
    const dir = tempDir();
    const store = new FileTraceStore({ dir: join(dir, "traces"), fsync: false });
    const outbox = join(dir, "outbox.jsonl");
    const first = new ToolChainTool({ tools: outboxTools(outbox), traceStore: store, approvalMode: "suspend", driver: "in-process" });
    const code = `
      const a = await tools.send_email({ to: "a@example.com", subject: "one" });
      const b = await tools.send_email({ to: "b@example.com", subject: "two" });
      return [a.status, b.status];`;
    const run = await first.run(code, { chainId: "two-approvals" });
    await first.close();
    expect(run.status).toBe("suspended");
    expect(run.pendingApproval?.args).toMatchObject({ to: "a@example.com" });

    const second = await resumeChain("two-approvals", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" });
    expect(second.run.status).toBe("suspended");
    expect(second.run.pendingApproval?.args).toMatchObject({ to: "b@example.com" });
    expect(lines(outbox).map((line) => JSON.parse(line).to)).toEqual(["a@example.com"]);

    const third = await resumeChain(second.run.chainId, "skipped", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" });
    expect(third.run.status).toBe("ok");
    expect(third.run.returnValue).toEqual(["ok", "denied"]);
    expect(lines(outbox)).toHaveLength(1);
  }, 60_000);

  it("lets calls already running finish, and neither runs nor logs the calls made after the suspension", async () => {
    const dir = tempDir();
    const store = new FileTraceStore({ dir: join(dir, "traces"), fsync: false });
    const outbox = join(dir, "outbox.jsonl");
    const chain = new ToolChainTool({ tools: outboxTools(outbox), traceStore: store, approvalMode: "suspend", driver: "in-process" });
    const code = `
      const mail = tools.send_email({ to: "a@example.com", subject: "x" });
      const who = await tools.lookup({ key: "cfo" });
      await tools.notify({ text: "after " + who.status });
      return [(await mail).status, who.status];`;
    const run = await chain.run(code, { chainId: "parallel-suspend" });
    await chain.close();
    expect(run.status).toBe("suspended");
    const trace = await store.load("parallel-suspend");
    // c1 (lookup) either finished before the chain stopped, or reached the host after the
    // suspension and was never sent; notify (c2) comes after it and never runs here.
    expect(trace.calls[0]).toMatchObject({ callId: "c0", tool: "send_email", state: "in-doubt" });
    expect(trace.calls.slice(1).every((call) => call.state === "completed" && call.tool === "lookup")).toBe(true);
    expect(lines(`${outbox}.notes`)).toEqual([]);
    const resumed = await resumeChain("parallel-suspend", "approved", { traceStore: store, tools: outboxTools(outbox), driver: "in-process" });
    expect(resumed.run.returnValue).toEqual(["ok", "ok"]);
    expect(resumed.liveCalls).toContain("c2");
    expect(lines(`${outbox}.notes`)).toEqual(["after ok"]);
    expect(lines(outbox)).toHaveLength(1);
  }, 60_000);

  it("needs a trace store, and refuses to resume a chain that is not suspended", async () => {
    expect(() => new ToolChainTool({ tools: [], approvalMode: "suspend" })).toThrow(/traceStore/);
    const dir = tempDir();
    const store = new FileTraceStore({ dir, fsync: false });
    const chain = new ToolChainTool({ tools: [], traceStore: store, driver: "in-process" });
    await chain.run("return 1;", { chainId: "plain" });
    await chain.close();
    const error = await resumeChain("plain", "approved", { traceStore: store, tools: [] }).catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(error) && error.code).toBe("REPLAY_FAILED");
  });
});
