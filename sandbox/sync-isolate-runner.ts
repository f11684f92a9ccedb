/**
 * One isolated-vm isolate driven synchronously: every entry into the isolate (configure and
 * start, each batch of results) is a `*Sync` call on the caller's thread, bounded by a timeout,
 * and returns only once the isolate is idle again (isolated-vm drains the isolate's microtasks
 * before it returns, and the timeout covers them). No thread hand-off per call: an entry costs
 * a few µs where a task on the isolate's own thread costs tens.
 *
 * The price is that script code runs on the caller's thread: while the script computes, the
 * caller's event loop waits, for at most the run's remaining CPU budget per entry. That is what
 * a disposable sandbox child wants (it has nothing else to do, and the host keeps its own kill
 * timer), and what an in-process host may choose when latency matters more than a responsive
 * event loop during script CPU (`InProcessSandboxDriver({ drive: "sync" })`).
 *
 * Life of a run:
 *
 * ```
 *  prepare() ─ createContextSync + set send + run prelude (off the critical path, after a run)
 *  run() ─ enter(configure + script.runSync) ─ frames buffered during the entry
 *      │     └ after the entry: frames handled in order (calls dispatched, console forwarded)
 *      ├─ results arrive ─ enter(bridge.resolve(results of this tick)) ─ frames handled …
 *      ├─ done frame ─ the isolate is idle when the entry returns ─ outcome at once
 *      ├─ entry returns, no call out, no result queued, not done ─ DeadlockError at once
 *      ├─ entry times out ─ CpuLimitError (or TimeoutError past totalTimeoutMs) ─ dispose
 *      └─ wall timer (while the script waits on the host) / cancel ─ dispose ─ outcome
 * ```
 *
 * Invariants:
 * - Each entry's timeout is the smaller of the CPU budget left (`cpuTimeMs` minus the isolate's
 *   CPU time so far) and the wall time left (`totalTimeoutMs`); the timeout is wall time of the
 *   entry, which is never less than the CPU time it measures, so a script never runs past its
 *   CPU limit, and on a busy machine may be stopped slightly before it.
 * - No host code runs inside an entry: the prelude's `send` only buffers frames, handled once the
 *   entry returns, so a tool, a log listener or a cancel can never re-enter or dispose the
 *   isolate from within its own call stack.
 * - Only strings and numbers cross, as in {@link IsolateRunner}; no host object or Reference is
 *   handed to the isolate.
 * - After any limit hit, cancellation or fault the isolate is disposed and the runner must be
 *   dropped ({@link SyncIsolateRunner.isDisposed}).
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
  releaseContext,
  ResultQueue,
  sameNames,
  stageableToolNames,
  type ResolveArgs,
  sandboxFailure,
  ScriptCache,
  settledFromDone,
  noteRejection,
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
} from "./isolate-common.ts";
import { getPreludeSource } from "./prelude-bundle.ts";
import { deadlockMessage, isNeverAnswered, pastCallLimit, type SandboxError, type SandboxLimits, type SandboxRunOutcome, wallBudgetMs } from "./sandbox-driver.ts";

/**
 * An outside watch over each synchronous entry (the sandbox child's `EntryGuard`): isolated-vm
 * does not enforce the heap limit of an isolate run on the main thread (laverdet/isolated-vm#460),
 * and a script stuck where V8 checks no interrupts outlives the entry's timeout; a thread of its
 * own can still see both and end the process.
 */
export interface EntryWatch {
  /** An entry starts; it should return by `deadline` (epoch ms), within `memoryLimitMb` of heap. */
  enter(deadline: number, memoryLimitMb: number): void;
  /** The entry returned. */
  leave(): void;
}

/** Options of a {@link SyncIsolateRunner}. */
export interface SyncIsolateRunnerOptions extends IsolateRunnerOptions {
  /** Told of every entry; without one, nothing bounds a script's memory (see {@link EntryWatch}). */
  readonly watch?: EntryWatch;
}

/** isolated-vm's message when a `timeout` ends a synchronous call. */
const TIMED_OUT_MESSAGE = "Script execution timed out.";

/** Runs scripts in one isolate, synchronously; see the module comment. */
export class SyncIsolateRunner implements PooledRunner {
  /** The isolate's heap limit, MiB. */
  readonly memoryLimitMb: number;
  readonly #isolate: ivm.Isolate;
  readonly #prelude: ivm.Script;
  readonly #scripts: ScriptCache;
  /** One callback per isolate; it buffers frames for the run in progress, if any. */
  readonly #send: ivm.Callback;
  /** The run in progress, where the isolate's frames go (see {@link frameCallback}). */
  readonly #sink: FrameSink<SyncRun> = { active: undefined };
  #prepared: PreparedContext | undefined;
  /** The tool names of the last run: the next context is prepared with them staged. */
  #lastToolNames: readonly string[] | undefined;
  #heapBytes = 0;
  #runs = 0;
  #busy = false;
  readonly #watch: EntryWatch | undefined;

  /** Creates the isolate and compiles the prelude. */
  constructor(options: SyncIsolateRunnerOptions) {
    this.memoryLimitMb = options.memoryLimitMb;
    this.#watch = options.watch;
    const isolate = new ivm.Isolate({ memoryLimit: options.memoryLimitMb });
    this.#isolate = isolate;
    this.#scripts = new ScriptCache(isolate);
    this.#prelude = compilePrelude(isolate, options.preludeSource ?? getPreludeSource());
    this.#send = frameCallback(this.#sink);
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
    return this.#heapBytes;
  }

  /** Creates the next run's context with the prelude installed (synchronously, ~1 ms), if not already there. */
  prepare(): Promise<void> {
    try {
      this.#prepared ??= this.#createContext();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** Disposes the isolate; a run in progress ends as a crash. Idempotent. */
  dispose(): void {
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
    // A run waiting on the host would otherwise wait for its wall timer.
    this.#sink.active?.kill("crash");
  }

  #createContext(): PreparedContext {
    const context = this.#isolate.createContextSync();
    try {
      context.global.setSync(BRIDGE_GLOBALS.send, this.#send);
      // The last run's tools: the prelude builds their `tools` object as it loads, after a run,
      // off the critical path of the next one with the same names.
      const stagedTools = this.#lastToolNames;
      if (stagedTools !== undefined) context.global.setSync(BRIDGE_GLOBALS.tools, JSON.stringify(stagedTools));
      const bridge = this.#prelude.runSync(context, { reference: true }) as ivm.Reference<Bridge>;
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
    if (this.#busy) throw new Error("SyncIsolateRunner.run called while a run is in progress");
    if (request.signal?.aborted) return { status: "cancelled", wallMs: 0, cpuMs: 0, heapBytes: this.#heapBytes };
    this.#busy = true;
    let prepared: PreparedContext;
    try {
      prepared = this.#prepared ?? this.#createContext();
    } catch (error) {
      this.#busy = false;
      this.dispose();
      return sandboxFailure(`could not create a context: ${describeThrown(error)}`);
    } finally {
      this.#prepared = undefined;
    }
    try {
      const script = this.#scripts.compileSync(request);
      if (!(script instanceof ivm.Script)) {
        return { status: "error", error: script, wallMs: 0, cpuMs: 0, heapBytes: this.#heapBytes };
      }
      if (!sameNames(this.#lastToolNames, request.toolNames)) this.#lastToolNames = stageableToolNames(request.toolNames);
      const run = new SyncRun(this.#isolate, prepared, request, this.#watch);
      this.#sink.active = run;
      const outcome = await run.start(script);
      if (this.#sink.active === run) this.#sink.active = undefined;
      if (outcome.heapBytes > 0) this.#heapBytes = outcome.heapBytes;
      this.#runs++;
      return outcome;
    } finally {
      releaseContext(prepared);
      this.#busy = false;
    }
  }
}

/** The state of one synchronous run; {@link close} drops everything it holds. */
class SyncRun {
  /** Frames the prelude sent during the current entry, 5 fields each (kind, a, b, c, d). */
  readonly frames: FrameField[] = [];
  readonly #isolate: ivm.Isolate;
  #prepared: PreparedContext | undefined;
  #request: IsolateRunRequest | undefined;
  #finish: ((outcome: SandboxRunOutcome) => void) | undefined;
  readonly #limits: SandboxLimits;
  readonly #wallStart = performance.now();
  /** When the run's wall time is up: what is left of the chain's budget (see `budgetSpentMs`). */
  readonly #wallEnd: number;
  readonly #cpuStart: bigint;
  readonly #hostOutputCap: number;
  /** Index of the last call accepted; calls come with increasing indexes. */
  #lastCallIndex = -1;
  readonly #pending = new Set<number>();
  /** Calls the host will never answer (see neverAnswered), dropped from #pending. */
  #neverAnswered = 0;
  #calls: AbortController | undefined;
  readonly #out = new ResultQueue();
  #flushQueued = false;
  #cpuNs = 0n;
  #hostOutputBytes = 0;
  #wallTimer: ReturnType<typeof setTimeout> | undefined;
  #abortHook: AbortHook | undefined;
  #settled: Settled | undefined;
  /** Promise rejections the script left unhandled (see `SandboxRunOutcome.unhandledRejections`). */
  #rejections: SandboxError[] | undefined;
  #inside = false;
  /** A kill asked for during an entry (a host microtask run in the callback can abort the signal), done once it returns. */
  #deferredKill: KillReason | undefined;
  #closed = false;
  /** Set by a `crash` kill (the owner disposing the runner), so the isolate's disappearance is not read as OOM. */
  #ownerDisposing = false;
  readonly #cpuLimitNs: bigint;
  readonly #watch: EntryWatch | undefined;

  constructor(isolate: ivm.Isolate, prepared: PreparedContext, request: IsolateRunRequest, watch: EntryWatch | undefined) {
    this.#watch = watch;
    this.#isolate = isolate;
    this.#prepared = prepared;
    this.#request = request;
    this.#limits = request.limits;
    this.#wallEnd = this.#wallStart + wallBudgetMs(request);
    this.#cpuStart = isolate.cpuTime;
    this.#hostOutputCap = request.limits.maxOutputBytes + OUTPUT_TRUNCATED_MARKER.length + 8;
    this.#cpuLimitNs = BigInt(request.limits.cpuTimeMs) * 1_000_000n;
  }

  /** Configures the prelude and starts the script; resolves with the outcome. */
  start(script: ivm.Script): Promise<SandboxRunOutcome> {
    const request = this.#request as IsolateRunRequest;
    const prepared = this.#prepared as PreparedContext;
    const { promise, resolve } = Promise.withResolvers<SandboxRunOutcome>();
    this.#finish = resolve;
    if (request.signal !== undefined) {
      this.#abortHook = AbortHook.attach(request.signal, this);
    }
    const config = configJson(request, prepared);
    this.#enter((timeout) => {
      prepared.bridge.applySync(undefined, [BRIDGE_OP.configure, config]);
      script.runSync(prepared.context, { timeout });
    });
    return promise;
  }

  /**
   * One entry into the isolate with the time left as its timeout, then the frames it sent, in
   * order, and what the run's state now implies (outcome, deadlock, limit).
   */
  #enter(body: (timeout: number) => void): void {
    if (this.#closed) return;
    const cpuLeftMs = this.#limits.cpuTimeMs - Number(this.#cpuNs) / 1e6;
    const wallLeftMs = this.#wallEnd - performance.now();
    const left = Math.min(cpuLeftMs, wallLeftMs);
    if (left <= 0) {
      this.kill(wallLeftMs <= 0 ? "timeout" : "cpu");
      return;
    }
    const boundByWall = wallLeftMs <= cpuLeftMs;
    let failure: unknown;
    let failed = false;
    const timeout = Math.max(1, Math.ceil(left));
    this.#inside = true;
    this.#watch?.enter(Date.now() + timeout, this.#limits.memoryLimitMb);
    try {
      body(timeout);
    } catch (error) {
      failed = true;
      failure = error;
    } finally {
      this.#watch?.leave();
      this.#inside = false;
    }
    this.#sampleCpu();
    this.#handleFrames();
    if (this.#deferredKill !== undefined) {
      this.kill(this.#deferredKill);
      return;
    }
    if (failed) {
      this.#onEntryFailed(failure, boundByWall);
      if (this.#closed) return;
    }
    if (this.#cpuNs > this.#cpuLimitNs) {
      this.kill("cpu");
      return;
    }
    if (this.#settled !== undefined) {
      this.#quiesced();
      return;
    }
    if (this.#out.length > 0) {
      // Results that settled while the entry ran (host microtasks can run in a callback).
      this.#scheduleFlush();
      this.#armWallTimer();
      return;
    }
    if (this.#pending.size === 0) {
      this.#deadlocked();
      return;
    }
    this.#armWallTimer();
  }

  /** Nothing is out on the host and the isolate is idle: nothing can ever wake the script. */
  #deadlocked(): void {
    this.#settled = {
      status: "error",
      error: { phase: "limit", name: "DeadlockError", message: deadlockMessage(this.#neverAnswered) },
    };
    this.#quiesced();
  }

  #onEntryFailed(error: unknown, boundByWall: boolean): void {
    if (this.#isolate.isDisposed) {
      this.kill(this.#ownerDisposing ? "crash" : "memory");
      return;
    }
    const message = (error as { message?: unknown } | null)?.message;
    if (message === TIMED_OUT_MESSAGE) {
      this.kill(boundByWall ? "timeout" : "cpu");
      return;
    }
    // isolated-vm reports a promise rejection the entry's microtasks left unhandled as a throw:
    // the script's own business (as in an async function, a stray rejection is not a throw), kept
    // for the outcome's warning. Only a failure before the prelude started ends the run.
    if (this.#settled === undefined && this.#probe() === "not-started") this.#settled = { status: "error", error: thrownToError(error) };
    else this.#rejections = noteRejection(this.#rejections, error);
  }

  #probe(): unknown {
    try {
      return this.#prepared?.bridge.applySync(undefined, [BRIDGE_OP.probe]);
    } catch {
      return undefined;
    }
  }

  /** Handles the frames of the entry that just returned, in the order the prelude sent them. */
  #handleFrames(): void {
    const frames = this.frames;
    for (let i = 0; i + 4 < frames.length; i += 5) {
      if (this.#settled !== undefined) break;
      const kind = frames[i];
      const a = frames[i + 1];
      const b = frames[i + 2];
      if (kind === FRAME_KIND.call) {
        this.#onCall(a, b, frames[i + 3], frames[i + 4]);
      } else if (kind === LOCAL_FRAME_KIND.calls) {
        if (!Array.isArray(a)) continue;
        for (let j = 0; j + 3 < a.length && this.#settled === undefined; j += 4) this.#onCall(a[j], a[j + 1], a[j + 2], a[j + 3]);
      } else if (kind === FRAME_KIND.log) {
        this.#hostOutputBytes = forwardLog(this.#request, a, b, this.#hostOutputBytes, this.#hostOutputCap);
      } else if (kind === FRAME_KIND.clock) {
        forwardClock(this.#request, a);
      } else if (kind === FRAME_KIND.done) {
        this.#settled = settledFromDone(a, b, frames[i + 3], frames[i + 4]);
        this.#abortPending();
      }
    }
    const handled = frames.length > 0;
    frames.length = 0;
    if (handled) this.#request?.onFramesHandled?.();
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
    if (this.#settled !== undefined || this.#closed || !this.#pending.delete(callIndex)) return;
    // A call never answered (see neverAnswered) puts nothing in; the script may now wait on nothing.
    const answered = !isNeverAnswered(result);
    if (answered) this.#out.push(callIndex, result);
    else this.#neverAnswered++;
    // The last outstanding answer goes in at once; while others are out, every result that
    // settles in this turn of the event loop enters in one entry.
    if (this.#inside) return; // flushed (or found deadlocked) when the entry returns
    if (this.#pending.size > 0) {
      if (answered) this.#scheduleFlush();
    } else if (this.#out.length > 0) {
      this.#flushNow();
    } else {
      this.#deadlocked();
    }
  };

  #scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    setImmediate(flushResults, this);
  }

  /** Sends the queued results into the isolate in one entry. */
  flushResults(): void {
    this.#flushQueued = false;
    this.#flushNow();
  }

  #flushNow(): void {
    if (this.#out.length === 0 || this.#settled !== undefined || this.#closed || this.#inside) return;
    const prepared = this.#prepared as PreparedContext;
    const args = this.#out.take() as ResolveArgs;
    this.#clearWallTimer();
    this.#enter((timeout) => {
      prepared.bridge.applySync(undefined, args, { timeout });
    });
  }

  #armWallTimer(): void {
    if (this.#wallTimer !== undefined || this.#closed) return;
    const left = this.#wallEnd - performance.now();
    this.#wallTimer = setTimeout(wallTimeout, Math.max(0, left), this);
  }

  #clearWallTimer(): void {
    if (this.#wallTimer === undefined) return;
    clearTimeout(this.#wallTimer);
    this.#wallTimer = undefined;
  }

  #abortPending(): void {
    this.#out.clear();
    if (this.#pending.size > 0) this.#calls?.abort(new Error("the chain ended before this call finished"));
    this.#pending.clear();
  }

  /** Ends the run early: disposes the isolate and closes (deferred to the end of an entry in progress). */
  kill(reason: KillReason): void {
    if (this.#closed) return;
    if (this.#inside) {
      this.#deferredKill ??= reason;
      return;
    }
    if (reason === "crash") this.#ownerDisposing = true;
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
    this.#abortPending();
    this.#settled = killOutcome(reason, this.#limits, this.#request?.maxToolCalls);
    this.#close(0);
  }

  #quiesced(): void {
    let heapBytes = 0;
    try {
      heapBytes = this.#isolate.getHeapStatisticsSync().used_heap_size;
    } catch {
      this.kill(this.#ownerDisposing ? "crash" : "memory");
      return;
    }
    this.#abortPending();
    this.#close(heapBytes);
  }

  #sampleCpu(): void {
    if (!this.#isolate.isDisposed) this.#cpuNs = this.#isolate.cpuTime - this.#cpuStart;
  }

  #close(heapBytes: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearWallTimer();
    if (this.#abortHook !== undefined) {
      this.#request?.signal?.removeEventListener("abort", this.#abortHook);
      this.#abortHook.run = undefined;
      this.#abortHook = undefined;
    }
    const finish = this.#finish;
    const outcome = closingOutcome(this.#settled, this.#rejections, performance.now() - this.#wallStart, Number(this.#cpuNs) / 1e6, heapBytes);
    this.#finish = undefined;
    this.#request = undefined;
    this.#prepared = undefined;
    this.#calls = undefined;
    this.frames.length = 0;
    this.#rejections = undefined;
    finish?.(outcome);
  }
}

function flushResults(run: SyncRun): void {
  run.flushResults();
}

function wallTimeout(run: SyncRun): void {
  run.kill("timeout");
}

/**
 * The isolate's frame callback, buffering each frame for the run in `sink` (a synchronous
 * callback: called on this thread during an entry). Made here, apart from any runner: isolated-vm
 * holds a Callback's function for good, so one that reached its runner kept every runner and its
 * isolate from being collected once disposed (see isolate-runner.ts).
 */
function frameCallback(sink: FrameSink<SyncRun>): ivm.Callback {
  return new ivm.Callback((kind: FrameField, a: FrameField, b: FrameField, c: FrameField, d: FrameField) => {
    sink.active?.frames.push(kind, a, b, c, d);
  });
}
