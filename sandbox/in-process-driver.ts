/**
 * The lowest-latency driver: isolates live in this process, lent from a warm
 * {@link IsolatePool}. An isolate that hits a limit is disposed and replaced, and the host's
 * event loop never waits on script code, but a V8 fatal error (rare; isolated-vm reports it as
 * catastrophic) would take the process down: use the process driver where that matters.
 * @module
 */
import { ChainRuntimeError } from "../src/kernel/index.ts";
import { IsolatePool, type IsolatePoolOptions } from "./isolate-pool.ts";
import type { SandboxDriver, SandboxRunOutcome, SandboxRunRequest } from "./sandbox-driver.ts";

/**
 * Options of an {@link InProcessSandboxDriver}; see {@link IsolatePoolOptions} for each field.
 * The isolates are always driven asynchronously here: the synchronous drive is for the process
 * driver's disposable children, where a guard thread can end a runaway script with its process
 * (isolated-vm does not enforce the heap limit of an isolate driven synchronously).
 */
export type InProcessSandboxDriverOptions = Omit<IsolatePoolOptions, "drive" | "watch">;

/** Runs scripts in isolated-vm isolates inside this process. */
export class InProcessSandboxDriver implements SandboxDriver {
  /** Always `"in-process"`. */
  readonly kind = "in-process";
  readonly #pool: IsolatePool;
  #closed = false;

  /** Creates the driver; isolates are made on first use or by {@link warm}. */
  constructor(options: InProcessSandboxDriverOptions = {}) {
    const { poolSize, maxRunsPerIsolate, memoryLimitMb, recycleHeapRatio, preludeSource, idleTrimMs } = options;
    this.#pool = new IsolatePool({
      drive: "async",
      ...(poolSize === undefined ? {} : { poolSize }),
      ...(maxRunsPerIsolate === undefined ? {} : { maxRunsPerIsolate }),
      ...(memoryLimitMb === undefined ? {} : { memoryLimitMb }),
      ...(recycleHeapRatio === undefined ? {} : { recycleHeapRatio }),
      ...(preludeSource === undefined ? {} : { preludeSource }),
      ...(idleTrimMs === undefined ? {} : { idleTrimMs }),
    });
  }

  /**
   * Runs one script in a fresh context of a pooled isolate whose heap limit is
   * `request.limits.memoryLimitMb`. Never rejects for script behaviour; rejects with
   * `ChainRuntimeError` `SANDBOX_FAILED` after {@link close} or when no isolate can be created.
   */
  async run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    if (this.#closed) throw new ChainRuntimeError("SANDBOX_FAILED", "The sandbox driver is closed.");
    let runner;
    try {
      runner = this.#pool.acquire(request.limits.memoryLimitMb);
    } catch (error) {
      throw new ChainRuntimeError("SANDBOX_FAILED", "Could not start an isolate.", { cause: error });
    }
    try {
      return await runner.run(request);
    } finally {
      this.#pool.release(runner);
    }
  }

  /** Fills the pool to its warm size. */
  warm(): Promise<void> {
    return this.#pool.warm();
  }

  /** Disposes every isolate; later `run` calls reject with `SANDBOX_FAILED`. */
  close(): Promise<void> {
    this.#closed = true;
    this.#pool.close();
    return Promise.resolve();
  }
}
