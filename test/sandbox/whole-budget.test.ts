import { describe, expect, it } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { ProcessSandboxDriver } from "../../sandbox/process-driver.ts";
import type { SandboxDriver, SandboxRunOutcome, SandboxRunRequest } from "../../sandbox/sandbox-driver.ts";
import { compileScript } from "../../src/compile/index.ts";
import type { InvocationResult } from "../../src/kernel/index.ts";

/** A request for `body`, on a budget of `totalTimeoutMs` (CPU time far beyond it). */
function request(body: string, totalTimeoutMs: number, overrides: Partial<SandboxRunRequest> = {}): SandboxRunRequest {
  const compiled = compileScript(body, { cache: false });
  if (!compiled.ok) throw new Error(compiled.error.message);
  return {
    chainId: `budget-${Math.random()}`,
    script: compiled.code,
    scriptName: "chain.ts",
    toolNames: ["hold"],
    maxToolCalls: 5,
    seed: 1,
    clockStart: 0,
    limits: { memoryLimitMb: 64, cpuTimeMs: 60_000, totalTimeoutMs, maxOutputBytes: 1_000, maxArgumentBytes: 1_000 },
    onToolCall: () => new Promise<InvocationResult>((resolve) => setTimeout(resolve, 1_000, { status: "ok", text: "" })),
    ...overrides,
  };
}

/** `run`'s outcome and how long it took, ms. */
async function timed(run: Promise<SandboxRunOutcome>): Promise<SandboxRunOutcome & { tookMs: number }> {
  const started = performance.now();
  const outcome = await run;
  return { ...outcome, tookMs: performance.now() - started };
}

/** `test` on a driver `create` makes, warmed first, closed after. */
async function onWarmDriver(create: () => SandboxDriver, test: (driver: SandboxDriver) => Promise<void>): Promise<void> {
  const driver = create();
  try {
    await driver.warm?.();
    await test(driver);
  } finally {
    await driver.close();
  }
}

describe.each([
  ["in-process", (): SandboxDriver => new InProcessSandboxDriver({ maxIsolates: 1, poolSize: 1 })],
  // A kill grace far past the budget: the child's own watchdog, not the host's kill, must end it.
  ["process", (): SandboxDriver => new ProcessSandboxDriver({ processes: 1, maxProcesses: 1, killGraceMs: 5_000 })],
] as const)("%s driver: totalTimeoutMs is the whole chain's", (_name, create) => {
  it("a run queued for the busy sandbox has what is left of its budget, not a fresh one", async () => {
    await onWarmDriver(create, async (driver) => {
      // The first run holds the only sandbox ~1 s; the second waits, then loops.
      const first = driver.run(request("await tools.hold({});\nreturn 1;", 5_000));
      const second = await timed(driver.run(request("for (;;) {}", 1_500)));
      expect((await first).status).toBe("ok");
      expect(second.status).toBe("timeout");
      expect(second.error?.message).toMatch(/^the chain ran past totalTimeoutMs \(1500 ms\)\. /); // the policy's figure, from the sandbox's own watchdog
      expect(second.tookMs).toBeLessThan(1_500 + 600); // a fresh budget after the wait: 2 500 ms and more
    });
  }, 30_000);

  it("a run whose chain spent part of its budget before it (budgetSpentMs) has the rest", async () => {
    await onWarmDriver(create, async (driver) => {
      const run = await timed(driver.run(request("for (;;) {}", 2_000, { budgetSpentMs: 1_400 })));
      expect(run.status).toBe("timeout");
      expect(run.error?.message).toMatch(/^the chain ran past totalTimeoutMs \(2000 ms\)\. /); // the sandbox's own watchdog
      expect(run.tookMs).toBeLessThan(600 + 700); // 2 000 ms without it
    });
  }, 30_000);

  it("a run handed with its whole budget spent ends at once, its sandbox untouched", async () => {
    await onWarmDriver(create, async (driver) => {
      const pids = driver instanceof ProcessSandboxDriver ? driver.pids() : [];
      const run = await timed(driver.run(request("return 1;", 1_000, { budgetSpentMs: 1_200 })));
      expect(run.status).toBe("timeout");
      expect(run.error?.message).toBe("the chain had spent its totalTimeoutMs (1000 ms) before its script could start");
      expect(run.tookMs).toBeLessThan(200);
      if (driver instanceof ProcessSandboxDriver) expect(driver.pids()).toEqual(pids); // no child killed for it
      expect((await driver.run(request("return 2;", 1_000))).status).toBe("ok");
    });
  }, 30_000);
});
