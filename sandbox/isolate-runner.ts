/**
 * One isolated-vm isolate that runs scripts, one at a time, each in a fresh context. It knows
 * nothing of pools, invokers or processes: calls leave through `request.onToolCall`, so the same
 * unit serves the in-process driver and, later, the child side of the process driver.
 *
 * Life of a run:
 *
 * ```
 *  prepare() ─ createContext ─ set send callback (+ the last run's tool names) + run cached prelude Script ─ bridge ref
 *      │          (off the critical path: done after the previous run, while idle; the prelude
 *      │           builds the `tools` object of the staged names as it loads)
 *  run() ─ bridge.configure(config, without the names when staged) + (cachedScript.run | context.eval) ─▶ frames via ignored callback ─▶ host
 *      │        host answers: bridge.resolve(results of one tick), `applyIgnored` (never *Sync)
 *      │        a failed start is a promise rejection the script left unhandled (kept for the outcome)
 *      │        each start/delivery is followed by a heap read queued behind it (the tracker)
 *      ├─ done frame ─ abort pending calls ─ last heap read completes (idle, heap measured) ─ outcome
 *      └─ watchdog (one for all runs, every WATCHDOG_INTERVAL_MS) ─ wall / CPU / OOM / stall ─ dispose ─ outcome
 * ```
 *
 * Invariants:
 * - No host call that can run script code is synchronous: `run`, `apply` and `applyIgnored` run
 *   on the isolate's own thread, so a script that loops forever (even after an `await`, or in a
 *   microtask storm) cannot stall the host's event loop; the watchdog, a host timer, disposes the
 *   isolate instead. Nothing is called synchronously during a run: a synchronous call would hand
 *   the isolate's V8 lock to the host thread and back, tens of µs each way.
 * - Only strings and numbers cross: the prelude serialises arguments and the return value
 *   inside the isolate; results go in as JSON text. No host object or Reference is ever handed
 *   to the isolate, so script code cannot reach host prototypes (a Node `Buffer` in a result is
 *   just its JSON form; no pooled bytes beyond it can leak).
 * - `run` settles only when the isolate is idle or disposed; pending calls' signals have fired by
 *   then. For a short script idle is known without asking: the start and the first deliveries of
 *   results are each followed by an asynchronous heap read queued right behind them; the
 *   isolate's thread runs its tasks in order, and isolated-vm reports a completion after the
 *   task's microtasks ran and after every frame it sent (both travel the host's one task queue,
 *   in order), so once the done frame is in and no read is in flight nothing can run in the
 *   isolate, and the last read is the heap the run left: no extra round trip at the end. A
 *   script that keeps calling gets its later results untracked, and one more read, queued behind
 *   whatever is left, at its end.
 * - After any limit hit, cancellation or fault the isolate is disposed and
 *   {@link IsolateRunner.isDisposed} is true; the owner must drop this runner.
 * - A never-resolving promise is detected early: when the last task completes with no call
 *   pending (or the watchdog finds none), a probe confirms the isolate idle with every frame
 *   accounted for; then nothing can ever wake the script, and the run ends at once as a
 *   `DeadlockError` (phase `limit`).
 * - Nothing of a finished run stays reachable from the runner or the isolate's callback: the
 *   per-run state ({@link ActiveRun}) drops its request, promise and pending calls when it
 *   closes, so a chain's objects die young instead of being promoted and piling up until a full
 *   GC (the soak's RSS growth).
 *
 * Speed: a run whose tool names are the last run's finds their `tools` object built (see
 * `BRIDGE_GLOBALS.tools`): building it costs ~1 µs a tool in a fresh context, and a 50-tool
 * chain paid it on every run. A script seen for the first time is compiled and run in one task (`context.eval`); one
 * that comes back is compiled into a per-isolate cache and run from it (`Script.run`); the prelude
 * is compiled from V8's code cache in every isolate but the first; the run is configured and
 * started in one pipelined step (two tasks queued back to back, no
 * wait between them), results that arrive in the same host tick enter the isolate in one task,
 * the end of a run needs no extra round trip (see above), and timers and listeners take the run
 * state as their argument instead of allocating closures. Each isolate task costs tens of µs of
 * CPU on the isolate's thread, so the count of tasks per run is what this design keeps low. After
 * each hand-off (the start, a delivery) the host's event loop keeps turning until the next frame,
 * for up to `spinWaitUs`, while a core is free for it (see `spin-wait.ts`).
 * @module
 */
import ivm from "isolated-vm";
import { BRIDGE_GLOBALS, BRIDGE_OP, FRAME_KIND, LOCAL_FRAME_KIND, OUTPUT_TRUNCATED_MARKER } from "../src/bridge/protocol.ts";
import { describeThrown, type InvocationResult } from "../src/kernel/index.ts";
import {
  AbortHook,
  callFromFrame,
  closingOutcome,
  compilePrelude,
  configJson,
  dispatchCall,
  forwardClock,
  forwardLog,
  killOutcome,
  noteRejection,
  releaseContext,
  ResultQueue,
  sameNames,
  stageableToolNames,
  sandboxFailure,
  ScriptCache,
  settledFromDone,
  thrownToError,
  type Bridge,
  type FrameField,
  type FrameSink,
  type IsolateRunnerOptions,
  type IsolateRunRequest,
  type KillReason,
  type PooledRunner,
  type PreparedContext,
  type SerializedToolResult,
  type Settled,
  wrapScript,
} from "./isolate-common.ts";
import { getPreludeSource } from "./prelude-bundle.ts";
import { DEFAULT_SPIN_WAIT_US, isSpinWaitUs, spinWait } from "./spin-wait.ts";
import { deadlockMessage, isNeverAnswered, pastCallLimit, type SandboxError, type SandboxRunOutcome, type SandboxRunRequest, wallBudgetMs } from "./sandbox-driver.ts";

export type { IsolateRunnerOptions, IsolateRunRequest, SerializedToolResult } from "./isolate-common.ts";

/** How often the watchdog samples CPU time, disposal and stalls, ms. */
export const WATCHDOG_INTERVAL_MS = 20;

/** Result deliveries per run tracked to their completion (see `ActiveRun.flushResults`). */
const TRACKED_DELIVERIES = 2;

/** What {@link ActiveRun} needs of its runner. */
interface RunOwner {
  readonly isolate: ivm.Isolate;
  /** Budget of the host's spin after each hand-off to the isolate, µs (see spin-wait.ts). */
  readonly spinWaitUs: number;
  lastHeapBytes: number;
  readonly disposedByOwner: boolean;
  detach(run: ActiveRun): void;
}

/** Runs scripts in one isolate; see the module comment for the life of a run. */
export class IsolateRunner implements PooledRunner {
  /** The isolate's heap limit, MiB. */
  readonly memoryLimitMb: number;
  readonly #isolate: ivm.Isolate;
  readonly #prelude: ivm.Script;
  /** One callback per isolate; it forwards frames to the run in progress, if any. */
  readonly #send: ivm.Callback;
  readonly #scripts: ScriptCache;
  readonly #owner: RunOwner;
  /** The run in progress, where the isolate's frames go (see {@link frameCallback}). */
  readonly #sink: FrameSink<ActiveRun> = { active: undefined };
  #prepared: Promise<PreparedContext> | undefined;
  /** What {@link #prepared} resolved to, once it has: a run takes it without an await. */
  #ready: PreparedContext | undefined;
  /** The tool names of the last run: the next context is prepared with them staged. */
  #lastToolNames: readonly string[] | undefined;
  #runs = 0;
  #busy = false;

  /** Creates the isolate and compiles the prelude. Throws `ChainRuntimeError` `SANDBOX_FAILED` if the prelude is missing. */
  constructor(options: IsolateRunnerOptions) {
    this.memoryLimitMb = options.memoryLimitMb;
    const isolate = new ivm.Isolate({ memoryLimit: options.memoryLimitMb });
    this.#isolate = isolate;
    this.#scripts = new ScriptCache(isolate);
    this.#prelude = compilePrelude(isolate, options.preludeSource ?? getPreludeSource());
    this.#send = frameCallback(this.#sink);
    const owner: RunOwner = {
      isolate,
      spinWaitUs: isSpinWaitUs(options.spinWaitUs) ? options.spinWaitUs : DEFAULT_SPIN_WAIT_US,
      lastHeapBytes: 0,
      disposedByOwner: false,
      detach: (run) => {
        if (this.#sink.active === run) this.#sink.active = undefined;
      },
    };
    this.#owner = owner;
  }

  /** Runs completed in this isolate. */
  get runs(): number {
    return this.#runs;
  }

  /** True once the isolate is gone (limit hit, cancellation, OOM, {@link dispose}). */
  get isDisposed(): boolean {
    return this.#isolate.isDisposed;
  }

  /** True while a run is in progress. */
  get isBusy(): boolean {
    return this.#busy;
  }

  /** Used heap at the end of the last run, bytes. */
  get heapBytes(): number {
    return this.#owner.lastHeapBytes;
  }

  /**
   * Creates the next run's context with the prelude installed, if not already under way.
   * Rejects when the isolate is disposed.
   */
  prepare(): Promise<void> {
    if (this.#prepared === undefined) {
      const preparing = this.#createContext();
      this.#prepared = preparing;
      preparing.then((prepared) => {
        if (this.#prepared === preparing) this.#ready = prepared;
      }, noop);
    }
    return this.#prepared.then(noop);
  }

  /** Disposes the isolate; a run in progress ends as `crash`. Idempotent. */
  dispose(): void {
    (this.#owner as { disposedByOwner: boolean }).disposedByOwner = true;
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }

  async #createContext(): Promise<PreparedContext> {
    const context = await this.#isolate.createContext();
    try {
      // Tasks queued back to back on the isolate's thread, which runs them in order with no wait
      // between (a second `set` costs ~1 µs of isolate CPU there, measured): the prelude finds
      // `send` and the last run's tool names on the global when it starts, builds their `tools`
      // object as it loads, off the critical path of a run with the same names, and one wait
      // covers all.
      const stagedTools = this.#lastToolNames;
      const [, , bridge] = await Promise.all([
        context.global.set(BRIDGE_GLOBALS.send, this.#send),
        stagedTools === undefined ? undefined : context.global.set(BRIDGE_GLOBALS.tools, JSON.stringify(stagedTools)),
        this.#prelude.run(context, { reference: true }) as Promise<ivm.Reference<Bridge>>,
      ]);
      if (bridge.typeof !== "function") throw new Error("the prelude did not hand over its bridge");
      return stagedTools === undefined ? { context, bridge } : { context, bridge, stagedTools };
    } catch (error) {
      context.release();
      throw error;
    }
  }

  /**
   * Runs one script. Never rejects for anything the script does; rejects only when called while
   * another run is in progress (a bug in the owner). After it settles, check
   * {@link isDisposed}: a disposed runner must be dropped.
   */
  async run(request: IsolateRunRequest): Promise<SandboxRunOutcome> {
    if (this.#busy) throw new Error("IsolateRunner.run called while a run is in progress");
    this.#busy = true;
    try {
      if (request.signal?.aborted) return { status: "cancelled", wallMs: 0, cpuMs: 0, heapBytes: this.#owner.lastHeapBytes };
      // A ready context and a cached script: the run's tasks are queued in this very call, before
      // anything else is done (see startRun); the caller's own bookkeeping after this call
      // returns then runs while the isolate's thread wakes up.
      let prepared = this.#ready;
      const preparing = this.#prepared;
      this.#ready = undefined;
      this.#prepared = undefined;
      if (prepared === undefined) {
        try {
          prepared = await (preparing ?? this.#createContext());
        } catch (error) {
          this.dispose();
          return sandboxFailure(`could not create a context: ${describeThrown(error)}`);
        }
      }
      let outcome: SandboxRunOutcome | Promise<SandboxRunOutcome>;
      try {
        // A cached script is run without an await. A script this isolate has not seen is compiled
        // and run in the run's own task (no compile round trip first: -8 to -14% for a new 2 KB
        // script, interleaved A/B); one that comes back is compiled into the cache, then run.
        let script: ivm.Script | SandboxError | undefined = this.#scripts.get(request);
        if (script === undefined && this.#scripts.seenBefore(request)) script = await this.#scripts.compile(request);
        if (this.#isolate.isDisposed) {
          // Disposed while the context was prepared or the script compiled: nothing can run.
          outcome = sandboxFailure("the isolate was disposed before the run started");
        } else if (script === undefined || script instanceof ivm.Script) {
          const started = startRun(prepared, request, script);
          const active = new ActiveRun(this.#owner, prepared, request);
          this.#sink.active = active;
          outcome = active.follow(started);
        } else {
          outcome = { status: "error", error: script, wallMs: 0, cpuMs: 0, heapBytes: this.#owner.lastHeapBytes };
        }
        if (!sameNames(this.#lastToolNames, request.toolNames)) this.#lastToolNames = stageableToolNames(request.toolNames);
        outcome = await outcome;
      } finally {
        releaseContext(prepared);
      }
      this.#runs++;
      return outcome;
    } finally {
      this.#busy = false;
    }
  }
}

/**
 * The state of one run, as an object rather than closures: the isolate's callback, timers and
 * the abort listener call its methods, and {@link close} drops everything it holds.
 */
class ActiveRun {
  readonly #owner: RunOwner;
  #prepared: PreparedContext | undefined;
  #request: IsolateRunRequest | undefined;
  #finish: ((outcome: SandboxRunOutcome) => void) | undefined;
  readonly #limits: SandboxRunRequest["limits"];
  readonly #wallStart = performance.now();
  /** When the run's wall time is up: what is left of the chain's budget (see `budgetSpentMs`). */
  readonly #wallEnd: number;
  readonly #cpuStart: bigint;
  readonly #cpuLimitNs: bigint;
  readonly #hostOutputCap: number;
  /** Calls sent to the host and not answered yet. */
  readonly #pending = new Set<number>();
  /** Calls the host will never answer (see neverAnswered), dropped from #pending. */
  #neverAnswered = 0;
  /** Index of the last call accepted; calls come with increasing indexes. */
  #lastCallIndex = -1;
  /** Fires when the run ends; every call's `signal`. */
  #calls: AbortController | undefined;
  /** Results waiting for the end of this host tick, to enter the isolate together. */
  readonly #out = new ResultQueue();
  #cpuNs = 0n;
  /** Used heap at the last tracked read, bytes. */
  #heapBytes: number;
  /** The listener on `request.signal`, while the run lasts. */
  #abortHook: AbortHook | undefined;
  /** Tasks queued on the isolate whose completion has not come back yet. */
  #tasks = 0;
  /** Deliveries sent so far; past {@link TRACKED_DELIVERIES} they go untracked. */
  #deliveries = 0;
  /** True once a delivery went untracked: only a read queued at the end then tells that the isolate is idle. */
  #untracked = false;
  #framesReceived = 0;
  #resultsSent = 0;
  #hostOutputBytes = 0;
  #settled: Settled | undefined;
  /** Promise rejections the script left unhandled (see `SandboxRunOutcome.unhandledRejections`). */
  #rejections: SandboxError[] | undefined;
  #closed = false;
  #probing = false;
  #disposedByHost = false;

  constructor(owner: RunOwner, prepared: PreparedContext, request: IsolateRunRequest) {
    this.#owner = owner;
    this.#prepared = prepared;
    this.#request = request;
    this.#limits = request.limits;
    this.#wallEnd = this.#wallStart + wallBudgetMs(request);
    this.#heapBytes = owner.lastHeapBytes;
    this.#cpuStart = cpuTimeOf(owner.isolate);
    this.#cpuLimitNs = BigInt(request.limits.cpuTimeMs) * 1_000_000n;
    this.#hostOutputCap = request.limits.maxOutputBytes + OUTPUT_TRUNCATED_MARKER.length + 8;
    // Counted in the process's runs in flight (see spin-wait.ts) until it closes, which every run does.
    spinWait.runStarted();
  }

  /**
   * Follows the run {@link startRun} started (`started`, or `undefined` when its tasks could not
   * be queued: the isolate is gone); resolves with the outcome. Nothing the isolate sends can
   * reach this run before the current host turn ends, so this bookkeeping (watchdog, abort
   * listener, the tracked heap read) runs while the isolate's thread wakes up for the run.
   */
  follow(started: Promise<unknown> | undefined): Promise<SandboxRunOutcome> {
    const request = this.#request as IsolateRunRequest;
    const { promise, resolve } = Promise.withResolvers<SandboxRunOutcome>();
    this.#finish = resolve;
    if (started === undefined) {
      this.#onIsolateGone();
      return promise;
    }
    started.catch((error: unknown) => this.#onStartRejected(error));
    watch(this);
    if (request.signal !== undefined) {
      this.#abortHook = AbortHook.attach(request.signal, this);
    }
    this.#track();
    this.#spin();
    return promise;
  }

  /** A frame from the prelude (see `FRAME_KIND`). */
  onFrame(kind: FrameField, a: FrameField, b: FrameField, c: FrameField, d: FrameField): void {
    this.#framesReceived++;
    if (this.#settled !== undefined) return;
    if (kind === FRAME_KIND.call) {
      spinWait.end();
      this.#onCall(a, b, c, d);
    } else if (kind === LOCAL_FRAME_KIND.calls) {
      spinWait.end();
      if (!Array.isArray(a)) return;
      for (let i = 0; i + 3 < a.length && this.#settled === undefined; i += 4) this.#onCall(a[i], a[i + 1], a[i + 2], a[i + 3]);
    } else if (kind === FRAME_KIND.log) {
      this.#hostOutputBytes = forwardLog(this.#request, a, b, this.#hostOutputBytes, this.#hostOutputCap);
    } else if (kind === FRAME_KIND.clock) {
      forwardClock(this.#request, a);
    } else if (kind === FRAME_KIND.done) {
      spinWait.end();
      this.#settle(settledFromDone(a, b, c, d));
    }
  }

  #onCall(callIndex: FrameField, tool: FrameField, argsJson: FrameField, refusal: FrameField): void {
    const request = this.#request;
    const call = callFromFrame(callIndex, tool, argsJson, refusal, this.#limits.maxArgumentBytes);
    // The prelude numbers calls in program order and they arrive in order: an index at or below
    // the last one is a forged or repeated frame (a script that hooked the prelude's queue), dropped.
    if (request === undefined || call === undefined || call.callIndex <= this.#lastCallIndex) return;
    this.#lastCallIndex = call.callIndex;
    if (pastCallLimit(call.callIndex, request.maxToolCalls)) {
      this.kill("calls");
      return;
    }
    this.#pending.add(call.callIndex);
    this.#calls ??= new AbortController();
    dispatchCall(request, call, this.#calls.signal, this.#deliver);
  }

  readonly #deliver = (callIndex: number, result: InvocationResult | SerializedToolResult): void => {
    if (this.#settled !== undefined || !this.#pending.delete(callIndex)) return;
    if (isNeverAnswered(result)) {
      this.#neverAnswered++;
      // Never answered (see neverAnswered): nothing enters; with nothing else out, the results
      // held for this tick go in now, or the script may be waiting on nothing (a stall probe says).
      if (this.#pending.size > 0) return;
      if (this.#out.length > 0) this.flushResults();
      else this.#checkStall();
      return;
    }
    // Counted when queued, so a stall probe answered before the flush cannot match (see #checkStall).
    this.#resultsSent++;
    this.#out.push(callIndex, result);
    // The last outstanding answer goes in at once (a sequential script waits for nothing else).
    // While other calls are still out, results wait for the end of this host tick: all that
    // settle in the same tick (a `Promise.all`, also in waves of maxConcurrentCalls) go in as one
    // task. setImmediate, not process.nextTick: isolated-vm runs the host side of an ignored
    // callback with a V8 microtask checkpoint but no Node callback scope, so a tick queued from
    // there would wait for an unrelated event.
    if (this.#pending.size === 0) this.flushResults();
    else if (this.#out.length === 1) setImmediate(flushResults, this);
  };

  /** Sends the results of this tick into the isolate: one call for all of them (or per bounded batch). */
  flushResults(): void {
    while (this.#out.length > 0 && !this.#closed) this.#flushBatch();
  }

  #flushBatch(): void {
    const args = this.#out.take();
    const prepared = this.#prepared;
    if (args === undefined || this.#settled !== undefined || prepared === undefined) {
      this.#out.clear();
      return;
    }
    // The first deliveries are tracked to their completion, so a short script (the common case:
    // a few calls) ends without a probe. A script that keeps calling gets the rest untracked (a
    // heap read costs the host a completion each), and one heap read at its end.
    const tracked = this.#deliveries++ < TRACKED_DELIVERIES;
    if (!tracked) this.#untracked = true;
    try {
      // `applyIgnored`: isolated-vm would fail an awaited delivery whose microtasks left a promise
      // rejection unhandled (see #onRejection), but awaiting each costs the host a completion on
      // the chain's critical path: a one-call chain 5-10% slower, measured. So on this driver only
      // the start's unhandled rejections are reported (the process driver's entries report all).
      prepared.bridge.applyIgnored(undefined, args);
    } catch {
      this.#onIsolateGone();
      return;
    }
    if (tracked) this.#track();
    this.#spin();
  }

  /** After a hand-off to the isolate: keeps the host awake for its answer (see spin-wait.ts), unless the run already closed. */
  #spin(): void {
    if (!this.#closed) spinWait.begin(this.#owner.spinWaitUs);
  }

  /**
   * Queues a heap read right behind the tasks just queued. The isolate's thread runs its tasks
   * in order and does not sleep between tasks queued back to back, so the read costs a few µs
   * there; its completion says that those tasks (their microtasks and frames included) are done,
   * and carries the heap as they left it. When the run has settled by then, that is the end of
   * the run, measured without any synchronous call into the isolate (which would hand its V8
   * lock to this thread and back: tens of µs each way).
   */
  #track(): void {
    let read: Promise<ivm.HeapStatistics>;
    try {
      read = this.#owner.isolate.getHeapStatistics();
    } catch {
      this.#onIsolateGone();
      return;
    }
    this.#tasks++;
    read.then(
      (heap) => this.#taskDone(heap.used_heap_size),
      () => this.#taskDone(undefined),
    );
  }

  /** Tracked tasks finished (see {@link #track}); `heapBytes` is undefined when the read failed. */
  #taskDone(heapBytes: number | undefined): void {
    this.#tasks--;
    if (heapBytes !== undefined) this.#heapBytes = heapBytes;
    if (this.#tasks > 0 || this.#closed) return;
    if (this.#owner.isolate.isDisposed) {
      this.#onIsolateGone();
      return;
    }
    if (this.#settled !== undefined) {
      if (!this.#untracked) this.#close(this.#heapBytes);
    } else if (!this.#untracked && !this.#awaitingHost()) {
      this.#checkStall();
    }
  }

  /** The script's outcome is known; wait until the isolate is idle, then close. */
  #settle(outcome: Settled): void {
    if (this.#settled !== undefined) return;
    this.#settled = outcome;
    this.#abortPending();
    // A frame comes from inside a task, so the tracked read queued behind it (see #track) is
    // still to come, and closes the run. Once deliveries went untracked, or with nothing in
    // flight (a stall found by the watchdog), one more read queued behind whatever is left does.
    if (this.#tasks > 0 && !this.#untracked) return;
    this.#untracked = false;
    this.#track();
  }

  #probe(): Promise<unknown> {
    const prepared = this.#prepared;
    if (prepared === undefined) return Promise.reject(new Error("the run is closed"));
    try {
      return prepared.bridge.apply(undefined, [BRIDGE_OP.probe]);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  #abortPending(): void {
    this.#out.clear();
    if (this.#pending.size > 0) this.#calls?.abort(new Error("the chain ended before this call finished"));
    this.#pending.clear();
  }

  /** Ends the run early: disposes the isolate (which stops the script) and closes. */
  kill(reason: KillReason): void {
    if (this.#closed) return;
    this.#sampleCpu();
    const isolate = this.#owner.isolate;
    if (!isolate.isDisposed) {
      this.#disposedByHost = true;
      isolate.dispose();
    }
    this.#abortPending();
    this.#settled = killOutcome(reason, this.#limits, this.#request?.maxToolCalls);
    this.#close(this.#owner.lastHeapBytes);
  }

  /** The isolate vanished without the host disposing it: isolated-vm does that on OOM. */
  #onIsolateGone(): void {
    if (this.#closed) return;
    this.kill(this.#disposedByHost || this.#owner.disposedByOwner ? "crash" : "memory");
  }

  /** The watchdog's tick: disposal, wall time, CPU limit, stall. */
  tick(now: number): void {
    if (this.#owner.isolate.isDisposed) {
      this.#onIsolateGone();
      return;
    }
    if (now >= this.#wallEnd) {
      this.kill("timeout");
      return;
    }
    this.#sampleCpu();
    if (this.#cpuNs > this.#cpuLimitNs) {
      this.kill("cpu");
      return;
    }
    this.#checkStall();
  }

  /** True while a call is out on the host or its result has not entered the isolate yet. */
  #awaitingHost(): boolean {
    return this.#pending.size > 0 || this.#out.length > 0;
  }

  #checkStall(): void {
    if (this.#probing || this.#settled !== undefined || this.#tasks > 0 || this.#awaitingHost()) return;
    this.#probing = true;
    this.#probe().then(
      (state) => {
        this.#probing = false;
        if (this.#settled !== undefined || this.#tasks > 0 || this.#awaitingHost()) return;
        // "done" with no done frame in: the prelude ended but its report was lost (nothing can
        // come any more either way), as the sandbox child's runner ends it.
        if (state === "done" || state === `${this.#framesReceived},${this.#resultsSent}`) {
          this.#settle({
            status: "error",
            error: {
              phase: "limit",
              name: "DeadlockError",
              message: deadlockMessage(this.#neverAnswered),
            },
          });
        }
      },
      () => {
        this.#probing = false;
        if (this.#owner.isolate.isDisposed) this.#onIsolateGone();
      },
    );
  }

  #onStartRejected(error: unknown): void {
    // A frame came from the start: the prelude ran, so this is the script's unhandled rejection.
    if (this.#framesReceived > 0) {
      this.#onRejection(error);
      return;
    }
    if (this.#owner.isolate.isDisposed) {
      this.#onIsolateGone();
      return;
    }
    // Only a failure before the prelude started (the script's source did not compile) ends the run.
    this.#probe().then(
      (state) => {
        if (state === "not-started") this.#settle({ status: "error", error: thrownToError(error) });
        else this.#onRejection(error);
      },
      () => (this.#owner.isolate.isDisposed ? this.#onIsolateGone() : undefined),
    );
  }

  /**
   * A task on the isolate failed after the prelude started: isolated-vm fails a task whose
   * microtasks left a promise rejected with no handler (the script's own business: as in an
   * async function, a stray rejection is not a throw; the run goes on), or because the isolate is
   * gone. A rejection is kept for the outcome (see `noteRejection`), and becomes a warning.
   */
  #onRejection(error: unknown): void {
    if (this.#closed) return;
    if (this.#owner.isolate.isDisposed) {
      this.#onIsolateGone();
      return;
    }
    this.#rejections = noteRejection(this.#rejections, error);
  }

  #sampleCpu(): void {
    const isolate = this.#owner.isolate;
    if (!isolate.isDisposed) this.#cpuNs = isolate.cpuTime - this.#cpuStart;
  }

  #close(heapBytes: number): void {
    if (this.#closed) return;
    this.#closed = true;
    unwatch(this);
    spinWait.end();
    spinWait.runEnded();
    if (this.#abortHook !== undefined) {
      this.#request?.signal?.removeEventListener("abort", this.#abortHook);
      this.#abortHook.run = undefined;
      this.#abortHook = undefined;
    }
    this.#sampleCpu();
    this.#owner.lastHeapBytes = heapBytes;
    this.#owner.detach(this);
    const finish = this.#finish;
    const outcome = closingOutcome(this.#settled, this.#rejections, performance.now() - this.#wallStart, Number(this.#cpuNs) / 1e6, heapBytes);
    // Drop everything this run holds before handing the outcome over (see the module comment).
    this.#finish = undefined;
    this.#request = undefined;
    this.#prepared = undefined;
    this.#calls = undefined;
    this.#rejections = undefined;
    finish?.(outcome);
  }
}

/**
 * Queues a run's first two tasks on the isolate's thread, back to back (it runs `configure`,
 * then the script, with no wait between): `script`, or the request's source compiled in the
 * same task when it is not cached. This is the first thing a run does: measured through
 * `ToolChainTool`, host work before these posts delays a one-call chain by more than its own
 * duration, and the same work after them costs nothing (the isolate's thread takes longer to
 * wake than it does). Returns the start's completion, or `undefined` when the isolate is gone.
 */
function startRun(prepared: PreparedContext, request: IsolateRunRequest, script: ivm.Script | undefined): Promise<unknown> | undefined {
  try {
    prepared.bridge.applyIgnored(undefined, [BRIDGE_OP.configure, configJson(request, prepared)]);
    const started = script === undefined ? prepared.context.eval(wrapScript(request.script), { filename: request.scriptName }) : script.run(prepared.context);
    // Handled here too: the run's own handler is attached a few steps later (ActiveRun.follow),
    // and nothing between may leave a rejection unhandled for a moment.
    started.catch(noop);
    return started;
  } catch {
    return undefined;
  }
}

/**
 * One watchdog for every run in the process: a single interval (running only while some run
 * is) instead of a timer and an interval per run. Wall time is checked on each tick too, so a
 * run ends at most one interval past `totalTimeoutMs`.
 */
const watched: ActiveRun[] = [];
let watchdog: ReturnType<typeof setInterval> | undefined;

function watch(run: ActiveRun): void {
  watched.push(run);
  watchdog ??= setInterval(tickAll, WATCHDOG_INTERVAL_MS);
}

function unwatch(run: ActiveRun): void {
  const index = watched.indexOf(run);
  if (index < 0) return;
  // Swap-remove: no reallocation for the usual handful of runs.
  watched[index] = watched[watched.length - 1] as ActiveRun;
  watched.pop();
  if (watched.length === 0 && watchdog !== undefined) {
    clearInterval(watchdog);
    watchdog = undefined;
  }
}

function tickAll(): void {
  const now = performance.now();
  // A tick can end runs (and unwatch them): walk a snapshot.
  for (const run of watched.slice()) run.tick(now);
}

/** The isolate's CPU time, ns; 0 once it is gone (the run then ends as its outcome says). */
function cpuTimeOf(isolate: ivm.Isolate): bigint {
  try {
    return isolate.cpuTime;
  } catch {
    return 0n;
  }
}

function flushResults(run: ActiveRun): void {
  run.flushResults();
}

function noop(): void {
  // nothing to do
}

/**
 * The isolate's frame callback, delivering to the run in `sink`. Made here, apart from any
 * runner: isolated-vm holds a Callback's function for good (it has no way to release one), so a
 * function that reached its runner (`this`, or a closure of the runner's constructor) kept every
 * runner and its isolate from being collected once disposed.
 */
function frameCallback(sink: FrameSink<ActiveRun>): ivm.Callback {
  return new ivm.Callback((kind: FrameField, a: FrameField, b: FrameField, c: FrameField, d: FrameField) => sink.active?.onFrame(kind, a, b, c, d), { ignored: true });
}
