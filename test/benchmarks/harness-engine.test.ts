/**
 * The harness's measuring engine: each batch is a tinybench run (the issue names mitata or
 * tinybench; see benchmarks/README.md "tinybench, interleaved"), and what tinybench times is
 * what the figures are made of.
 */
import type * as Tinybench from "tinybench";
import { describe, expect, it, vi } from "vitest";

const seen = vi.hoisted(() => ({ runs: 0, samples: 0 }));

vi.mock("tinybench", async (importOriginal) => {
  const actual = await importOriginal<typeof Tinybench>();
  class CountingBench extends actual.Bench {
    override async run(): ReturnType<InstanceType<typeof actual.Bench>["run"]> {
      seen.runs++;
      const tasks = await super.run();
      for (const task of tasks) {
        const result = task.result;
        if (result !== undefined && "latency" in result) seen.samples += result.latency.samples?.length ?? 0;
      }
      return tasks;
    }
  }
  return { ...actual, Bench: CountingBench };
});

const { runGroup } = await import("../../benchmarks/harness.ts");

describe("benchmark harness engine", () => {
  it("measures every batch with tinybench, and reports exactly the samples tinybench took in the kept rounds", async () => {
    const settings = { warmupRounds: 0, rounds: 3, batchMs: 5, maxBatchIterations: 50, setupTimeoutMs: 1_000, iterationTimeoutMs: 500 };
    const [result] = await runGroup([{ name: "t/noop", group: "g", run: () => undefined }], { settings, log: () => undefined });
    expect(result?.status).toBe("ok");
    expect(seen.runs).toBeGreaterThanOrEqual(3);
    expect(result?.stats?.samples).toBe(seen.samples);
  });
});
