/**
 * The synchronous runner's own behaviour: what it tells its watch, how it batches results into
 * entries, and how it ends runs without a watchdog timer of its own (timeouts on each entry, a
 * wall timer only while the script waits on the host). Its shared behaviour with the
 * asynchronous runner is in isolate-runner.test.ts; the whole process driver (which uses it in
 * its children) runs the driver contract and the security suites.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { InvocationResult } from "../../src/kernel/index.ts";
import type { IsolateRunRequest } from "../../sandbox/isolate-common.ts";
import { SyncIsolateRunner, type EntryWatch } from "../../sandbox/sync-isolate-runner.ts";
import { chainScript } from "../contracts/sandbox-driver.contract.ts";

const LIMITS = { memoryLimitMb: 32, cpuTimeMs: 300, totalTimeoutMs: 2_000, maxOutputBytes: 1_000, maxArgumentBytes: 1_000 };

const request = (body: string, overrides: Partial<IsolateRunRequest> = {}): IsolateRunRequest => ({
  chainId: "c",
  script: chainScript(body),
  scriptName: "chain.js",
  toolNames: ["echo"],
  maxToolCalls: 100,
  seed: 1,
  clockStart: 0,
  limits: LIMITS,
  onToolCall: (call) => Promise.resolve({ status: "ok", text: call.argsJson }),
  ...overrides,
});

/** A watch that records every entry and whether host code ran inside one. */
class RecordingWatch implements EntryWatch {
  readonly entries: { deadline: number; memoryLimitMb: number; at: number }[] = [];
  inside = false;
  leaves = 0;

  enter(deadline: number, memoryLimitMb: number): void {
    this.entries.push({ deadline, memoryLimitMb, at: Date.now() });
    this.inside = true;
  }

  leave(): void {
    this.inside = false;
    this.leaves++;
  }
}

let runner: SyncIsolateRunner | undefined;
afterEach(() => runner?.dispose());

function create(watch?: EntryWatch): SyncIsolateRunner {
  runner = new SyncIsolateRunner({ memoryLimitMb: 32, ...(watch === undefined ? {} : { watch }) });
  return runner;
}

describe("SyncIsolateRunner", () => {
  it("reports a batch boundary after the frames of each entry were dispatched, outside the entry", async () => {
    const watch = new RecordingWatch();
    const events: string[] = [];
    const outcome = await create(watch).run(
      request("console.log('a'); await Promise.all([1, 2, 3].map((n) => tools.echo({ n }))); await tools.echo({ n: 4 }); return 5;", {
        onToolCall: (call) => {
          events.push(`call ${call.callIndex}`);
          return Promise.resolve({ status: "ok", text: "" });
        },
        onLog: (_level, text) => events.push(`log ${text}`),
        onFramesHandled: () => events.push(watch.inside ? "boundary INSIDE" : "boundary"),
      }),
    );
    expect(outcome).toMatchObject({ status: "ok", returnJson: "5" });
    // start: the log and three calls; the results entry: the fourth call; the last entry: only the done frame
    expect(events).toEqual(["log a", "call 0", "call 1", "call 2", "boundary", "call 3", "boundary", "boundary"]);
  });

  it("tells its watch of every entry, with a deadline within the CPU budget and the heap limit", async () => {
    const watch = new RecordingWatch();
    const outcome = await create(watch).run(request("await tools.echo({ n: 1 }); await tools.echo({ n: 2 }); return 3;"));
    expect(outcome).toMatchObject({ status: "ok", returnJson: "3" });
    // start, then one entry per result
    expect(watch.entries).toHaveLength(3);
    expect(watch.leaves).toBe(3);
    for (const entry of watch.entries) {
      expect(entry.memoryLimitMb).toBe(32);
      expect(entry.deadline - entry.at).toBeGreaterThan(0);
      expect(entry.deadline - entry.at).toBeLessThanOrEqual(LIMITS.cpuTimeMs + 1);
    }
  });

  it("never runs host code inside an entry: calls and console lines are handled once it returns", async () => {
    const watch = new RecordingWatch();
    const seenInside: boolean[] = [];
    const outcome = await create(watch).run(
      request("console.log('a'); await Promise.all([1, 2, 3].map((n) => tools.echo({ n }))); console.log('b'); return 1;", {
        onToolCall: (call) => {
          seenInside.push(watch.inside);
          return Promise.resolve({ status: "ok", text: call.argsJson });
        },
        onLog: () => seenInside.push(watch.inside),
      }),
    );
    expect(outcome.status).toBe("ok");
    expect(seenInside).toEqual([false, false, false, false, false]);
  });

  it("delivers the results of parallel calls that settle in one turn in one entry", async () => {
    const watch = new RecordingWatch();
    const outcome = await create(watch).run(
      request("const r = await Promise.all(Array.from({ length: 50 }, (_, n) => tools.echo({ n }))); return r.length;"),
    );
    expect(outcome).toMatchObject({ status: "ok", returnJson: "50" });
    // start + a handful of deliveries, not 50
    expect(watch.entries.length).toBeLessThanOrEqual(4);
  });

  it("ends a loop after an await at cpuTimeMs as a CpuLimitError and disposes the isolate", async () => {
    const sync = create();
    const started = performance.now();
    const outcome = await sync.run(request("await tools.echo({}); for (;;) {}"));
    expect(outcome).toMatchObject({ status: "timeout", error: { phase: "limit", name: "CpuLimitError" } });
    expect(performance.now() - started).toBeLessThan(LIMITS.totalTimeoutMs);
    // The entry's timeout is wall time, never less than the CPU it measures: on a loaded machine
    // the script is stopped at cpuTimeMs of wall time, possibly before it used that much CPU.
    expect(outcome.wallMs).toBeGreaterThanOrEqual(LIMITS.cpuTimeMs * 0.9);
    expect(sync.isDisposed).toBe(true);
  });

  it("ends a microtask storm at cpuTimeMs (the entry's timeout covers its microtasks)", async () => {
    // Each microtask queues the next and keeps nothing, so the heap stays flat and the CPU limit
    // is what ends it. (A storm whose promises chain, `() => Promise.resolve().then(spin)`, keeps
    // every promise alive and may reach the 32 MiB heap limit first: also a limit, but not this test.)
    const outcome = await create().run(request("await tools.echo({}); const spin = () => { Promise.resolve().then(spin); }; spin(); await new Promise(() => {});"));
    expect(outcome).toMatchObject({ status: "timeout", error: { name: "CpuLimitError" } });
  });

  it("ends a storm of chained promises at a limit, whichever comes first", async () => {
    const outcome = await create().run(request("await tools.echo({}); const spin = () => Promise.resolve().then(spin); spin(); await new Promise(() => {});"));
    expect(outcome.error?.phase).toBe("limit");
    expect(["CpuLimitError", "MemoryLimitError"]).toContain(outcome.error?.name);
  });

  it("ends a run whose tool never answers at totalTimeoutMs as a TimeoutError", async () => {
    const limits = { ...LIMITS, totalTimeoutMs: 150 };
    const outcome = await create().run(request("await tools.echo({});", { limits, onToolCall: () => new Promise<InvocationResult>(() => undefined) }));
    expect(outcome).toMatchObject({ status: "timeout", error: { name: "TimeoutError" } });
  });

  it("finds a deadlock as soon as the entry returns with nothing out on the host", async () => {
    const watch = new RecordingWatch();
    const outcome = await create(watch).run(request("await tools.echo({}); await new Promise(() => {});"));
    expect(outcome).toMatchObject({ status: "error", error: { phase: "limit", name: "DeadlockError" } });
    expect(watch.entries).toHaveLength(2);
  });

  it("keeps a stray unhandled rejection inside the script", async () => {
    const outcome = await create().run(request("Promise.reject(new Error('stray')); await tools.echo({}); return 5;"));
    expect(outcome).toMatchObject({ status: "ok", returnJson: "5" });
  });

  it("cancels a run waiting on the host when its signal aborts, and aborts the pending call", async () => {
    const controller = new AbortController();
    const signals: AbortSignal[] = [];
    const sync = create();
    const outcome = await sync.run(
      request("await tools.echo({});", {
        signal: controller.signal,
        onToolCall: (_call, signal) => {
          signals.push(signal);
          setTimeout(() => controller.abort(), 10);
          return new Promise<InvocationResult>(() => undefined);
        },
      }),
    );
    expect(outcome.status).toBe("cancelled");
    expect(signals[0]?.aborted).toBe(true);
    expect(sync.isDisposed).toBe(true);
  });

  it("serves the next run in a fresh context: nothing a script leaves on the global survives", async () => {
    const sync = create();
    await sync.run(request("globalThis.leftover = 1; Array.prototype.push = () => 0; return 1;"));
    const outcome = await sync.run(request("const a = [1]; a.push(2); return [typeof globalThis.leftover, a.length];"));
    expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(["undefined", 2]);
  });

  it("ends a run as a crash when its owner disposes the runner while the script waits on the host", async () => {
    const sync = create();
    const outcome = await sync.run(
      request("await tools.echo({});", {
        onToolCall: () => {
          setTimeout(() => sync.dispose(), 10);
          return new Promise<InvocationResult>(() => undefined);
        },
      }),
    );
    expect(outcome).toMatchObject({ status: "error", error: { phase: "limit", name: "SandboxError" } });
  });
});
