/**
 * The lowest-latency driver: isolates live in this process, lent from a warm
 * {@link IsolatePool}. An isolate that hits a limit is disposed and replaced, and the host's
 * event loop never waits on script code, but a V8 fatal error (rare; isolated-vm reports it as
 * catastrophic) would take the process down: use the process driver where that matters.
 * @module
 */
import { checkOptionNames, optionNames } from "../src/kernel/check-option-shape.ts";
import { ChainRuntimeError, describeThrown } from "../src/kernel/index.ts";
import { IsolatePool, type IsolatePoolOptions } from "./isolate-pool.ts";
import { loadPreludeSource } from "./prelude-bundle.ts";
import {
  afterDriverWait,
  bindQueueWait,
  budgetSpentBefore,
  cancelledOutcome,
  MAX_NESTED_RUNS,
  nestedTooDeep,
  preludeWithinBudget,
  RunNesting,
  type SandboxDriver,
  type SandboxRunOutcome,
  type SandboxRunRequest,
  waitedPastBudget,
  wallBudgetMs,
} from "./sandbox-driver.ts";

/**
 * Options of an {@link InProcessSandboxDriver}; see {@link IsolatePoolOptions} for each field.
 * The isolates are always driven asynchronously here: the synchronous drive is for the process
 * driver's disposable children, where a guard thread can end a runaway script with its process
 * (isolated-vm does not enforce the heap limit of an isolate driven synchronously).
 */
export interface InProcessSandboxDriverOptions extends Omit<IsolatePoolOptions, "drive" | "watch"> {
  /**
   * Most runs (so isolates) at once; runs beyond it wait for one to end (or for their signal).
   * Each isolate holds its own heap: without a bound, a burst of concurrent chains takes the
   * host's memory one isolate at a time. A run started from inside a tool call of a run (a tool
   * that runs a chain) does not wait, since its caller holds a slot; such nesting stops at
   * {@link MAX_NESTED_RUNS} deep. @defaultValue 32
   */
  readonly maxIsolates?: number;
}

/** Every field of {@link InProcessSandboxDriverOptions}. */
const IN_PROCESS_DRIVER_OPTION_NAMES = optionNames<InProcessSandboxDriverOptions>({
  poolSize: true,
  maxRunsPerIsolate: true,
  memoryLimitMb: true,
  recycleHeapRatio: true,
  preludeSource: true,
  idleTrimMs: true,
  spinWaitUs: true,
  maxIsolates: true,
});

/** How a wait for a free isolate ended. */
type Admission = "admitted" | "cancelled" | "timeout";

/** One run waiting for a free isolate. */
interface Waiter {
  readonly admit: (admission: Admission) => void;
  readonly reject: (error: Error) => void;
}

/** Runs scripts in isolated-vm isolates inside this process. */
export class InProcessSandboxDriver implements SandboxDriver {
  /** Always `"in-process"`. */
  readonly kind = "in-process";
  /** Most runs at once; see {@link InProcessSandboxDriverOptions.maxIsolates}. */
  readonly maxIsolates: number;
  readonly #pool: IsolatePool;
  #closed = false;
  #running = 0;
  readonly #waiters: Waiter[] = [];
  readonly #nesting = new RunNesting();
  /** False until the built-in prelude is loaded (see loadPreludeSource); true from the start when `preludeSource` is given. */
  #preludeLoaded: boolean;

  /**
   * Creates the driver; isolates are made on first use or by {@link warm}. Throws
   * `ChainRuntimeError` `ARGUMENT_INVALID` for an unknown option, a `maxIsolates` that is not an
   * integer >= 1, or a pool option out of range (`poolSize` 0-256, `maxRunsPerIsolate` >= 1,
   * `memoryLimitMb` >= 8, `recycleHeapRatio` in (0, 1], `idleTrimMs` >= 0, `spinWaitUs`).
   */
  constructor(options: InProcessSandboxDriverOptions = {}) {
    checkOptionNames("InProcessSandboxDriver", options, IN_PROCESS_DRIVER_OPTION_NAMES);
    const { poolSize, maxRunsPerIsolate, memoryLimitMb, recycleHeapRatio, preludeSource, idleTrimMs, spinWaitUs } = options;
    this.maxIsolates = options.maxIsolates ?? 32;
    if (!Number.isInteger(this.maxIsolates) || this.maxIsolates < 1) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `InProcessSandboxDriver options.maxIsolates must be an integer >= 1; got ${String(options.maxIsolates)}.`, {
        details: { argument: "maxIsolates", value: options.maxIsolates },
      });
    }
    this.#preludeLoaded = preludeSource !== undefined;
    this.#pool = new IsolatePool({
      drive: "async",
      ...(poolSize === undefined ? {} : { poolSize }),
      ...(maxRunsPerIsolate === undefined ? {} : { maxRunsPerIsolate }),
      ...(memoryLimitMb === undefined ? {} : { memoryLimitMb }),
      ...(recycleHeapRatio === undefined ? {} : { recycleHeapRatio }),
      ...(preludeSource === undefined ? {} : { preludeSource }),
      ...(idleTrimMs === undefined ? {} : { idleTrimMs }),
      ...(spinWaitUs === undefined ? {} : { spinWaitUs }),
    });
  }

  /**
   * Runs one script in a fresh context of a pooled isolate whose heap limit is
   * `request.limits.memoryLimitMb`. Never rejects for script behaviour; rejects with
   * `ChainRuntimeError` `SANDBOX_FAILED` after {@link close} or when no isolate can be created.
   */
  async run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    if (this.#closed) throw closedError();
    // A run started from inside a tool call of this driver's runs (a tool that runs a chain),
    // while its run is in progress, skips the queue: its caller holds a slot until it ends, so
    // waiting could never end. The depth of such nesting is bounded instead. Work a call left
    // behind (a timer it set) starts runs that queue as any other once its run has ended (see
    // ToolCallFrame).
    const caller = this.#nesting.current;
    const depth = caller?.depth ?? 0;
    if (depth >= MAX_NESTED_RUNS) return nestedTooDeep(depth);
    const spent = budgetSpentBefore(request);
    if (spent !== undefined) return spent;
    // Read only when the run waits (the common run goes straight to its isolate, and host work
    // before the isolate's task is posted delays it by more than it costs).
    let waitStart: number | undefined;
    if (depth > 0 || this.#running < this.maxIsolates) {
      this.#running++;
    } else {
      waitStart = performance.now();
      const admitted = await this.#waitForSlot(request.signal, wallBudgetMs(request));
      const wallMs = performance.now() - waitStart;
      if (admitted === "cancelled") return cancelledOutcome(wallMs);
      if (admitted === "timeout") return waitedPastBudget(request, `an isolate: ${this.maxIsolates} runs (maxIsolates) were busy`, wallMs);
    }
    try {
      // The budget is the whole chain's: what the wait took is not the script's to spend again.
      const ready = waitStart === undefined ? request : afterDriverWait(request, performance.now() - waitStart);
      if (ready === undefined) return waitedPastBudget(request, "an isolate", performance.now() - (waitStart ?? 0));
      // Loaded once, without blocking the host (see loadPreludeSource), within the run's budget:
      // the driver's start, like a process driver's first child, not charged to the run.
      if (!this.#preludeLoaded) {
        const prelude = loadPreludeSource();
        if (prelude instanceof Promise) {
          const ended = await preludeWithinBudget(prelude, ready).catch((error: unknown) => {
            throw isolateFailed(error);
          });
          if (ended !== undefined) return ended;
        }
        this.#preludeLoaded = true;
      }
      let runner;
      try {
        runner = this.#pool.acquire(request.limits.memoryLimitMb);
      } catch (error) {
        throw isolateFailed(error);
      }
      const frame = this.#nesting.frameOf(caller);
      try {
        return await runner.run(this.#nesting.within(ready, frame));
      } finally {
        frame.settle();
        this.#pool.release(runner);
      }
    } finally {
      this.#leave();
    }
  }

  /** Waits until a run ends and hands its slot over, `signal` fires, or `timeoutMs` passes. */
  #waitForSlot(signal: AbortSignal | undefined, timeoutMs: number): Promise<Admission> {
    if (signal?.aborted) return Promise.resolve("cancelled");
    const { promise, resolve, reject } = Promise.withResolvers<Admission>();
    const waiter: Waiter = { admit: resolve, reject };
    this.#waiters.push(waiter);
    const giveUp = (why: Admission): void => {
      const index = this.#waiters.indexOf(waiter);
      if (index < 0) return;
      this.#waiters.splice(index, 1);
      resolve(why);
    };
    const timer = setTimeout(giveUp, timeoutMs, "timeout");
    bindQueueWait(promise, signal, () => giveUp("cancelled"), () => timer);
    return promise;
  }

  /** A run ended: its slot goes to the first waiter as it is (no new run can take it between). */
  #leave(): void {
    // Nested runs can take the count past the bound: those slots are not handed on.
    if (this.#running > this.maxIsolates) {
      this.#running--;
      return;
    }
    const next = this.#waiters.shift();
    if (next !== undefined) next.admit("admitted");
    else this.#running--;
  }

  /** Fills the pool to its warm size. */
  async warm(): Promise<void> {
    if (!this.#preludeLoaded) await loadPreludeSource();
    return this.#pool.warm();
  }

  /** Disposes every isolate; later `run` calls reject with `SANDBOX_FAILED`. */
  close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError());
    this.#pool.close();
    return Promise.resolve();
  }
}

function closedError(): ChainRuntimeError {
  return new ChainRuntimeError("SANDBOX_FAILED", "The sandbox driver is closed.");
}

/** `SANDBOX_FAILED` for an isolate that could not be made (its prelude included), saying why. */
function isolateFailed(error: unknown): ChainRuntimeError {
  return new ChainRuntimeError("SANDBOX_FAILED", `Could not start an isolate: ${describeThrown(error)}`, { cause: error });
}
