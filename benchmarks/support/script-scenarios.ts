/**
 * Scenario builders for "run this script" figures, one per runner, so each bench file states
 * only what differs (script, expected value, baseline, target). Every builder checks the first
 * run's value in `setup`: a runner that answers wrongly is skipped, never timed.
 *
 * Warm latency vs. sustained load: with `warm: true` (the default) the scenario awaits the
 * runner's `warm()` after each timed iteration, untimed, so every iteration starts from a warm
 * pool (a prepared context waiting), which is what a chain sees when chains arrive with gaps.
 * The throughput scenarios run back to back instead and pay for refilling.
 * @module
 */
import { NodeVmRunner } from "../baselines/node-vm-runner.ts";
import { RawIsolatedVmRunner } from "../baselines/raw-isolated-vm-runner.ts";
import type { Scenario, Target } from "../harness.ts";
import { BASELINE_TOOLS } from "./fixtures.ts";
import { type ChainLike, checkRun, createChain, type CreateChainOptions } from "./isochain.ts";

/** What a script scenario states. */
export interface ScriptScenarioOptions {
  readonly name: string;
  readonly group: string;
  readonly script: string;
  /** The script's value on this runner (checked once in setup). */
  readonly expected: unknown;
  readonly baseline?: string;
  readonly target?: Target;
  readonly description?: string;
  /** Await the runner's `warm()` between iterations (untimed). @defaultValue true */
  readonly warm?: boolean;
  /** The isochain sandbox driver ({@link isochainScenario} only; see `CreateChainOptions.driver`). @defaultValue `"in-process"` */
  readonly driver?: "in-process" | "in-process-no-spin" | "process" | "sync-drive";
  /** Tools beyond `echo` and `big` in the chain's toolbox ({@link isochainScenario} only). @defaultValue 0 */
  readonly extraTools?: number;
  /** Trace every chain into a `MemoryTraceStore` ({@link isochainScenario} only). @defaultValue false */
  readonly traced?: boolean;
  /** Keep results up to 2 MiB inline instead of offloading them ({@link isochainScenario} only). @defaultValue false */
  readonly inlineResults?: boolean;
  /**
   * A new script text every iteration (the script with a numbered comment line after it), as a
   * model writes a new script for each chain: nothing compiled is reused
   * ({@link rawIvmScenario} and {@link isochainScenario}). @defaultValue false
   */
  readonly freshScript?: boolean;
  /**
   * Prepare each run's context ahead, off the critical path ({@link rawIvmScenario} only). With
   * `false` every run creates its context first: the raw runner as the for-scale figure
   * describes it ("a fresh context per run"). @defaultValue true
   */
  readonly prepareAhead?: boolean;
}

/** The script of each iteration: the same text, or a new one per call with `freshScript`. */
function scriptSource(options: ScriptScenarioOptions): () => string {
  if (options.freshScript !== true) return () => options.script;
  // The scenario's name in the text too: runners of one process share the host's compile cache.
  let n = 0;
  return () => `${options.script}\n// ${options.name} iteration ${n++}`;
}

function common(options: ScriptScenarioOptions): Pick<Scenario, "name" | "group" | "baseline" | "target" | "description"> {
  return {
    name: options.name,
    group: options.group,
    ...(options.baseline === undefined ? {} : { baseline: options.baseline }),
    ...(options.target === undefined ? {} : { target: options.target }),
    ...(options.description === undefined ? {} : { description: options.description }),
  };
}

function expectValue(value: unknown, expected: unknown): void {
  if (value !== expected) throw new Error(`first run returned ${JSON.stringify(value)}, expected ${JSON.stringify(expected)}`);
}

/** The script on {@link NodeVmRunner} (no isolation). */
export function nodeVmScenario(options: ScriptScenarioOptions): Scenario {
  let runner: NodeVmRunner | undefined;
  return {
    ...common(options),
    async setup() {
      runner = new NodeVmRunner();
      expectValue(await runner.run(options.script, BASELINE_TOOLS), options.expected);
    },
    run: () => runner?.run(options.script, BASELINE_TOOLS),
  };
}

/** The script on {@link RawIsolatedVmRunner} (pool of 2, fresh context per run). */
export function rawIvmScenario(options: ScriptScenarioOptions): Scenario {
  let runner: RawIsolatedVmRunner | undefined;
  const next = scriptSource(options);
  return {
    ...common(options),
    async setup() {
      runner = new RawIsolatedVmRunner({ poolSize: 2, prepareAhead: options.prepareAhead ?? true });
      await runner.warm();
      expectValue(await runner.run(next(), BASELINE_TOOLS), options.expected);
    },
    run: () => runner?.run(next(), BASELINE_TOOLS),
    ...(options.warm === false ? {} : { between: () => runner?.warm() }),
    teardown() {
      runner?.close();
    },
  };
}

/** The script as a whole isochain chain (`ToolChainTool.run`, in-process driver, warmed). */
export function isochainScenario(options: ScriptScenarioOptions): Scenario {
  let chain: ChainLike | undefined;
  const next = scriptSource(options);
  return {
    ...common(options),
    async setup() {
      chain = await createChain({
        ...(options.driver === undefined ? {} : { driver: options.driver }),
        ...(options.inlineResults === true ? { maxInlineResultBytes: 2 * 1024 * 1024 } : {}),
        ...(options.extraTools === undefined ? {} : { extraTools: options.extraTools }),
        ...(options.traced === true ? { traced: true } : {}),
      });
      await checkRun(chain, next(), options.expected);
    },
    run: async () => {
      const run = await chain?.run(next());
      if (run !== undefined && run.status !== "ok") throw new Error(`chain ended ${run.status}: ${run.error?.message ?? ""}`);
    },
    ...(options.warm === false ? {} : { between: () => chain?.warm() }),
    async teardown() {
      await chain?.close();
    },
  };
}

/** Options of {@link concurrentScenario}. */
export interface ConcurrentOptions {
  readonly name: string;
  readonly group: string;
  readonly baseline?: string;
  readonly target?: Target;
  readonly description?: string;
  /** Callers running at once. */
  readonly concurrency: number;
  /** Chains per timed iteration (shared by the callers). */
  readonly chainsPerRun: number;
  /** Builds the runner; returns one-chain and close functions. */
  open(): Promise<{ readonly runOne: () => Promise<unknown>; readonly close: () => Promise<void> | void }>;
}

/** Sustained throughput: `concurrency` callers run one-call chains back to back. */
export function concurrentScenario(options: ConcurrentOptions): Scenario {
  let handle: Awaited<ReturnType<ConcurrentOptions["open"]>> | undefined;
  const { concurrency, chainsPerRun } = options;
  return {
    name: options.name,
    group: options.group,
    ...(options.baseline === undefined ? {} : { baseline: options.baseline }),
    ...(options.target === undefined ? {} : { target: options.target }),
    ...(options.description === undefined ? {} : { description: options.description }),
    opsPerRun: chainsPerRun,
    report: "rate",
    async setup() {
      handle = await options.open();
    },
    async run() {
      const runOne = handle?.runOne;
      if (runOne === undefined) return;
      let started = 0;
      const caller = async (): Promise<void> => {
        while (started < chainsPerRun) {
          started++;
          await runOne();
        }
      };
      await Promise.all(Array.from({ length: concurrency }, caller));
    },
    async teardown() {
      await handle?.close();
    },
  };
}

/** Opens a warmed isochain chain (in-process unless `options.driver` says otherwise) whose `runOne` runs `script` and throws unless it ends `ok`. */
export async function openIsochain(
  script: string,
  expected: unknown,
  options: CreateChainOptions = {},
): Promise<{ runOne: () => Promise<unknown>; close: () => Promise<void> }> {
  const chain = await createChain(options);
  await checkRun(chain, script, expected);
  return {
    runOne: async () => {
      const run = await chain.run(script);
      if (run.status !== "ok") throw new Error(`chain ended ${run.status}: ${run.error?.message ?? ""}`);
    },
    close: () => chain.close(),
  };
}

/** Opens a warmed raw isolated-vm runner (pool of 2) whose `runOne` runs `script`. */
export async function openRawIvm(script: string): Promise<{ runOne: () => Promise<unknown>; close: () => void }> {
  const runner = new RawIsolatedVmRunner({ poolSize: 2 });
  await runner.warm();
  return { runOne: () => runner.run(script, BASELINE_TOOLS), close: () => runner.close() };
}

/** Opens a node:vm runner whose `runOne` runs `script`. */
export function openNodeVm(script: string): Promise<{ runOne: () => Promise<unknown>; close: () => void }> {
  const runner = new NodeVmRunner();
  return Promise.resolve({ runOne: () => runner.run(script, BASELINE_TOOLS), close: () => undefined });
}
