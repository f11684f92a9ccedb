/**
 * A memory measurement in a process of its own (so earlier benchmarks leave no garbage in the
 * figures). Run by memory.bench.ts as
 *
 *   node --expose-gc benchmarks/probes/memory-probe.ts <isochain|raw-ivm> pool
 *   node --expose-gc benchmarks/probes/memory-probe.ts <isochain|raw-ivm> soak <chains>
 *
 * and prints one JSON line on stdout. `pool`: RSS after one chain ran on a pool of one (closed
 * again: modules, JIT and compiler warm), then with 4 warm sandboxes idle, plus the used heap
 * of one pooled isolate after a no-op run and the process's peak RSS. `soak`: RSS after 200 warm-up chains and after `<chains>` more
 * one-call chains (2 concurrent callers), and halfway through, each after a full GC and a short
 * settle (growth in the second half tells a leak from a heap settling to its working size).
 * Exit code 2 with `{ "error": ... }` when the subject cannot be built.
 * @module
 */
import { setTimeout as sleep } from "node:timers/promises";
import { RawIsolatedVmRunner } from "../baselines/raw-isolated-vm-runner.ts";
import { BASELINE_TOOLS, SCRIPTS } from "../support/fixtures.ts";
import { checkRun, createChain, preloadRuntime } from "../support/isochain.ts";

const POOL = 4;
const [subject = "", mode = "", countText = "10000"] = process.argv.slice(2);

async function settle(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    gc?.();
    await sleep(50);
  }
  return process.memoryUsage.rss();
}

interface Subject {
  readonly runOne: () => Promise<unknown>;
  readonly heapOfOneIsolate: () => Promise<number>;
  readonly close: () => Promise<void>;
}

async function open(poolSize: number): Promise<Subject> {
  if (subject === "raw-ivm") {
    const runner = new RawIsolatedVmRunner({ poolSize });
    await runner.warm();
    return {
      runOne: () => runner.run(SCRIPTS.oneCall, BASELINE_TOOLS),
      heapOfOneIsolate: async () => {
        await runner.run(SCRIPTS.noop, BASELINE_TOOLS);
        await runner.warm();
        const stats = runner.heapStatistics();
        return stats.reduce((sum, s) => sum + s.used_heap_size, 0) / Math.max(1, stats.length);
      },
      close: async () => runner.close(),
    };
  }
  if (subject === "isochain") {
    const chain = await createChain({ poolSize });
    await checkRun(chain, SCRIPTS.oneCall, "ok");
    await chain.warm();
    return {
      runOne: async () => {
        const run = await chain.run(SCRIPTS.oneCall);
        if (run.status !== "ok") throw new Error(`chain ended ${run.status}: ${run.error?.message ?? ""}`);
      },
      heapOfOneIsolate: async () => {
        const run = await chain.run(SCRIPTS.noop);
        await chain.warm();
        return run.stats?.heapBytes ?? Number.NaN;
      },
      close: () => chain.close(),
    };
  }
  throw new Error(`unknown subject ${subject}`);
}

async function pool(): Promise<Record<string, number>> {
  // One-time costs first (modules, JIT, the compiler, schema validators): one chain on a pool of
  // one, closed again, so "before" holds everything but the pooled isolates.
  if (subject === "isochain") await preloadRuntime();
  const first = await open(1);
  await first.runOne();
  await first.close();
  const rssBefore = await settle();
  const s = await open(POOL);
  const heapPerIsolate = await s.heapOfOneIsolate();
  const rssIdle = await settle();
  const peakRss = process.resourceUsage().maxRSS * 1024;
  await s.close();
  return { rssBefore, rssIdle, poolDelta: rssIdle - rssBefore, perIsolate: (rssIdle - rssBefore) / POOL, heapPerIsolate, peakRss };
}

async function soak(chains: number): Promise<Record<string, number>> {
  const s = await open(2);
  const runMany = async (n: number): Promise<void> => {
    let started = 0;
    const caller = async (): Promise<void> => {
      while (started < n) {
        started++;
        await s.runOne();
      }
    };
    await Promise.all([caller(), caller()]);
  };
  await runMany(200);
  const rssBefore = await settle();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  await runMany(Math.floor(chains / 2));
  let seconds = (performance.now() - t0) / 1000;
  const rssMid = await settle();
  const t1 = performance.now();
  await runMany(chains - Math.floor(chains / 2));
  seconds += (performance.now() - t1) / 1000;
  const rssAfter = await settle();
  const heapAfter = process.memoryUsage().heapUsed;
  const peakRss = process.resourceUsage().maxRSS * 1024;
  await s.close();
  return { chains, seconds, rssBefore, rssMid, rssAfter, rssGrowth: rssAfter - rssBefore, secondHalfGrowth: rssAfter - rssMid, hostHeapGrowth: heapAfter - heapBefore, peakRss };
}

try {
  const result = mode === "pool" ? await pool() : mode === "soak" ? await soak(Number(countText)) : undefined;
  if (result === undefined) throw new Error(`unknown mode ${mode}`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: error instanceof Error ? error.message : String(error) })}\n`);
  process.exit(2);
}
