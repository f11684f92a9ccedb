import { describe, expect, it } from "vitest";
import { runHost } from "../support/run-host.ts";

describe.each(["in-process", "process"] as const)("a first chain while esbuild's process is stopped (%s driver)", (driver) => {
  it("ends by totalTimeoutMs, waiting for the prelude within its budget (it waited until esbuild went on)", async () => {
    const { code, stderr, report } = await runHost("chain/stopped-esbuild-host.ts", { args: [driver] });
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(report).toMatchObject({
      stopped: 1,
      first: { status: "timeout", message: "the chain waited past totalTimeoutMs (1500 ms) for the sandbox prelude to load (an esbuild build)" },
      next: { status: "ok", returnValue: 4 },
    });
    expect(report.tookMs).toBeLessThan(1_500 + 500);
  }, 30_000);
});
