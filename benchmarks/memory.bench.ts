/**
 * Memory probes, each in a fresh child process (see probes/memory-probe.ts), isochain beside the
 * raw isolated-vm runner:
 * - `memory/pool-4-idle`: the RSS 4 idle warm sandboxes add to a process that has the runtime
 *   loaded (target <= 100 MB, read as MiB), the whole process's RSS beside it (which also holds
 *   Node itself and, when running .ts files, its type stripper), the used heap of one pooled
 *   isolate, and the peak RSS.
 * - `memory/soak` (only with `--soak`): RSS before and after 10 000 one-call chains in one
 *   process (target: growth <= 20 MB; 1 000 chains with `--quick`).
 * @module
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { BenchFile, Probe, ProbeFigure } from "./harness.ts";

const PROBE = fileURLToPath(new URL("./probes/memory-probe.ts", import.meta.url));
const MB = 1024 * 1024;

/** Runs the probe child; resolves its JSON figures, or `{ error }`. */
function probe(args: readonly string[], timeoutMs: number): Promise<Record<string, number> & { error?: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--expose-gc", PROBE, ...args], { timeout: timeoutMs, maxBuffer: 1024 * 1024 }, (error, stdout) => {
      const line = stdout.trim().split("\n").at(-1) ?? "";
      try {
        resolve(JSON.parse(line) as Record<string, number> & { error?: string });
      } catch {
        resolve({ error: error?.message.split("\n")[0] ?? `no output from ${args.join(" ")}` } as Record<string, number> & { error: string });
      }
    });
  });
}

function figure(name: string, value: number | undefined, baselineValue: number | undefined, extra: Partial<ProbeFigure> = {}): ProbeFigure[] {
  if (value === undefined || !Number.isFinite(value)) return [];
  return [{ name, value, unit: "bytes", ...(baselineValue === undefined ? {} : { baselineValue }), ...extra }];
}

const pool: Probe = {
  name: "memory/pool-4-idle",
  description: "RSS with 4 warm sandboxes idle; heap per pooled isolate; peak RSS",
  soak: false,
  async measure() {
    const raw = await probe(["raw-ivm", "pool"], 60_000);
    const iso = await probe(["isochain", "pool"], 60_000);
    if (raw.error !== undefined && iso.error !== undefined) throw new Error(`raw-ivm: ${raw.error}; isochain: ${iso.error}`);
    const figures: ProbeFigure[] = [];
    const subject = iso.error === undefined ? "isochain" : "raw-ivm";
    const main = iso.error === undefined ? iso : raw;
    const base = iso.error === undefined && raw.error === undefined ? raw : undefined;
    figures.push(
      ...figure(`${subject}: RSS of 4 idle sandboxes`, main.poolDelta, base?.poolDelta, subject === "isochain" ? { target: { label: "<= 100 MiB", maxBytes: 100 * MB } } : {}),
      ...figure(`${subject}: RSS per pooled isolate`, main.perIsolate, base?.perIsolate),
      ...figure(`${subject}: process RSS, runtime loaded`, main.rssBefore, base?.rssBefore),
      ...figure(`${subject}: process RSS, 4 idle`, main.rssIdle, base?.rssIdle),
      ...figure(`${subject}: heap per pooled isolate`, main.heapPerIsolate, base?.heapPerIsolate),
      ...figure(`${subject}: peak RSS`, main.peakRss, base?.peakRss),
    );
    if (iso.error !== undefined) figures.push({ name: "isochain", value: Number.NaN, unit: "count", note: iso.error, skipped: true });
    return figures;
  },
};

const soak: Probe = {
  name: "memory/soak",
  description: "RSS growth over 10 000 one-call chains in one process",
  soak: true,
  async measure({ quick }) {
    const chains = String(quick ? 1_000 : 10_000);
    const raw = await probe(["raw-ivm", "soak", chains], 600_000);
    const iso = await probe(["isochain", "soak", chains], 600_000);
    if (raw.error !== undefined && iso.error !== undefined) throw new Error(`raw-ivm: ${raw.error}; isochain: ${iso.error}`);
    const subject = iso.error === undefined ? "isochain" : "raw-ivm";
    const main = iso.error === undefined ? iso : raw;
    const base = iso.error === undefined && raw.error === undefined ? raw : undefined;
    const figures: ProbeFigure[] = [
      ...figure(`${subject}: RSS growth, ${chains} chains`, main.rssGrowth, base?.rssGrowth, subject === "isochain" ? { target: { label: "<= 20 MiB", maxBytes: 20 * MB } } : {}),
      ...figure(`${subject}: RSS growth, second half only`, main.secondHalfGrowth, base?.secondHalfGrowth),
      ...figure(`${subject}: RSS before`, main.rssBefore, base?.rssBefore),
      ...figure(`${subject}: RSS after`, main.rssAfter, base?.rssAfter),
      ...figure(`${subject}: host heap growth`, main.hostHeapGrowth, base?.hostHeapGrowth),
      ...figure(`${subject}: peak RSS`, main.peakRss, base?.peakRss),
    ];
    if (main.seconds !== undefined) figures.push({ name: `${subject}: chains/s over the soak`, value: Number(chains) / main.seconds, unit: "count" });
    if (iso.error !== undefined) figures.push({ name: "isochain", value: Number.NaN, unit: "count", note: iso.error, skipped: true });
    return figures;
  },
};

export default { probes: [pool, soak] } satisfies BenchFile;
