/**
 * The default driver: each chain runs in an isolated-vm isolate inside a supervised child
 * process, so a V8 fatal error (a native abort, an allocation V8 cannot satisfy) or a wedged
 * isolate takes down a disposable child, never the host. Tool calls still run on the host (the
 * child forwards them), so the host keeps the trace whole whatever happens to the child.
 *
 * ```
 *  run ─ acquire: an idle child │ else the first to free up, spawning an extra up to
 *      │                          maxProcesses while chains wait
 *      └ SandboxProcess.run ─ outcome ─ release: idle again │ worn out: retired and replaced
 *  background: keep `processes` children alive and warm; replace every child that dies
 * ```
 *
 * Invariants:
 * - A child's start (~0.1-0.4 s) is off the critical path once the pool is warm: replacements
 *   for dead, killed and worn-out children are spawned in the background.
 * - Runs that are not nested hold at most `maxProcesses` children between them; a nested run
 *   (started from a tool call of one of this driver's runs) goes first and may have a child
 *   past the cap, which never lets a queued run past it.
 * - One chain per child at a time; a child that died, was killed by the host's timer or was
 *   cancelled by force is dropped, never reused. Other chains are untouched.
 * - A run is repeated only when nothing of it can have happened: its child was killed from
 *   outside (not by a fault of its own) within {@link LOST_RUN_RETRY_WINDOW_MS} of getting it and
 *   before sending any call, output or clock reading. Once, on another child.
 * - After {@link ProcessSandboxDriver.close} no child is left and `run` rejects with
 *   `SANDBOX_FAILED`.
 * @module
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { checkOptionNames, optionNames } from "../src/kernel/check-option-shape.ts";
import { ChainRuntimeError, MAX_MEMORY_LIMIT_MB, MAX_POLICY_DURATION_MS } from "../src/kernel/index.ts";
import { getPreludeSource, loadPreludeSource } from "./prelude-bundle.ts";
import { SandboxProcess } from "./sandbox-process.ts";
import { DEFAULT_SPIN_WAIT_US, spinWaitProblem } from "./spin-wait.ts";
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

/** Every field of {@link ProcessSandboxDriverOptions}. */
const PROCESS_SANDBOX_DRIVER_OPTION_NAMES = optionNames<ProcessSandboxDriverOptions>({
  processes: true,
  maxProcesses: true,
  memoryLimitMb: true,
  maxRunsPerProcess: true,
  maxRunsPerIsolate: true,
  killGraceMs: true,
  preludeSource: true,
  spinWaitUs: true,
});

/** The child entry next to this file: `.ts` in the source tree (Node's type stripping), `.js` when built. */
const CHILD_ENTRY = fileURLToPath(new URL(`./child/sandbox-child${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** Consecutive failed starts after which waiting chains are refused instead of retried. */
const MAX_START_FAILURES = 3;
/** Starts in a row killed from outside that are replaced without counting as failed starts. */
const MAX_OUTSIDE_START_KILLS = 10;
/** How long an idle child beyond `processes` lingers before it is retired, ms. */
const EXTRA_IDLE_MS = 10_000;
/**
 * How soon after a child was handed a run its death by an outside signal, with nothing heard
 * about the run, makes the run go to another child once, ms: the child was gone or going when
 * it got the run. Later, the run is the child's: a retry could double a chain's time.
 */
const LOST_RUN_RETRY_WINDOW_MS = 250;

/** Options of a {@link ProcessSandboxDriver}. */
export interface ProcessSandboxDriverOptions {
  /** Child processes kept alive and warm. @defaultValue 2 */
  readonly processes?: number;
  /** Most children alive at once; chains beyond that wait for a free one. @defaultValue max(4, 2 × processes) */
  readonly maxProcesses?: number;
  /** Heap limit of the isolate each child keeps warm, MiB (a chain with another limit gets a fresh isolate in its child). @defaultValue 128 */
  readonly memoryLimitMb?: number;
  /** Chains a child serves before it is replaced. @defaultValue 1000 */
  readonly maxRunsPerProcess?: number;
  /** Chains an isolate serves inside its child before it is replaced. @defaultValue 100 */
  readonly maxRunsPerIsolate?: number;
  /** How long past `totalTimeoutMs`, or after a cancel, the host waits for a child before SIGKILL, ms. @defaultValue 100 */
  readonly killGraceMs?: number;
  /** Prelude source override, for tests. @defaultValue the bundled prelude */
  readonly preludeSource?: string;
  /**
   * How long the host's event loop is kept turning after each message to a child, and a child's
   * after each batch of calls to the host, µs, while a core is free for it (see
   * `sandbox/spin-wait.ts`); 0 lets the thread sleep at once. @defaultValue 1000
   */
  readonly spinWaitUs?: number;
}

interface Waiter {
  readonly resolve: (child: SandboxProcess) => void;
  readonly reject: (error: Error) => void;
  /** A run started from inside a tool call of this driver's runs (see MAX_NESTED_RUNS). */
  readonly nested: boolean;
}

/** Runs scripts in isolates inside a pool of supervised child processes; see the module comment. */
export class ProcessSandboxDriver implements SandboxDriver {
  /** Always `"process"`. */
  readonly kind = "process";
  /** Children kept alive and warm. */
  readonly processes: number;
  /** Most children alive at once. */
  readonly maxProcesses: number;
  /** Heap limit of the warm isolates, MiB. */
  readonly memoryLimitMb: number;
  /** Chains a child serves before it is replaced. */
  readonly maxRunsPerProcess: number;
  readonly #maxRunsPerIsolate: number;
  readonly #killGraceMs: number;
  readonly #preludeOverride: string | undefined;
  #preludeSource: string | undefined;
  readonly #children = new Set<SandboxProcess>();
  readonly #idle: SandboxProcess[] = [];
  readonly #waiters: Waiter[] = [];
  readonly #extraTimers = new Map<SandboxProcess, ReturnType<typeof setTimeout>>();
  readonly #nesting = new RunNesting();
  readonly #spinWaitUs: number;
  #spawned = 0;
  /** Children held by runs that are not nested: at most `maxProcesses`, whatever nested runs add. */
  #ordinaryBusy = 0;
  #lostRuns = 0;
  /** Why the last start failed, as `SANDBOX_FAILED`. */
  #lastStartError: ChainRuntimeError | undefined;
  #startFailures = 0;
  /** Starts in a row killed from outside (see MAX_OUTSIDE_START_KILLS). */
  #outsideStartKills = 0;
  #closed = false;

  /** Creates the driver; children are spawned by {@link warm} or the first {@link run}. Throws `ChainRuntimeError` `ARGUMENT_INVALID` for an unknown option, nonsensical sizes or `spinWaitUs`. */
  constructor(options: ProcessSandboxDriverOptions = {}) {
    checkOptionNames("ProcessSandboxDriver", options, PROCESS_SANDBOX_DRIVER_OPTION_NAMES);
    this.processes = options.processes ?? 2;
    this.maxProcesses = options.maxProcesses ?? Math.max(4, 2 * this.processes);
    this.memoryLimitMb = options.memoryLimitMb ?? 128;
    this.maxRunsPerProcess = options.maxRunsPerProcess ?? 1_000;
    this.#maxRunsPerIsolate = options.maxRunsPerIsolate ?? 100;
    this.#killGraceMs = options.killGraceMs ?? 100;
    this.#preludeOverride = options.preludeSource;
    const spinProblem = spinWaitProblem(options.spinWaitUs);
    if (spinProblem !== undefined) throw new ChainRuntimeError("ARGUMENT_INVALID", `ProcessSandboxDriver options.${spinProblem}`, { details: { argument: "spinWaitUs" } });
    this.#spinWaitUs = options.spinWaitUs ?? DEFAULT_SPIN_WAIT_US;
    if (!(Number.isInteger(this.processes) && this.processes >= 0 && Number.isInteger(this.maxProcesses) && this.maxProcesses >= Math.max(1, this.processes))) {
      throw new ChainRuntimeError(
        "ARGUMENT_INVALID",
        `ProcessSandboxDriver options.processes and options.maxProcesses must be integers with 0 <= processes <= maxProcesses and maxProcesses >= 1; got ${String(this.processes)} and ${String(this.maxProcesses)}.`,
        { details: { argument: "processes", processes: this.processes, maxProcesses: this.maxProcesses } },
      );
    }
    // Refused here, not by a child that dies starting (a heap of 0 MB) or a kill timer that
    // fires at once (a grace past what a timer can hold): each would fail every run later.
    checkInteger("memoryLimitMb", this.memoryLimitMb, 8, "the isolate heap, MiB, as ChainPolicy.memoryLimitMb", MAX_MEMORY_LIMIT_MB);
    checkInteger("maxRunsPerProcess", this.maxRunsPerProcess, 1, "runs before a child is replaced");
    checkInteger("maxRunsPerIsolate", this.#maxRunsPerIsolate, 1, "runs before an isolate is replaced");
    checkInteger("killGraceMs", this.#killGraceMs, 0, "ms a child gets to answer a cancel or timeout before SIGKILL", MAX_POLICY_DURATION_MS);
  }

  /** Children spawned since the driver was made (a debugging and test aid). */
  get spawnCount(): number {
    return this.#spawned;
  }

  /** Runs moved to another child because theirs was killed from outside before it said anything (a debugging and test aid). */
  get lostRunCount(): number {
    return this.#lostRuns;
  }

  /** Process ids of the live children (a debugging and test aid). */
  pids(): number[] {
    // A child the system refused to spawn has no pid (0) until its start fails, a tick later.
    return [...this.#children].filter((child) => child.state !== "exited" && child.pid > 0).map((child) => child.pid);
  }

  /** Process id of the child running chain `chainId`, if one is (a debugging and test aid). */
  pidOf(chainId: string): number | undefined {
    for (const child of this.#children) if (child.chainId === chainId) return child.pid;
    return undefined;
  }

  /**
   * Runs one script in a fresh context inside a child process. Never rejects for script
   * behaviour (a child's death is an outcome); rejects with `ChainRuntimeError`
   * `SANDBOX_FAILED` after {@link close} or when no child can be started. A run whose child was
   * killed from outside within 250 ms of getting it, before the child said anything about it
   * (no call, no output), runs once more on another child: nothing of it had happened.
   */
  run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    return this.#run(request, true);
  }

  /** {@link run}; `mayRetry` false for the one retry of a lost run, whose `request` carries what is left of the budget. */
  async #run(request: SandboxRunRequest, mayRetry: boolean): Promise<SandboxRunOutcome> {
    if (this.#closed) throw closedError();
    if (request.signal?.aborted) return cancelledOutcome(0);
    // A run started from inside a tool call of this driver's runs (a tool that runs a chain),
    // while its run is in progress: its caller holds a child until it ends, so it goes first and
    // may start a child past maxProcesses; such nesting is bounded instead (see MAX_NESTED_RUNS).
    // Work a call left behind (a timer it set) starts runs that queue once its run has ended (see
    // ToolCallFrame).
    const caller = this.#nesting.current;
    const depth = caller?.depth ?? 0;
    if (depth >= MAX_NESTED_RUNS) return nestedTooDeep(depth);
    const spentBefore = budgetSpentBefore(request);
    if (spentBefore !== undefined) return spentBefore;
    const waitStart = performance.now();
    // A driver with no child up yet (cold, or its children all restarting): the start of one is
    // the driver's, not the run's to pay for, so that wait (and the prelude's first load) does not
    // come out of the run's budget, and the queue waits once more for a child still starting.
    // Once a child is up, a wait for a busy one does.
    const cold = this.#liveCount() === this.#startingCount();
    if (this.#preludeSource === undefined) {
      // Loaded once, without blocking the host (see loadPreludeSource), within the run's budget.
      const ended = await preludeWithinBudget(this.#loadPrelude(), request);
      if (ended !== undefined) return ended;
    }
    const spent = (): number => (cold ? 0 : performance.now() - waitStart);
    const queued = afterDriverWait(request, spent());
    if (queued === undefined) return waitedPastBudget(request, "a sandbox process", performance.now() - waitStart);
    const child = await this.#acquire(request.signal, depth > 0, wallBudgetMs(queued), cold);
    if (child === "timeout") {
      // As the in-process driver: a chain queued past its whole budget ends, it does not start late.
      return waitedPastBudget(request, `a sandbox process: ${this.maxProcesses} (maxProcesses) were busy or starting`, performance.now() - waitStart);
    }
    if (child === undefined) return cancelledOutcome(performance.now() - waitStart);
    // The budget is the whole chain's: what a wait for a busy child took is not the script's to spend again.
    const ready = afterDriverWait(request, spent());
    if (ready === undefined) {
      this.#giveBack(child, depth);
      return waitedPastBudget(request, "a sandbox process", performance.now() - waitStart);
    }
    const runStart = performance.now();
    let outcome: SandboxRunOutcome;
    const frame = this.#nesting.frameOf(caller);
    try {
      outcome = await child.run(this.#nesting.within(ready, frame));
    } finally {
      frame.settle();
      this.#giveBack(child, depth);
    }
    // A child killed from outside (the OOM killer, a stray signal) while idle, or the moment it
    // was handed the run, took the run with it before a word about it came back: no call reached
    // the host, so running it once more, on another child, repeats nothing.
    const lost = performance.now() - runStart;
    if (!mayRetry || !child.killedFromOutside || lost > LOST_RUN_RETRY_WINDOW_MS || this.#closed || request.signal?.aborted === true) return outcome;
    // The retry, its wait for a child included, has what is left of the run's budget.
    const retrying = afterDriverWait(request, performance.now() - waitStart);
    if (retrying === undefined) return outcome;
    this.#lostRuns++;
    let retry: SandboxRunOutcome;
    try {
      retry = await this.#run(retrying, false);
    } catch {
      return outcome; // no child to be had (closed meanwhile, or none starts): the first death stands
    }
    return { ...retry, wallMs: retry.wallMs + (runStart - waitStart) + lost };
  }

  /**
   * Starts children up to `processes` and waits until they are ready and every idle child has
   * its next context prepared. Rejects with `SANDBOX_FAILED` when none could start.
   */
  async warm(): Promise<void> {
    if (this.#closed) throw closedError();
    if (this.#startFailures >= MAX_START_FAILURES) this.#startFailures = 0;
    await this.#loadPrelude();
    this.#refill();
    const starting = [...this.#children].filter((child) => child.state === "starting");
    const results = await Promise.allSettled(starting.map((child) => child.ready));
    const failed = results.find((result): result is PromiseRejectedResult => result.status === "rejected");
    if (this.processes > 0 && this.#liveCount() === 0) {
      // Not one child to show for it: say why (a start that failed, or one that never began).
      // Children alive and busy, or replacements starting, are a working pool.
      const reason: unknown = failed?.reason ?? this.#lastStartError;
      if (reason !== undefined) throw reason;
    }
    await Promise.all(this.#idle.map((child) => child.whenPrepared()));
  }

  /** Kills every child (a run in progress ends as a `SandboxError`); later `run` calls reject with `SANDBOX_FAILED`. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError());
    for (const timer of this.#extraTimers.values()) clearTimeout(timer);
    this.#extraTimers.clear();
    this.#idle.length = 0;
    const children = [...this.#children];
    for (const child of children) child.kill();
    await Promise.all(children.map((child) => child.exited));
  }

  /**
   * An idle child, or one when it is free: `undefined` when `signal` fires first, `"timeout"` after
   * `timeoutMs` in the queue (once more on a `cold` driver while a child is starting).
   */
  #acquire(signal: AbortSignal | undefined, nested: boolean, timeoutMs: number, cold: boolean): Promise<SandboxProcess | undefined | "timeout"> {
    if (this.#startFailures >= MAX_START_FAILURES) this.#startFailures = 0;
    const idle = this.#mayTake(nested) ? this.#takeIdle() : undefined;
    if (idle !== undefined) {
      if (!nested) this.#ordinaryBusy++;
      return Promise.resolve(idle);
    }
    const { promise, resolve, reject } = Promise.withResolvers<SandboxProcess | undefined | "timeout">();
    const waiter: Waiter = { resolve, reject, nested };
    if (nested) {
      // First in line, with a child of its own on the way, past the cap if need be (but one per
      // nested run waiting: the chains queued behind are not nested, and stay within the cap).
      this.#waiters.unshift(waiter);
      if (this.#startingCount() < this.#waiters.filter((other) => other.nested).length) this.#spawn();
    } else {
      this.#waiters.push(waiter);
      // More chains waiting than children on the way: start one more, within the cap.
      if (this.#startingCount() < this.#waiters.length && this.#liveCount() < this.maxProcesses) this.#spawn();
    }
    const giveUp = (why: undefined | "timeout"): void => {
      const index = this.#waiters.indexOf(waiter);
      if (index >= 0) {
        this.#waiters.splice(index, 1);
        resolve(why);
      }
    };
    // A nested run waits for the child started for it (it skips the queue's order and the cap),
    // as in-process it skips the queue: no time limit but its own run's. Otherwise the wait is
    // bounded by what is left of the run's budget, and once more on a cold driver whose child is
    // still starting then (its first chain waits for a spawn, not for a busy child).
    let extended = false;
    const onTimeout = (): void => {
      if (cold && !extended && this.#startingCount() > 0) {
        extended = true;
        timer = setTimeout(onTimeout, Math.min(timeoutMs, MAX_POLICY_DURATION_MS));
        return;
      }
      giveUp("timeout");
    };
    let timer = nested ? undefined : setTimeout(onTimeout, Math.min(timeoutMs, MAX_POLICY_DURATION_MS));
    bindQueueWait(promise, signal, () => giveUp(undefined), () => timer);
    return promise;
  }

  /** A child a run of `depth` was handed, back to the pool (or retired), and the next waiter served. */
  #giveBack(child: SandboxProcess, depth: number): void {
    if (depth === 0) this.#ordinaryBusy--;
    this.#release(child);
    this.#serveWaiting();
  }

  #release(child: SandboxProcess): void {
    if (child.state !== "idle") return; // gone: its exit handler refills
    if (this.#closed) {
      child.kill();
      return;
    }
    if (child.runs >= this.maxRunsPerProcess) {
      child.retire();
      return;
    }
    this.#offer(child);
  }

  /** Whether a run may take a child now: a nested run always, another while fewer than `maxProcesses` are held by such runs. */
  #mayTake(nested: boolean): boolean {
    return nested || this.#ordinaryBusy < this.maxProcesses;
  }

  /** An idle child, preferring one whose next context is prepared, else the least recently used. */
  #takeIdle(): SandboxProcess | undefined {
    let index = this.#idle.findIndex((child) => child.isPrepared);
    if (index < 0 && this.#idle.length > 0) index = 0;
    const idle = index < 0 ? undefined : this.#idle.splice(index, 1)[0];
    if (idle !== undefined) this.#clearExtraTimer(idle);
    return idle;
  }

  /** The first waiter that may take a child now (see {@link #mayTake}), out of the queue. */
  #nextWaiter(): Waiter | undefined {
    const index = this.#waiters.findIndex((waiter) => this.#mayTake(waiter.nested));
    return index < 0 ? undefined : this.#waiters.splice(index, 1)[0];
  }

  /** Hands `child` to `waiter`, counting it against the cap when the run is not nested. */
  #hand(waiter: Waiter, child: SandboxProcess): void {
    if (!waiter.nested) this.#ordinaryBusy++;
    waiter.resolve(child);
  }

  /** After a run ends: idle children (parked while the cap held runs back) go to waiters that may now take them. */
  #serveWaiting(): void {
    while (this.#idle.length > 0) {
      const waiter = this.#nextWaiter();
      if (waiter === undefined) return;
      this.#hand(waiter, this.#takeIdle() as SandboxProcess);
    }
  }

  /** A child is free: hand it to the first waiter that may take it, else park it. */
  #offer(child: SandboxProcess): void {
    const waiter = this.#nextWaiter();
    if (waiter !== undefined) {
      this.#hand(waiter, child);
      return;
    }
    this.#idle.push(child);
    if (this.#liveCount() > this.processes) {
      const timer = setTimeout(() => {
        this.#extraTimers.delete(child);
        const index = this.#idle.indexOf(child);
        if (index >= 0 && this.#liveCount() > this.processes) {
          this.#idle.splice(index, 1);
          child.retire();
        }
      }, EXTRA_IDLE_MS);
      timer.unref();
      this.#extraTimers.set(child, timer);
    }
  }

  #clearExtraTimer(child: SandboxProcess): void {
    const timer = this.#extraTimers.get(child);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#extraTimers.delete(child);
  }

  #liveCount(): number {
    let count = 0;
    for (const child of this.#children) if (child.state !== "exited") count++;
    return count;
  }

  #startingCount(): number {
    let count = 0;
    for (const child of this.#children) if (child.state === "starting") count++;
    return count;
  }

  /** The prelude children are handed, loaded once without blocking the host (see loadPreludeSource). */
  async #loadPrelude(): Promise<void> {
    this.#preludeSource ??= this.#preludeOverride ?? (await loadPreludeSource());
  }

  /** Spawns children until `processes` are alive. */
  #refill(): void {
    while (!this.#closed && this.#liveCount() < this.processes) {
      if (this.#spawn() === undefined) return;
    }
  }

  #spawn(): SandboxProcess | undefined {
    let child: SandboxProcess;
    try {
      this.#preludeSource ??= this.#preludeOverride ?? getPreludeSource();
      child = new SandboxProcess({
        entry: CHILD_ENTRY,
        memoryLimitMb: this.memoryLimitMb,
        maxRunsPerIsolate: this.#maxRunsPerIsolate,
        preludeSource: this.#preludeSource,
        killGraceMs: this.#killGraceMs,
        spinWaitUs: this.#spinWaitUs,
        onExit: (gone, startError) => this.#onChildExit(gone, startError),
      });
    } catch (error) {
      this.#onStartFailure(error instanceof Error ? error : new Error(String(error)));
      if (this.#startFailures < MAX_START_FAILURES) queueMicrotask(() => this.#refill());
      return undefined;
    }
    this.#spawned++;
    this.#children.add(child);
    void child.ready.then(() => {
      this.#startFailures = 0;
      this.#outsideStartKills = 0;
      this.#lastStartError = undefined;
      if (this.#closed) child.kill();
      else this.#offer(child);
    }, () => undefined); // a failed start is handled in #onChildExit
    return child;
  }

  #onStartFailure(error: Error): void {
    this.#startFailures++;
    const reason = new ChainRuntimeError("SANDBOX_FAILED", `Could not start a sandbox process: ${error.message}`, { cause: error });
    this.#lastStartError = reason;
    if (this.#startFailures < MAX_START_FAILURES) return;
    // Starting keeps failing: refuse the chains waiting rather than retry forever. The next
    // run() or warm() tries again.
    for (const waiter of this.#waiters.splice(0)) waiter.reject(reason);
  }

  #onChildExit(child: SandboxProcess, startError: Error | undefined): void {
    this.#children.delete(child);
    this.#clearExtraTimer(child);
    const index = this.#idle.indexOf(child);
    if (index >= 0) this.#idle.splice(index, 1);
    if (this.#closed) return;
    // A start killed from outside (the OOM killer, a stray kill) says nothing of whether starts
    // work: it does not count towards refusing the waiting chains, up to a point.
    if (startError !== undefined && !(child.killedFromOutside && ++this.#outsideStartKills <= MAX_OUTSIDE_START_KILLS)) this.#onStartFailure(startError);
    if (this.#startFailures >= MAX_START_FAILURES) return;
    this.#refill();
    // Chains still waiting with nothing on the way (e.g. processes: 0): start one.
    if (this.#waiters.length > this.#startingCount() && this.#liveCount() < this.maxProcesses) this.#spawn();
  }
}

function closedError(): ChainRuntimeError {
  return new ChainRuntimeError("SANDBOX_FAILED", "The sandbox driver is closed.");
}

/** @throws ChainRuntimeError `ARGUMENT_INVALID` naming `option` unless `value` is an integer in `[min, max]`. */
function checkInteger(option: string, value: number, min: number, what: string, max = Number.MAX_SAFE_INTEGER): void {
  if (Number.isInteger(value) && value >= min && value <= max) return;
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
  throw new ChainRuntimeError("ARGUMENT_INVALID", `ProcessSandboxDriver options.${option} (${what}) must be an integer ${range}; got ${String(value)}.`, {
    details: { argument: option, value },
  });
}
