/**
 * The benchmark harness itself: figures are computed from real samples, a broken scenario is
 * reported (never timed, never silently dropped), and the CLI's --fail-on-error turns a
 * scenario that did not run into a non-zero exit for CI's smoke run.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import vm from "node:vm";
import { describe, expect, it } from "vitest";
import {
  computeDerived,
  computeStats,
  meetsTarget,
  notRunSummary,
  probeResult,
  runGroup,
  type SamplerSettings,
  type Scenario,
} from "../../benchmarks/harness.ts";

const FAST: SamplerSettings = { warmupRounds: 1, rounds: 2, batchMs: 5, maxBatchIterations: 200, setupTimeoutMs: 1_000, iterationTimeoutMs: 500 };
const quiet = (): void => undefined;
const spin = (us: number): void => {
  const end = process.hrtime.bigint() + BigInt(us * 1000);
  while (process.hrtime.bigint() < end) {
    // busy: a known cost per iteration
  }
};

describe("benchmark harness", () => {
  it("times every scenario of a group, interleaved, and gives a ratio to the baseline", async () => {
    const scenarios: Scenario[] = [
      { name: "base/spin", group: "g", run: () => spin(20) },
      { name: "subject/spin", group: "g", baseline: "base/spin", run: () => spin(80), target: { label: "<= 1 ms", maxNs: 1e6 } },
    ];
    const [base, subject] = await runGroup(scenarios, { settings: FAST, log: quiet });
    expect(base?.status).toBe("ok");
    expect(subject?.status).toBe("ok");
    expect(base?.stats?.medianNs).toBeGreaterThanOrEqual(20_000);
    expect(subject?.stats?.medianNs).toBeGreaterThanOrEqual(80_000);
    expect(subject?.ratio).toBeGreaterThan(1.5);
    expect(subject?.met).toBe(true);
  });

  it("times an iteration to the end of a promise made in another realm (node:vm), and between() untimed", async () => {
    // The node:vm floor's runs return such promises: `instanceof Promise` is false for them.
    const context = vm.createContext({ spin });
    const later = vm.runInContext("(async () => { await null; spin(200); })", context) as () => Promise<void>;
    let betweens = 0;
    const [result] = await runGroup(
      [
        {
          name: "vm/await",
          group: "g",
          run: () => later(),
          between: () => {
            betweens++;
            spin(500);
          },
        },
      ],
      { settings: FAST, log: quiet },
    );
    expect(result?.status).toBe("ok");
    expect(result?.stats?.medianNs).toBeGreaterThanOrEqual(200_000);
    expect(result?.stats?.medianNs).toBeLessThan(500_000);
    expect(betweens).toBeGreaterThan(0);
  });

  it("reports a setup that throws as skipped and a run that throws as failed, with the reason", async () => {
    let runsOfSkipped = 0;
    const scenarios: Scenario[] = [
      {
        name: "x/no-setup",
        group: "g",
        setup: () => {
          throw new Error("module missing");
        },
        run: () => runsOfSkipped++,
      },
      {
        name: "x/broken",
        group: "g",
        run: () => {
          throw new Error("boom");
        },
      },
      { name: "x/fine", group: "g", run: () => 1 },
    ];
    const results = await runGroup(scenarios, { settings: FAST, log: quiet });
    expect(results.map((r) => [r.name, r.status])).toEqual([
      ["x/no-setup", "skipped"],
      ["x/broken", "failed"],
      ["x/fine", "ok"],
    ]);
    expect(results[0]?.reason).toContain("module missing");
    expect(results[1]?.reason).toContain("boom");
    expect(runsOfSkipped).toBe(0);
  });

  it("derives figures from medians and skips one whose input is missing", () => {
    const stats = computeStats([300, 100, 200]);
    expect(stats?.medianNs).toBe(200);
    const derived = computeDerived(
      [
        { name: "d/per-call", group: "g", compute: (median) => ((median("a") ?? Number.NaN) - (median("b") ?? Number.NaN)) / 2 },
        { name: "d/missing", group: "g", compute: (median) => median("nope") },
      ],
      [
        { name: "a", group: "g", kind: "scenario", status: "ok", report: "time", stats: { samples: 1, medianNs: 500, p99Ns: 500, meanNs: 500, minNs: 500 } },
        { name: "b", group: "g", kind: "scenario", status: "ok", report: "time", stats: { samples: 1, medianNs: 100, p99Ns: 100, meanNs: 100, minNs: 100 } },
      ],
    );
    expect(derived[0]?.stats?.medianNs).toBe(200);
    expect(derived[1]?.status).toBe("skipped");
    expect(meetsTarget({ label: "<= 1.5x", maxRatio: 1.5 }, { ns: 1, ratio: 1.4 })).toBe(true);
    expect(meetsTarget({ label: "<= 1.5x", maxRatio: 1.5 }, { ns: 1, ratio: 1.6 })).toBe(false);
    expect(meetsTarget({ label: "<= 1.5x", maxRatio: 1.5 }, { ns: 1 })).toBeUndefined();
    expect(meetsTarget({ label: "<= 1 µs", maxNs: 1000 }, { ns: 999 })).toBe(true);
    expect(meetsTarget({ label: "<= 1 µs", maxNs: 1000 }, { ns: 1001 })).toBe(false);
  });

  it("marks a probe partial when one half of it could not run, and marks its targets", () => {
    const target = { label: "<= 100 MiB", maxBytes: 100 * 1024 * 1024 };
    const ok = probeResult("memory/x", [{ name: "isochain: rss", value: 5 * 1024 * 1024, unit: "bytes", target }]);
    expect(ok).toMatchObject({ status: "ok", figures: [{ met: true }] });
    expect(probeResult("memory/x", [{ name: "isochain: rss", value: 200 * 1024 * 1024, unit: "bytes", target }]).figures[0]?.met).toBe(false);
    const partial = probeResult("memory/x", [
      { name: "raw-ivm: rss", value: 3, unit: "bytes" },
      { name: "isochain", value: Number.NaN, unit: "count", note: "the runtime did not load", skipped: true },
    ]);
    expect(partial.status).toBe("partial");
    expect(partial.reason).toBe("isochain: the runtime did not load");
  });

  it("names everything that did not run in full for --fail-on-error, and nothing when all ran", () => {
    expect(notRunSummary([{ name: "a", status: "ok" }])).toBeUndefined();
    expect(notRunSummary([])).toBeUndefined();
    expect(
      notRunSummary([
        { name: "a", status: "ok" },
        { name: "b", status: "skipped", reason: "setup threw" },
        { name: "memory/x", status: "partial", reason: "isochain: gone" },
        { name: "c", status: "failed" },
      ]),
    ).toBe("3 did not run: b (skipped: setup threw); memory/x (partial: isochain: gone); c (failed: no reason)");
  });

  it("covers every hot path the suite promises, each with its isochain figure and its baselines (--list)", async () => {
    const run = promisify(execFile);
    const { stdout } = await run(process.execPath, ["--no-node-snapshot", "benchmarks/run.ts", "--list"]);
    const names = new Set(stdout.split(/[\s(]+/)); // a long name runs into its description's "("
    const expected = [
      "isochain/acquire-cold", "isochain/acquire-pooled", "raw-ivm/acquire-pooled",
      "isochain/compile-miss", "isochain/compile-hit", "esbuild/transform",
      ...["one-call", "sequential-50", "parallel-50"].flatMap((path) =>
        ["node-vm", "raw-ivm", "child-process", "child-process-idle", "isochain", "isochain-sync-drive", "isochain-no-spin", "isochain-process"].map((runner) => `${runner}/${path}`),
      ),
      "raw-ivm-fresh-context/one-call",
      "isochain/per-sequential-call", "isochain-sync-drive/per-sequential-call", "isochain-process/per-sequential-call", "isochain/one-call-50-tools", "isochain/one-call-traced", "isochain/one-call-traced-50-tools",
      "raw-ivm/one-call-new-script", "isochain/one-call-new-script", "isochain-process/one-call-new-script",
      "isochain/result-1mib", "isochain-process/result-1mib", "isochain-process/result-1mib-inline", "raw-ivm/result-1mib",
      "isochain/primes-200k", "raw-ivm/primes-200k", "isochain/invoker-call", "direct/await-call",
      "isochain/sustained-c2", "isochain/sustained-c8", "isochain-process/sustained-c2", "isochain-process/sustained-c8", "raw-ivm/sustained-c2",
      "memory/pool-4-idle", "memory/soak",
    ];
    expect(expected.filter((name) => !names.has(name))).toEqual([]);
  });

  it("computes median and p99 by nearest rank, per op", () => {
    const samples = Array.from({ length: 200 }, (_, i) => (i + 1) * 10); // 10 .. 2000
    expect(computeStats(samples)).toMatchObject({ samples: 200, medianNs: 1000, p99Ns: 1980, minNs: 10 });
    expect(computeStats(samples, 10)).toMatchObject({ medianNs: 100, p99Ns: 198 });
    expect(computeStats([])).toBeUndefined();
  });

  it("prints median, p99 and ratio in a table and writes the same figures as JSON", async () => {
    const run = promisify(execFile);
    const dir = await mkdtemp(join(tmpdir(), "isochain-bench-"));
    try {
      const json = join(dir, "run.json");
      const { stdout } = await run(process.execPath, ["--no-node-snapshot", "benchmarks/run.ts", "--quick", "--filter", "invoker", "--json", json], {
        timeout: 60_000,
      });
      expect(stdout).toMatch(/scenario\s+median\s+p99\s+n\s+vs baseline/);
      expect(stdout).toMatch(/isochain\/invoker-call\s+\S+ [µn]s\s+\S+ [µn]s\s+\d+\s+[\d.]+× direct\/await-call/);
      const written = JSON.parse(await readFile(json, "utf8")) as { figures: { name: string; baseline?: string; ratio?: number; stats?: { medianNs: number; p99Ns: number } }[] };
      const invoker = written.figures.find((figure) => figure.name === "isochain/invoker-call");
      expect(invoker).toMatchObject({ baseline: "direct/await-call" });
      expect(invoker?.stats?.p99Ns).toBeGreaterThanOrEqual(invoker?.stats?.medianNs ?? Number.POSITIVE_INFINITY);
      expect(invoker?.ratio).toBeGreaterThan(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it("exits 1 for options it does not know, naming --fail-on-error in its usage", async () => {
    const run = promisify(execFile);
    const failure = await run(process.execPath, ["--no-node-snapshot", "benchmarks/run.ts", "--bogus"]).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr).toContain("--fail-on-error");
  });
});
