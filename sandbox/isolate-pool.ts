/**
 * A warm pool of isolate runners ({@link IsolateRunner}, or {@link SyncIsolateRunner} with
 * `drive: "sync"`), keyed by heap limit (an isolate's limit is fixed when it is created).
 *
 * Invariants:
 * - A runner is lent to one run at a time; concurrent runs each get their own isolate, created
 *   on demand when none is idle.
 * - Every idle runner already holds (or is creating, off the critical path) its next context
 *   with the prelude installed.
 * - A runner that hit a limit, was cancelled or crashed is disposed, never reused. A runner is
 *   also recycled after `maxRunsPerIsolate` runs or once its heap passes
 *   `recycleHeapRatio × memoryLimitMb`. The warm size of the default limit is restored in the
 *   background.
 * - Idle runners beyond `poolSize` per heap limit (made for concurrent runs) are kept for
 *   `idleTrimMs` after their last run, then disposed: under sustained concurrency they stay in
 *   rotation instead of being created and disposed per run (an isolate plus its prelude costs
 *   milliseconds of host CPU, more than the run).
 * @module
 */
import { ChainRuntimeError, MAX_MEMORY_LIMIT_MB } from "../src/kernel/index.ts";
import type { PooledRunner } from "./isolate-common.ts";
import { IsolateRunner } from "./isolate-runner.ts";
import { spinWaitProblem } from "./spin-wait.ts";
import { SyncIsolateRunner, type EntryWatch } from "./sync-isolate-runner.ts";

/**
 * How a pool's isolates are driven. `"async"`: each entry is a task on the isolate's own thread,
 * so the caller's event loop never waits on script code (a thread hand-off per entry, tens of
 * µs). `"sync"`: each entry runs on the caller's thread, bounded by the run's remaining CPU and
 * wall time (a few µs per entry, but the caller's event loop waits while the script computes).
 */
export type IsolateDrive = "async" | "sync";

/** Options of an {@link IsolatePool}. */
export interface IsolatePoolOptions {
  /** Idle isolates kept warm per heap limit. @defaultValue 2 */
  readonly poolSize?: number;
  /**
   * Runs an isolate serves before it is replaced (each run has a fresh context; the heap check
   * below recycles a growing isolate sooner). A new isolate, its prelude and its disposal cost
   * ~4 ms of CPU here: at 100 runs that took 6-8% off sustained one-call throughput. @defaultValue 1000
   */
  readonly maxRunsPerIsolate?: number;
  /** Heap limit of the isolates kept warm, MiB. @defaultValue 128 */
  readonly memoryLimitMb?: number;
  /** Recycle an isolate once its used heap after a run exceeds this share of its limit. @defaultValue 0.5 */
  readonly recycleHeapRatio?: number;
  /** Prelude source override, for tests. @defaultValue the bundled prelude */
  readonly preludeSource?: string;
  /** How isolates are driven; see {@link IsolateDrive}. @defaultValue "async" */
  readonly drive?: IsolateDrive;
  /** With `drive: "sync"`: the watch over every entry (see {@link EntryWatch}). */
  readonly watch?: EntryWatch;
  /** How long idle runners beyond `poolSize` are kept after their last run, ms; 0 disposes them on release, Infinity never. @defaultValue 5000 */
  readonly idleTrimMs?: number;
  /**
   * With `drive: "async"`: how long the host's event loop is kept turning after each hand-off to
   * an isolate, µs, while a core is free for it (see `sandbox/spin-wait.ts`); 0 never.
   * @defaultValue 1000
   */
  readonly spinWaitUs?: number;
}

/** Most idle isolates a pool keeps warm per heap limit. */
const MAX_POOL_SIZE = 256;

/** @throws ChainRuntimeError `ARGUMENT_INVALID` naming `option` unless `value` is an integer in `[min, max]`. */
function checkPoolInteger(option: string, value: unknown, min: number, max: number): void {
  if (Number.isInteger(value) && (value as number) >= min && (value as number) <= max) return;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
  throw new ChainRuntimeError("ARGUMENT_INVALID", `options.${option} must be an integer ${range}; got ${String(value)}.`, { details: { argument: option, value } });
}

interface Idle {
  readonly runner: PooledRunner;
  ready: boolean;
  /** `performance.now()` when the runner came back. */
  readonly since: number;
}

/** Lends warm isolate runners; see the module comment. */
export class IsolatePool {
  /** Idle isolates kept warm per heap limit. */
  readonly poolSize: number;
  /** Runs an isolate serves before it is replaced. */
  readonly maxRunsPerIsolate: number;
  /** Heap limit of the isolates {@link warm} creates, MiB. */
  readonly memoryLimitMb: number;
  /** Share of the heap limit past which an isolate is recycled after a run. */
  readonly recycleHeapRatio: number;
  /** How the isolates are driven. */
  readonly drive: IsolateDrive;
  /** How long idle runners beyond {@link poolSize} are kept, ms. */
  readonly idleTrimMs: number;
  #trimTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #preludeSource: string | undefined;
  readonly #spinWaitUs: number | undefined;
  readonly #watch: EntryWatch | undefined;
  readonly #idle = new Map<number, Idle[]>();
  readonly #all = new Set<PooledRunner>();
  #closed = false;

  /** Creates an empty pool; call {@link warm} to fill it ahead of the first run. */
  constructor(options: IsolatePoolOptions = {}) {
    this.poolSize = options.poolSize ?? 2;
    this.maxRunsPerIsolate = options.maxRunsPerIsolate ?? 1000;
    this.memoryLimitMb = options.memoryLimitMb ?? 128;
    this.recycleHeapRatio = options.recycleHeapRatio ?? 0.5;
    this.drive = options.drive ?? "async";
    checkPoolInteger("poolSize", this.poolSize, 0, MAX_POOL_SIZE);
    checkPoolInteger("maxRunsPerIsolate", this.maxRunsPerIsolate, 1, Number.MAX_SAFE_INTEGER);
    checkPoolInteger("memoryLimitMb", this.memoryLimitMb, 8, MAX_MEMORY_LIMIT_MB);
    const ratio = this.recycleHeapRatio;
    if (typeof ratio !== "number" || !(ratio > 0 && ratio <= 1)) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `options.recycleHeapRatio must be a share of the heap limit, above 0 and at most 1; got ${String(ratio)}.`, {
        details: { argument: "recycleHeapRatio", value: ratio },
      });
    }
    const idleTrimMs = options.idleTrimMs ?? 5_000;
    if (typeof idleTrimMs !== "number" || Number.isNaN(idleTrimMs) || idleTrimMs < 0) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `options.idleTrimMs must be a number of ms >= 0 (Infinity: never trim); got ${String(idleTrimMs)}.`, {
        details: { argument: "idleTrimMs", value: idleTrimMs },
      });
    }
    this.idleTrimMs = idleTrimMs;
    this.#watch = options.watch;
    this.#preludeSource = options.preludeSource;
    const spinProblem = spinWaitProblem(options.spinWaitUs);
    if (spinProblem !== undefined) throw new ChainRuntimeError("ARGUMENT_INVALID", `options.${spinProblem}`, { details: { argument: "spinWaitUs" } });
    this.#spinWaitUs = options.spinWaitUs;
  }

  /** Live isolates, idle and lent. */
  get size(): number {
    return this.#all.size;
  }

  /** Idle isolates of `memoryLimitMb` (default: the pool's). */
  idleCount(memoryLimitMb: number = this.memoryLimitMb): number {
    return this.#idle.get(memoryLimitMb)?.length ?? 0;
  }

  /** Fills the pool to `poolSize` warm isolates of the default limit and waits until they are ready. */
  async warm(): Promise<void> {
    const waits: Promise<void>[] = [];
    while (!this.#closed && this.#countOf(this.memoryLimitMb) < this.poolSize) {
      waits.push(this.#addIdle(this.memoryLimitMb));
    }
    for (const idle of this.#idle.get(this.memoryLimitMb) ?? []) {
      waits.push(
        idle.runner.prepare().then(
          () => {
            idle.ready = true;
          },
          () => undefined,
        ),
      );
    }
    await Promise.all(waits);
  }

  /**
   * Takes a runner with heap limit `memoryLimitMb`: a ready idle one, else one still preparing,
   * else a new one. Throws `ChainRuntimeError` `SANDBOX_FAILED` once closed.
   */
  acquire(memoryLimitMb: number = this.memoryLimitMb): PooledRunner {
    if (this.#closed) throw new ChainRuntimeError("SANDBOX_FAILED", "The isolate pool is closed.");
    const idle = this.#idle.get(memoryLimitMb);
    if (idle !== undefined) {
      // The most recently returned ready runner first: under light load the same few stay in
      // use and the surplus ages out (see idleTrimMs) instead of every runner's idle clock
      // being reset in turn.
      let index = idle.findLastIndex((entry) => entry.ready && !entry.runner.isDisposed);
      if (index < 0) index = idle.findIndex((entry) => !entry.runner.isDisposed);
      if (index >= 0) {
        const [entry] = idle.splice(index, 1);
        if (entry !== undefined) return entry.runner;
      }
    }
    const runner = this.#create(memoryLimitMb);
    void runner.prepare().catch(() => runner.dispose());
    return runner;
  }

  /** Returns a runner after its run settled: kept warm, or disposed and replaced. */
  release(runner: PooledRunner): void {
    const limit = runner.memoryLimitMb;
    const worn =
      runner.isDisposed ||
      runner.runs >= this.maxRunsPerIsolate ||
      runner.heapBytes > this.recycleHeapRatio * limit * 1024 * 1024;
    const idle = this.#idleList(limit);
    if (this.#closed || worn) {
      this.#drop(runner);
      if (!this.#closed && limit === this.memoryLimitMb) this.#refillSoon();
      return;
    }
    if (idle.length >= this.poolSize && this.idleTrimMs <= 0) {
      this.#drop(runner);
      return;
    }
    const entry: Idle = { runner, ready: false, since: performance.now() };
    idle.push(entry);
    if (idle.length > this.poolSize) this.#scheduleTrim(this.idleTrimMs);
    // After the current tick: the run's owner gets its outcome first, and the next context is
    // made while the caller works on it (creating one takes ~1 ms of CPU on the isolate's thread,
    // which on a small machine competes with the host thread).
    setImmediate(() => this.#prepareIdle(entry));
  }

  /** Starts the next context of an idle runner (see {@link release}). */
  #prepareIdle(entry: Idle): void {
    if (entry.ready || entry.runner.isDisposed || entry.runner.isBusy) return;
    entry.runner.prepare().then(
      () => {
        entry.ready = true;
      },
      () => this.#evict(entry),
    );
  }

  /** Disposes every isolate, lent ones included (their runs end as crashes). Idempotent. */
  close(): void {
    this.#closed = true;
    if (this.#trimTimer !== undefined) clearTimeout(this.#trimTimer);
    this.#trimTimer = undefined;
    for (const runner of this.#all) runner.dispose();
    this.#all.clear();
    this.#idle.clear();
  }

  #scheduleTrim(delayMs: number): void {
    if (this.#trimTimer !== undefined || this.#closed || !Number.isFinite(delayMs)) return;
    this.#trimTimer = setTimeout(() => this.#trim(), Math.max(1, delayMs));
    // Trimming is housekeeping: it must not keep the process alive.
    this.#trimTimer.unref();
  }

  /** Disposes idle runners beyond `poolSize` that have been idle for `idleTrimMs`, oldest first. */
  #trim(): void {
    this.#trimTimer = undefined;
    if (this.#closed) return;
    const now = performance.now();
    let nextDue = Number.POSITIVE_INFINITY;
    for (const list of this.#idle.values()) {
      list.sort((a, b) => a.since - b.since);
      while (list.length > this.poolSize) {
        const oldest = list[0] as Idle;
        const due = oldest.since + this.idleTrimMs;
        if (due > now) {
          nextDue = Math.min(nextDue, due);
          break;
        }
        list.shift();
        this.#drop(oldest.runner);
      }
    }
    if (nextDue !== Number.POSITIVE_INFINITY) this.#scheduleTrim(nextDue - now);
  }

  #countOf(limit: number): number {
    let count = 0;
    for (const runner of this.#all) if (runner.memoryLimitMb === limit) count++;
    return count;
  }

  #idleList(limit: number): Idle[] {
    let list = this.#idle.get(limit);
    if (list === undefined) {
      list = [];
      this.#idle.set(limit, list);
    }
    return list;
  }

  #create(limit: number): PooledRunner {
    const options = { memoryLimitMb: limit, ...(this.#preludeSource === undefined ? {} : { preludeSource: this.#preludeSource }) };
    const runner =
      this.drive === "sync"
        ? new SyncIsolateRunner({ ...options, ...(this.#watch === undefined ? {} : { watch: this.#watch }) })
        : new IsolateRunner({ ...options, ...(this.#spinWaitUs === undefined ? {} : { spinWaitUs: this.#spinWaitUs }) });
    this.#all.add(runner);
    return runner;
  }

  #addIdle(limit: number): Promise<void> {
    const runner = this.#create(limit);
    const entry: Idle = { runner, ready: false, since: performance.now() };
    this.#idleList(limit).push(entry);
    return runner.prepare().then(
      () => {
        entry.ready = true;
      },
      () => this.#evict(entry),
    );
  }

  #evict(entry: Idle): void {
    const list = this.#idle.get(entry.runner.memoryLimitMb);
    const index = list?.indexOf(entry) ?? -1;
    if (list !== undefined && index >= 0) list.splice(index, 1);
    this.#drop(entry.runner);
  }

  #drop(runner: PooledRunner): void {
    runner.dispose();
    this.#all.delete(runner);
  }

  #refillSoon(): void {
    setImmediate(() => {
      if (this.#closed || this.#countOf(this.memoryLimitMb) >= this.poolSize) return;
      void this.#addIdle(this.memoryLimitMb);
    });
  }
}
