import { afterEach, describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { IsolatePool } from "../../sandbox/isolate-pool.ts";
import type { SandboxRunRequest } from "../../sandbox/sandbox-driver.ts";

const request = (body: string, limits: Partial<SandboxRunRequest["limits"]> = {}): SandboxRunRequest => ({
  chainId: "c",
  script: `(async function __chain__() {\n${body}\n})`,
  scriptName: "chain.js",
  toolNames: [],
  maxToolCalls: 1,
  seed: 1,
  clockStart: 0,
  limits: { memoryLimitMb: 32, cpuTimeMs: 1_000, totalTimeoutMs: 2_000, maxOutputBytes: 100, maxArgumentBytes: 100, ...limits },
  onToolCall: () => Promise.resolve({ status: "ok", text: "" }),
});

const waitFor = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
};

describe("IsolatePool", () => {
  let pool: IsolatePool | undefined;
  afterEach(() => pool?.close());

  it("warms to poolSize with contexts ready", async () => {
    pool = new IsolatePool({ poolSize: 2, memoryLimitMb: 32 });
    await pool.warm();
    expect(pool.size).toBe(2);
    expect(pool.idleCount()).toBe(2);
  });

  it("keeps an isolate for 1000 runs by default and lets a caller choose", () => {
    expect(new IsolatePool().maxRunsPerIsolate).toBe(1000);
    expect(new IsolatePool({ maxRunsPerIsolate: 5 }).maxRunsPerIsolate).toBe(5);
  });

  it("reuses a runner, then replaces it after maxRunsPerIsolate runs", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32, maxRunsPerIsolate: 2 });
    await pool.warm();
    const first = pool.acquire();
    await first.run(request("return 1;"));
    pool.release(first);
    const again = pool.acquire();
    expect(again).toBe(first);
    await again.run(request("return 2;"));
    pool.release(again);
    expect(first.isDisposed).toBe(true);
    await waitFor(() => pool?.idleCount() === 1);
    expect(pool.acquire()).not.toBe(first);
  });

  it("disposes a runner that hit a limit and refills in the background", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32 });
    await pool.warm();
    const runner = pool.acquire();
    const outcome = await runner.run(request("for (;;) {}", { cpuTimeMs: 50 }));
    expect(outcome.error?.phase).toBe("limit");
    pool.release(runner);
    expect(runner.isDisposed).toBe(true);
    await waitFor(() => pool?.idleCount() === 1);
  });

  it("with idleTrimMs 0, disposes idle isolates past poolSize as they come back", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32, idleTrimMs: 0 });
    const a = pool.acquire();
    const b = pool.acquire();
    expect(a).not.toBe(b);
    await Promise.all([a.run(request("return 1;")), b.run(request("return 2;"))]);
    pool.release(a);
    pool.release(b);
    expect(pool.idleCount()).toBe(1);
    expect(b.isDisposed).toBe(true);
  });

  it("keeps isolates made for concurrent runs in rotation, then trims them past poolSize after idleTrimMs", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32, idleTrimMs: 150 });
    const first = [pool.acquire(), pool.acquire(), pool.acquire()];
    await Promise.all(first.map((runner, n) => runner.run(request(`return ${n};`))));
    for (const runner of first) pool.release(runner);
    expect(pool.idleCount()).toBe(3);
    // The next burst reuses all three: no isolate is made or disposed.
    const second = [pool.acquire(), pool.acquire(), pool.acquire()];
    expect(new Set(second)).toEqual(new Set(first));
    await Promise.all(second.map((runner) => runner.run(request("return 1;"))));
    for (const runner of second) pool.release(runner);
    expect(pool.size).toBe(3);
    await waitFor(() => pool?.idleCount() === 1);
    expect(pool.size).toBe(1);
    expect(first.filter((runner) => runner.isDisposed)).toHaveLength(2);
  });

  it("trims the surplus under light steady load: the most recently returned runner is reused", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32, idleTrimMs: 150 });
    const burst = [pool.acquire(), pool.acquire(), pool.acquire()];
    await Promise.all(burst.map((runner) => runner.run(request("return 1;"))));
    for (const runner of burst) pool.release(runner);
    // One run every ~40 ms (each of the three would be reused within idleTrimMs if they took
    // turns), for well past idleTrimMs: the surplus must age out while the load goes on.
    for (let i = 0; i < 15 && pool.size > 1; i++) {
      await waitFor(() => pool?.idleCount() === pool?.size);
      await new Promise((resolve) => setTimeout(resolve, 40));
      const runner = pool.acquire();
      await runner.run(request("return 1;"));
      pool.release(runner);
    }
    expect(pool.size).toBe(1);
  });

  it("refuses an idleTrimMs that is not a number of ms >= 0", () => {
    for (const idleTrimMs of [-1, Number.NaN]) {
      expect(() => new IsolatePool({ idleTrimMs })).toThrow(/idleTrimMs/);
    }
    expect(new IsolatePool({ idleTrimMs: Number.POSITIVE_INFINITY }).idleTrimMs).toBe(Number.POSITIVE_INFINITY);
  });

  it("recycles a runner whose heap passed recycleHeapRatio", async () => {
    pool = new IsolatePool({ poolSize: 1, memoryLimitMb: 32, recycleHeapRatio: 0.0001 });
    const runner = pool.acquire();
    await runner.run(request("return 1;"));
    pool.release(runner);
    expect(runner.isDisposed).toBe(true);
  });
});

describe("InProcessSandboxDriver lifecycle", () => {
  it("rejects with SANDBOX_FAILED after close and disposes its isolates", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 1, memoryLimitMb: 32 });
    await driver.warm();
    expect((await driver.run(request("return 1;"))).returnJson).toBe("1");
    await driver.close();
    await expect(driver.run(request("return 1;"))).rejects.toSatisfy((error: unknown) => isChainRuntimeError(error) && error.code === "SANDBOX_FAILED");
  });

  it("ends a run in progress when closed", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 1, memoryLimitMb: 32 });
    const running = driver.run(request("for (;;) {}", { totalTimeoutMs: 5_000, cpuTimeMs: 5_000 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await driver.close();
    const outcome = await running;
    expect(outcome.status).toBe("error");
    expect(outcome.error).toMatchObject({ phase: "limit", name: "SandboxError" });
  });
});
