import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileTraceStore, isChainRuntimeError, replay } from "../../src/index.ts";
import { outboxTools, type OutboxCounters } from "./fixtures/outbox-tools.ts";

const FIXTURE = join(import.meta.dirname, "fixtures", "crash-chain.ts");
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "isochain-crash-"));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the crash fixture in a real child process, which SIGKILLs itself inside `crash`. */
function runCrashingChild(traceDir: string, outbox: string, chainId: string): void {
  const child = spawnSync(process.execPath, ["--no-node-snapshot", FIXTURE, traceDir, outbox, chainId], { encoding: "utf8", timeout: 30_000 });
  expect(child.signal, child.stderr).toBe("SIGKILL");
  expect(child.stdout).not.toContain("not killed");
}

function lines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean) : [];
}

describe("resume after a crash (real child process, SIGKILL)", () => {
  it("never re-sends the email, reports the in-doubt call and runs the rest live in a new linked trace", async () => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    runCrashingChild(traceDir, outbox, "crashed-chain");
    expect(lines(outbox)).toHaveLength(1);

    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    const crashed = await store.load("crashed-chain");
    expect(crashed.outcome).toBeUndefined();
    expect(crashed.calls.map((call) => [call.callId, call.tool, call.state])).toEqual([
      ["c0", "lookup", "completed"],
      ["c1", "send_email", "completed"],
      ["c2", "crash", "in-doubt"],
    ]);

    const counters: OutboxCounters = { lookups: 0, crashes: 0 };
    const report = await replay(crashed, { mode: "resume", tools: outboxTools(outbox, counters), traceStore: store, driver: "in-process" });

    expect(lines(outbox)).toHaveLength(1); // at-most-once: the email went out before the crash only
    expect(counters).toEqual({ lookups: 0, crashes: 0 }); // completed calls answered, the in-doubt one not re-run
    expect(lines(`${outbox}.notes`)).toEqual(["mail ok, crash error IN_DOUBT"]);
    expect(report.replayedCalls).toEqual(["c0", "c1", "c2"]);
    expect(report.liveCalls).toEqual(["c3"]);
    expect(report.inDoubt).toEqual([{ callId: "c2", tool: "crash", risk: "high", resolution: "in-doubt" }]);
    expect(report.run.status).toBe("ok");
    expect(report.run.returnValue).toMatchObject({ mail: "ok", crash: "IN_DOUBT", note: "ok" });
    // Same seed and clock start as the crashed run (the clock then moves with real time).
    expect((report.run.returnValue as { at: number }).at).toBeGreaterThanOrEqual(crashed.clockStart);
    expect(report.run.seed).toBe(crashed.seed);

    const resumed = await store.load(report.run.chainId);
    expect(resumed.parentChainId).toBe("crashed-chain");
    expect(resumed.seed).toBe(crashed.seed);
    expect(resumed.calls.map((call) => [call.callId, call.tool, call.state, call.result?.status])).toEqual([
      ["c0", "lookup", "completed", "ok"],
      ["c1", "send_email", "completed", "ok"],
      ["c2", "crash", "completed", "error"],
      ["c3", "notify", "completed", "ok"],
    ]);
    expect(resumed.outcome?.status).toBe("ok");

    // The crashed trace was resumed once: a second resume of it could repeat c3, so it is refused.
    const again = await replay(crashed, { mode: "resume", tools: outboxTools(outbox), traceStore: store, driver: "in-process" }).catch((error: unknown) => error);
    expect(isChainRuntimeError(again) && again.code).toBe("REPLAY_FAILED");
    expect(String((again as Error).message)).toContain(report.run.chainId);

    // The resumed trace can itself be resumed with a decision for the call left in doubt; here the
    // decision changes what the script does next, and the recorded c3 no longer matches: resume
    // stops at the divergence instead of guessing.
    const decided = await replay(resumed, {
      mode: "resume",
      tools: outboxTools(outbox, counters),
      traceStore: store,
      inDoubt: { c2: "assume-done" },
      driver: "in-process",
    });
    expect(decided.identical).toBe(false);
    expect(decided.divergence).toMatchObject({ kind: "call-mismatch", callId: "c3" });
    expect(decided.divergence?.diff).toEqual(['args.text: expected "mail ok, crash error IN_DOUBT", got "mail ok, crash ok "']);
    expect(counters.crashes).toBe(0);
    expect(lines(outbox)).toHaveLength(1);
    expect(lines(`${outbox}.notes`)).toHaveLength(1);
  }, 60_000);

  it.each([
    ["re-execute", 1, "ok", ["c2", "c3"]],
    ["assume-done", 0, "ok", ["c3"]],
  ] as const)("settles the in-doubt call as told: %s", async (decision, crashes, crashStatus, live) => {
    const dir = tempDir();
    const traceDir = join(dir, "traces");
    const outbox = join(dir, "outbox.jsonl");
    runCrashingChild(traceDir, outbox, "crashed-again");
    const store = new FileTraceStore({ dir: traceDir, fsync: false });
    const counters: OutboxCounters = { lookups: 0, crashes: 0 };
    const report = await replay(await store.load("crashed-again"), {
      mode: "resume",
      tools: outboxTools(outbox, counters),
      traceStore: store,
      inDoubt: { c2: decision },
      driver: "in-process",
    });
    expect(counters.crashes).toBe(crashes);
    expect(report.inDoubt).toEqual([{ callId: "c2", tool: "crash", risk: "high", resolution: decision }]);
    expect(report.liveCalls).toEqual(live);
    expect(report.run.returnValue).toMatchObject({ mail: "ok", crash: crashStatus });
    expect(lines(outbox)).toHaveLength(1);
  }, 60_000);
});
