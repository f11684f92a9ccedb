import { afterAll, describe, expect, it } from "vitest";
import { ToolChainTool, Toolbox } from "../../src/index.ts";

describe.each(["in-process", "process"] as const)("totalTimeoutMs over a chain's host work (%s driver)", (driver) => {
  const chain = new ToolChainTool({
    toolbox: new Toolbox([]),
    driver,
    policy: { totalTimeoutMs: 1_500, cpuTimeMs: 1_400 },
    // Host work before the script starts: 700 ms of the budget.
    hooks: { CHAIN_START: () => new Promise((resolve) => setTimeout(resolve, 700)) },
  });
  afterAll(() => chain.close());

  it("leaves the script what the host work before it did not take", async () => {
    await chain.warm();
    const started = performance.now();
    const run = await chain.run("for (;;) {}");
    // With a fresh budget in the sandbox the loop ran into its CPU limit, at ~2.1 s.
    expect({ status: run.status, name: run.error?.name }).toEqual({ status: "timeout", name: "TimeoutError" });
    expect(run.error?.message).toContain("totalTimeoutMs (1500 ms)");
    expect(performance.now() - started).toBeLessThan(1_500 + 500);
  }, 30_000);
});
