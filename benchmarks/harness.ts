/**
 * The benchmark harness: tinybench measures, this module interleaves.
 *
 * A benchmark library alone (tinybench, mitata) measures one benchmark to completion, then the
 * next. On a noisy 2-core machine a figure and its baseline measured a minute apart drift apart
 * for reasons that have nothing to do with the code (thermal state, a neighbour, GC debt left by
 * the previous benchmark, a pool refilling in the background). So every scenario of a group is
 * set up first, then the group runs in rounds; each round gives every scenario one time-boxed
 * batch, starting from a rotating position, so a figure and its baseline see the same
 * conditions:
 *
 *   setup all ─▶ warm-up rounds (discarded) ─▶ rounds: [A batch][B batch][C batch] [B][C][A] ... ─▶ teardown all
 *
 * Inside a batch, tinybench times each iteration alone (`process.hrtime.bigint()`, no warm-up
 * of its own: the harness has its rounds); an optional untimed `between()` hook runs after each
 * iteration as tinybench's `afterEach` (e.g. "let the pool refill", for warm-latency figures).
 * Figures are medians with p99 and mean beside them; a ratio is median / median of the named
 * baseline, measured in the same rounds.
 *
 * Robustness: a scenario whose `setup` throws or times out is SKIPPED (the reason is printed);
 * one whose `run` throws or hangs past the iteration timeout is FAILED and dropped from the
 * remaining rounds. The suite itself always finishes.
 * @module
 */

import { Bench } from "tinybench";

/** A figure's goal: a time ceiling per op, a rate floor, or a size ceiling. */
export interface Target {
  /** As printed, e.g. `"<= 0.25 ms"`. */
  readonly label: string;
  /** Met when the median time per op is at most this, ns. */
  readonly maxNs?: number;
  /** Met when the median rate is at least this, ops/s. */
  readonly minPerSecond?: number;
  /** Met when the measured size is at most this, bytes (probes). */
  readonly maxBytes?: number;
  /** Met when the median is at most this multiple of the baseline's median, measured in the same run. */
  readonly maxRatio?: number;
}

/** One timed hot path. */
export interface Scenario {
  /** Unique, `runner/path`, e.g. `"isochain/one-call"`. */
  readonly name: string;
  /** Scenarios of a group are interleaved and may name each other as baseline. */
  readonly group: string;
  /** Name of the scenario this one's ratio is computed against. */
  readonly baseline?: string;
  /** One line for the README and `--list`. */
  readonly description?: string;
  /** Operations one `run()` performs; figures are per op. @defaultValue 1 */
  readonly opsPerRun?: number;
  /** Print the figure as time per op or as ops per second. @defaultValue "time" */
  readonly report?: "time" | "rate";
  readonly target?: Target;
  /** Prepares state (may throw: the scenario is then skipped with the error as reason). */
  setup?(): Promise<void> | void;
  /** One timed iteration. */
  run(): Promise<unknown> | unknown;
  /** Untimed, after each iteration. */
  between?(): Promise<unknown> | unknown;
  teardown?(): Promise<void> | void;
}

/** A figure computed from other scenarios' medians (e.g. per-call cost from two chain figures). */
export interface DerivedFigure {
  readonly name: string;
  readonly group: string;
  readonly baseline?: string;
  readonly description?: string;
  readonly target?: Target;
  /** The figure, ns per op, or `undefined` when an input is missing. */
  compute(median: (scenario: string) => number | undefined): number | undefined;
}

/** One figure of a probe (memory, soak): a size in bytes or a count. */
export interface ProbeFigure {
  readonly name: string;
  readonly value: number;
  readonly unit: "bytes" | "count";
  /** The same figure for the probe's baseline, when it has one. */
  readonly baselineValue?: number;
  readonly target?: Target;
  readonly note?: string;
  /** The probe's subject (one half of it) could not be measured; `note` says why. Makes the probe `partial`. */
  readonly skipped?: boolean;
}

/** A measurement that is not a timing loop (runs after the timing groups). */
export interface Probe {
  readonly name: string;
  readonly description?: string;
  /** Runs only with `--soak`. */
  readonly soak: boolean;
  /** Runs in `--quick` too. @defaultValue true */
  readonly quick?: boolean;
  measure(options: { readonly quick: boolean }): Promise<readonly ProbeFigure[]>;
}

/** What a bench file exports. */
export interface BenchFile {
  readonly scenarios?: readonly Scenario[];
  readonly derived?: readonly DerivedFigure[];
  readonly probes?: readonly Probe[];
}

/** Sampling settings. */
export interface SamplerSettings {
  readonly warmupRounds: number;
  readonly rounds: number;
  /** Time box of one batch, ms (at least one iteration always runs). */
  readonly batchMs: number;
  readonly maxBatchIterations: number;
  readonly setupTimeoutMs: number;
  /** A batch (one iteration past its time box) taking longer than this fails its scenario. */
  readonly iterationTimeoutMs: number;
}

/** Full runs: ~12 measured rounds of 60 ms batches. */
export const FULL_SETTINGS: SamplerSettings = {
  warmupRounds: 2,
  rounds: 12,
  batchMs: 60,
  maxBatchIterations: 5_000,
  setupTimeoutMs: 30_000,
  iterationTimeoutMs: 15_000,
};

/** `--quick`: a smoke run, figures indicative only. */
export const QUICK_SETTINGS: SamplerSettings = {
  warmupRounds: 1,
  rounds: 3,
  batchMs: 20,
  maxBatchIterations: 1_000,
  setupTimeoutMs: 10_000,
  iterationTimeoutMs: 5_000,
};

/** Summary statistics of one scenario, ns per op. */
export interface Stats {
  readonly samples: number;
  readonly medianNs: number;
  readonly p99Ns: number;
  readonly meanNs: number;
  readonly minNs: number;
}

/** The outcome of one scenario or derived figure. */
export interface FigureResult {
  readonly name: string;
  readonly group: string;
  readonly kind: "scenario" | "derived";
  readonly status: "ok" | "skipped" | "failed";
  readonly reason?: string;
  readonly report: "time" | "rate";
  readonly stats?: Stats;
  readonly baseline?: string;
  /** median / baseline median (time per op). */
  readonly ratio?: number;
  readonly target?: Target;
  readonly met?: boolean;
}

/** The outcome of one probe. */
export interface ProbeResult {
  readonly name: string;
  /** `partial`: some figures are in, but part of the probe could not run (see `reason`). */
  readonly status: "ok" | "partial" | "failed";
  readonly reason?: string;
  readonly figures: readonly (ProbeFigure & { readonly met?: boolean })[];
}

/** Computes median (nearest-rank p50), p99, mean and min of per-iteration times. */
export function computeStats(samplesNs: readonly number[], opsPerRun = 1): Stats | undefined {
  if (samplesNs.length === 0) return undefined;
  const sorted = [...samplesNs].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
  const sum = sorted.reduce((total, x) => total + x, 0);
  return {
    samples: sorted.length,
    medianNs: rank(0.5) / opsPerRun,
    p99Ns: rank(0.99) / opsPerRun,
    meanNs: sum / sorted.length / opsPerRun,
    minNs: (sorted[0] ?? 0) / opsPerRun,
  };
}

/** Whether `value` (ns per op, or bytes for probes) meets `target`. */
export function meetsTarget(target: Target, figure: { readonly ns?: number; readonly bytes?: number; readonly ratio?: number }): boolean | undefined {
  if (target.maxRatio !== undefined) return figure.ratio === undefined ? undefined : figure.ratio <= target.maxRatio;
  if (target.maxNs !== undefined && figure.ns !== undefined) return figure.ns <= target.maxNs;
  if (target.minPerSecond !== undefined && figure.ns !== undefined) return 1e9 / figure.ns >= target.minPerSecond;
  if (target.maxBytes !== undefined && figure.bytes !== undefined) return figure.bytes <= target.maxBytes;
  return undefined;
}

interface State {
  readonly scenario: Scenario;
  readonly samples: number[];
  status: "ok" | "skipped" | "failed";
  reason?: string;
  /** Whether `run()` returns a thenable (found by the scenario's first, untimed iteration). */
  async?: boolean;
  /** Wall time of one iteration with its `between()`, ns, as last measured. */
  wallNsPerIteration?: number;
}

/** Options of {@link runGroup}. */
export interface RunGroupOptions {
  readonly settings: SamplerSettings;
  /** Progress lines (stderr by default). */
  readonly log?: (line: string) => void;
}

/** Runs one group of scenarios interleaved; see the module comment. Never throws. */
export async function runGroup(scenarios: readonly Scenario[], options: RunGroupOptions): Promise<FigureResult[]> {
  const { settings } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const states: State[] = scenarios.map((scenario) => ({ scenario, samples: [], status: "ok" }));

  for (const state of states) {
    const outcome = await withTimeout(async () => state.scenario.setup?.(), settings.setupTimeoutMs, "setup");
    if (outcome !== undefined) {
      state.status = "skipped";
      state.reason = outcome;
      log(`  ${state.scenario.name}: skipped: ${outcome}`);
    }
  }

  const totalRounds = settings.warmupRounds + settings.rounds;
  for (let round = 0; round < totalRounds; round++) {
    const live = states.filter((s) => s.status === "ok");
    if (live.length === 0) break;
    const record = round >= settings.warmupRounds;
    for (let i = 0; i < live.length; i++) {
      const state = live[(i + round) % live.length];
      if (state === undefined || state.status !== "ok") continue;
      const failure = await runBatch(state, settings, record);
      if (failure !== undefined) {
        state.status = "failed";
        state.reason = failure;
        log(`  ${state.scenario.name}: failed: ${failure}`);
      }
    }
  }

  // Every scenario is torn down, skipped ones included: teardown must cope with a partial setup.
  for (const state of states) {
    const outcome = await withTimeout(async () => state.scenario.teardown?.(), settings.setupTimeoutMs, "teardown");
    if (outcome !== undefined) log(`  ${state.scenario.name}: teardown: ${outcome}`);
  }

  const medians = new Map<string, number>();
  const results = states.map((state): FigureResult => {
    const { scenario } = state;
    const stats = state.status === "ok" ? computeStats(state.samples, scenario.opsPerRun ?? 1) : undefined;
    if (stats !== undefined) medians.set(scenario.name, stats.medianNs);
    return {
      name: scenario.name,
      group: scenario.group,
      kind: "scenario",
      status: stats === undefined && state.status === "ok" ? "failed" : state.status,
      ...(state.reason === undefined ? {} : { reason: state.reason }),
      ...(stats === undefined && state.status === "ok" ? { reason: "no samples" } : {}),
      report: scenario.report ?? "time",
      ...(stats === undefined ? {} : { stats }),
      ...(scenario.baseline === undefined ? {} : { baseline: scenario.baseline }),
      ...(scenario.target === undefined ? {} : { target: scenario.target }),
    };
  });
  return results.map((result) => withRatioAndTarget(result, medians));
}

/** Computes derived figures from the scenarios' results (all groups). */
export function computeDerived(derived: readonly DerivedFigure[], results: readonly FigureResult[]): FigureResult[] {
  const medians = new Map<string, number>();
  for (const r of results) if (r.stats !== undefined) medians.set(r.name, r.stats.medianNs);
  const out: FigureResult[] = [];
  for (const figure of derived) {
    const value = figure.compute((name) => medians.get(name));
    const base: FigureResult = {
      name: figure.name,
      group: figure.group,
      kind: "derived",
      status: value === undefined ? "skipped" : "ok",
      ...(value === undefined ? { reason: "an input figure is missing" } : {}),
      report: "time",
      ...(value === undefined ? {} : { stats: { samples: 0, medianNs: value, p99Ns: Number.NaN, meanNs: Number.NaN, minNs: Number.NaN } }),
      ...(figure.baseline === undefined ? {} : { baseline: figure.baseline }),
      ...(figure.target === undefined ? {} : { target: figure.target }),
    };
    if (value !== undefined) medians.set(figure.name, value);
    out.push(base);
  }
  return out.map((result) => withRatioAndTarget(result, medians));
}

function withRatioAndTarget(result: FigureResult, medians: ReadonlyMap<string, number>): FigureResult {
  if (result.stats === undefined) return result;
  const baseMedian = result.baseline === undefined ? undefined : medians.get(result.baseline);
  const ratio = baseMedian === undefined || baseMedian <= 0 ? undefined : result.stats.medianNs / baseMedian;
  const met = result.target === undefined ? undefined : meetsTarget(result.target, { ns: result.stats.medianNs, ...(ratio === undefined ? {} : { ratio }) });
  return { ...result, ...(ratio === undefined ? {} : { ratio }), ...(met === undefined ? {} : { met }) };
}

/** Iterations of a scenario's first tinybench run, before its wall time per iteration is known. */
const PROBE_ITERATIONS = 8;

/**
 * One batch of a scenario: tinybench measures, in runs of a set number of iterations, until the
 * batch's wall-time box is used up. tinybench's own budget (`time`) counts timed time only, so
 * the count of each run comes from the scenario's wall time per iteration (untimed `between()`
 * included), learnt from the first, short run. A scenario's first batch starts with one untimed
 * iteration that tells a sync `run` from an async one (tinybench would otherwise probe by
 * calling `run` itself, with no `between()` after it).
 */
async function runBatch(state: State, settings: SamplerSettings, record: boolean): Promise<string | undefined> {
  const abort = new AbortController();
  const { scenario, samples } = state;
  const budgetNs = settings.batchMs * 1e6;
  const batch = async (): Promise<void> => {
    const start = process.hrtime.bigint();
    if (state.async === undefined) {
      const value = scenario.run();
      state.async = isThenable(value);
      if (state.async) await value;
      await scenario.between?.();
    }
    let iterations = 0;
    while (iterations < settings.maxBatchIterations) {
      const spentNs = Number(process.hrtime.bigint() - start);
      if (iterations > 0 && spentNs >= budgetNs) return;
      const left = settings.maxBatchIterations - iterations;
      const perIteration = state.wallNsPerIteration;
      const count = perIteration === undefined ? Math.min(left, PROBE_ITERATIONS) : Math.max(1, Math.min(left, Math.floor((budgetNs - spentNs) / perIteration)));
      const runStart = process.hrtime.bigint();
      const measured = await measureIterations(scenario, count, state.async, abort.signal);
      if (abort.signal.aborted) return;
      if (measured.length === 0) throw new Error("tinybench took no sample");
      state.wallNsPerIteration = Number(process.hrtime.bigint() - runStart) / Math.max(1, measured.length);
      if (record) for (const ns of measured) samples.push(ns);
      iterations += measured.length;
    }
  };
  const outcome = await withTimeout(batch, settings.batchMs + settings.iterationTimeoutMs, "iteration");
  if (outcome !== undefined) abort.abort();
  return outcome;
}

/**
 * `count` iterations of `scenario`, each timed alone by tinybench (no warm-up: the harness has
 * its own rounds), with `between()` after each as tinybench's untimed `afterEach`. Resolves with
 * the per-iteration times, ns; rejects with what an iteration threw.
 */
async function measureIterations(scenario: Scenario, count: number, async: boolean, signal: AbortSignal): Promise<number[]> {
  const bench = new Bench({ iterations: count, time: 0, warmup: false, retainSamples: true, throws: true, signal });
  const between = scenario.between;
  bench.add(scenario.name, () => scenario.run(), {
    async,
    ...(between === undefined ? {} : { afterEach: async () => void (await between()) }),
  });
  await bench.run();
  const result = bench.tasks[0]?.result;
  const latency = result !== undefined && "latency" in result ? result.latency : undefined;
  // tinybench's samples are in ms.
  return (latency?.samples ?? []).map((ms) => ms * 1e6);
}

/** Runs `fn`; resolves `undefined` when it settles in time, else a reason. */
async function withTimeout(fn: () => Promise<unknown>, ms: number, what: string): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`${what} timed out after ${ms} ms`), ms);
  });
  try {
    return await Promise.race([
      fn().then(
        () => undefined,
        (error: unknown) => describe(error),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `filter` selects the figure `name` of `group`; see `--filter` in run.ts. */
export function filterMatches(filter: string, name: string, group: string): boolean {
  if (filter.includes("/")) return name.includes(filter);
  const slash = name.indexOf("/");
  const runner = slash === -1 ? name : name.slice(0, slash);
  const path = slash === -1 ? name : name.slice(slash + 1);
  return group === filter || runner === filter || path.includes(filter);
}

/** A probe's result from its figures: targets marked, `partial` when a figure is a skipped half. */
export function probeResult(name: string, figures: readonly ProbeFigure[]): ProbeResult {
  const skipped = figures.filter((f) => f.skipped === true);
  const marked = figures.map((f) => {
    const met = f.target === undefined || f.skipped === true ? undefined : meetsTarget(f.target, { bytes: f.value });
    return met === undefined ? f : { ...f, met };
  });
  if (skipped.length === 0) return { name, status: "ok", figures: marked };
  return { name, status: "partial", reason: skipped.map((f) => `${f.name}: ${f.note ?? "no reason"}`).join("; "), figures: marked };
}

/**
 * One line naming every scenario or probe that did not run in full (skipped, failed, partial),
 * for `--fail-on-error`; `undefined` when everything ran.
 */
export function notRunSummary(results: readonly { readonly name: string; readonly status: string; readonly reason?: string }[]): string | undefined {
  const broken = results.filter((r) => r.status !== "ok");
  if (broken.length === 0) return undefined;
  return `${broken.length} did not run: ${broken.map((r) => `${r.name} (${r.status}: ${r.reason ?? "no reason"})`).join("; ")}`;
}

/** One line describing a thrown value. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const first = error.message.split("\n")[0] ?? "";
    return typeof code === "string" ? `${code}: ${first}` : first;
  }
  return String(error);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Formats ns per op: `812 ns`, `12.3 µs`, `1.23 ms`, `2.10 s`. */
export function formatTime(ns: number): string {
  if (!Number.isFinite(ns)) return "—";
  if (ns < 1e3) return `${ns.toFixed(0)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(ns < 1e4 ? 2 : 1)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e7 ? 3 : 2)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

/** Formats a rate from ns per op: `1 923 /s`. */
export function formatRate(nsPerOp: number): string {
  if (!Number.isFinite(nsPerOp) || nsPerOp <= 0) return "—";
  return `${Math.round(1e9 / nsPerOp).toLocaleString("en-US").replaceAll(",", " ")} /s`;
}

/** Formats bytes as MiB with one decimal. */
export function formatBytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
