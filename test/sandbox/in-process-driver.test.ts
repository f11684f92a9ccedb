import { describe, expect, it } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { sandboxLimitsFromPolicy } from "../../sandbox/limits.ts";
import type { SandboxRunRequest } from "../../sandbox/sandbox-driver.ts";
import { compileScript } from "../../src/compile/index.ts";
import { isChainRuntimeError, resolveChainPolicy, type InvocationResult } from "../../src/kernel/index.ts";
import { runSandboxDriverContract } from "../contracts/sandbox-driver.contract.ts";

runSandboxDriverContract("InProcessSandboxDriver", { create: () => new InProcessSandboxDriver({ poolSize: 2, memoryLimitMb: 64 }) });

function request(onToolCall: SandboxRunRequest["onToolCall"], overrides: Partial<SandboxRunRequest> = {}): SandboxRunRequest {
  const compiled = compileScript('const r = await tools.wait({}); return r.status;');
  if (!compiled.ok) throw new Error("compile");
  return {
    chainId: "c",
    script: compiled.code,
    scriptName: "chain.js",
    toolNames: ["wait"],
    maxToolCalls: 5,
    limits: sandboxLimitsFromPolicy(resolveChainPolicy({ totalTimeoutMs: 5_000 })),
    seed: 1,
    clockStart: 0,
    onToolCall,
    ...overrides,
  };
}

describe("InProcessSandboxDriver maxIsolates", () => {
  it("runs at most maxIsolates scripts at once; the next starts when one ends", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 1, maxIsolates: 2 });
    const releases: (() => void)[] = [];
    let started = 0;
    const onToolCall = (): Promise<InvocationResult> => {
      started++;
      return new Promise((resolve) => releases.push(() => resolve({ status: "ok", text: "{}" })));
    };
    const runs = [driver.run(request(onToolCall)), driver.run(request(onToolCall)), driver.run(request(onToolCall))];
    await expect.poll(() => started).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(started).toBe(2); // the third waits for an isolate
    releases.shift()?.();
    await expect.poll(() => started).toBe(3);
    for (const release of releases.splice(0)) release();
    expect((await Promise.all(runs)).map((outcome) => outcome.status)).toEqual(["ok", "ok", "ok"]);
    await driver.close();
  });

  it("lets a waiting run go on its signal or at totalTimeoutMs, and refuses waiters on close", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 1, maxIsolates: 1 });
    let release: (() => void) | undefined;
    const busy = driver.run(request(() => new Promise((resolve) => (release = () => resolve({ status: "ok", text: "{}" })))));
    await expect.poll(() => release).toBeDefined();
    const controller = new AbortController();
    const cancelled = driver.run(request(() => Promise.resolve({ status: "ok", text: "{}" }), { signal: controller.signal }));
    controller.abort();
    expect((await cancelled).status).toBe("cancelled");
    const limits = { ...request(() => Promise.reject(new Error("unused"))).limits, totalTimeoutMs: 30 };
    const timedOut = await driver.run(request(() => Promise.reject(new Error("unused")), { limits }));
    expect(timedOut).toMatchObject({ status: "timeout", error: { name: "TimeoutError", message: expect.stringContaining("maxIsolates") } });
    const refused = driver.run(request(() => Promise.reject(new Error("unused"))));
    await driver.close();
    const error = await refused.catch((thrown: unknown) => thrown);
    expect(isChainRuntimeError(error) && error.code === "SANDBOX_FAILED").toBe(true);
    release?.();
    await busy.catch(() => undefined);
  });

  it("refuses a maxIsolates that is not a positive integer", () => {
    expect(() => new InProcessSandboxDriver({ maxIsolates: 0 })).toThrow(/maxIsolates/);
    expect(() => new InProcessSandboxDriver({ maxIsolates: 1.5 })).toThrow(/maxIsolates/);
  });
});

describe("InProcessSandboxDriver cancellation while a run is set up", () => {
  it("cancels a run whose signal fires while its context is still being made (the signal fires no event after)", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 0 });
    try {
      const looping = compileScript("while (true) {}");
      if (!looping.ok) throw new Error("compile");
      const controller = new AbortController();
      const onToolCall = (): Promise<InvocationResult> => Promise.resolve({ status: "ok", text: "" });
      // No warm context (poolSize 0): the run awaits a new one when the signal fires.
      const running = driver.run(request(onToolCall, { script: looping.code, toolNames: [], signal: controller.signal }));
      controller.abort();
      const outcome = await running;
      expect(outcome.status).toBe("cancelled");
      expect(outcome.wallMs).toBeLessThan(4_000); // not the 5 s totalTimeoutMs of a loop nobody stopped
    } finally {
      await driver.close();
    }
  });
});
