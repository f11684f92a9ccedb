/**
 * The contract every sandbox driver fulfils. A driver runs one compiled script in a fresh,
 * isolated context and forwards every `tools.*` call to the host through `onToolCall`; it knows
 * nothing of the invoker, the toolbox or policy beyond the limits it is handed.
 *
 * Invariants every driver keeps (the shared contract suite in test/contracts checks them):
 * - `run` never rejects for anything the script does: faults, limits and crashes are outcomes.
 * - A limit hit (memory, CPU, wall time) ends the run within ~100 ms of the limit, disposes the
 *   isolate that hit it, and leaves other runs untouched.
 * - Nothing is left running after `run` settles: pending tool calls get their signal aborted.
 * - Console output reaches the host as it is written, so it survives a kill.
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { type InvocationResult, MAX_POLICY_DURATION_MS } from "../src/kernel/index.ts";

/** The resource caps of one run. */
export interface SandboxLimits {
  /** Heap limit of the isolate, MiB. */
  readonly memoryLimitMb: number;
  /** CPU time the script may use (its own thread), ms. */
  readonly cpuTimeMs: number;
  /** Wall time of the whole run, awaiting included, ms. */
  readonly totalTimeoutMs: number;
  /** Console bytes forwarded; past this one truncation marker is sent and the rest dropped. */
  readonly maxOutputBytes: number;
  /** Largest JSON text of one call's arguments, bytes. */
  readonly maxArgumentBytes: number;
}

/**
 * One `tools.*` call as it leaves the isolate. A call whose arguments the sandbox refused (not
 * plain data, too large) arrives too, with {@link refusal} set and `argsJson` `"{}"`: it has its
 * `callIndex` and used a unit of budget like any call, and the host answers it (a `BRIDGE_ERROR`
 * result carrying the refusal), so it leaves a trace record.
 */
export interface SandboxToolCall {
  /** 0-based index assigned inside the isolate in program order, refused calls included. */
  readonly callIndex: number;
  readonly tool: string;
  /** The arguments as JSON text, serialised inside the isolate; `"{}"` for a refused call. */
  readonly argsJson: string;
  /** Why the sandbox refused the call's arguments; absent for a call that was not refused. */
  readonly refusal?: string;
}

/** Console levels the prelude captures. */
export type SandboxLogLevel = "log" | "info" | "warn" | "error" | "debug";

/** Everything a driver needs to run one script. */
export interface SandboxRunRequest {
  /** The chain this run belongs to (`ProcessSandboxDriver.pidOf` finds its child by it). */
  readonly chainId: string;
  /** Compiled JavaScript from the compile step (see `src/compile`). */
  readonly script: string;
  /** File name used in stack traces of the script. */
  readonly scriptName: string;
  /** Names installed on `tools`. */
  readonly toolNames: readonly string[];
  /** Shown to the script as `budget.total`; `budget.remaining` counts down per call. */
  readonly maxToolCalls: number;
  /** Memory, CPU, time and size bounds of the run (see {@link SandboxLimits}). */
  readonly limits: SandboxLimits;
  /** Seed of the script's `Math.random`. */
  readonly seed: number;
  /** Start of the script's virtual clock, epoch ms. */
  readonly clockStart: number;
  /**
   * Clock readings the script reads back first (a replay), as `onClock` delivered them for the
   * recorded run, concatenated: `[elapsed ms, count, ...]`.
   */
  readonly clockReplay?: readonly number[];
  /**
   * A resume's time, epoch ms: once the readings of {@link clockReplay} run out, the clock reads
   * on from it (plus the real time since the run started) rather than from the recorded run's
   * timeline, when it is later. Without it a resumed chain's live calls carried the times of the
   * run it resumes, hours or days stale after a late approval.
   */
  readonly clockLiveAt?: number;
  /**
   * How much of `limits.totalTimeoutMs` the chain had spent before its script could start, ms:
   * the budget is the whole chain's, so the run's wall time ends that much sooner. The drivers add
   * their wait behind busy sandboxes (never a cold driver's first start); a caller may set it for
   * time it spent itself. Timeout messages still name `totalTimeoutMs` itself. @defaultValue 0
   */
  readonly budgetSpentMs?: number;
  /** Aborting it cancels the run (`status: "cancelled"`). */
  readonly signal?: AbortSignal;
  /**
   * Runs one call on the host. Must never reject; the driver delivers the result to the script.
   * `signal` fires when the run ends before the call does. The calls of one run may share one
   * signal, so a call that already finished can see it fire too. A result marked with
   * {@link neverAnswered} is not delivered: the call stays unanswered for the rest of the run,
   * and the driver no longer waits for it (a script left waiting only on such calls ends at once
   * in a `DeadlockError`).
   */
  readonly onToolCall: (call: SandboxToolCall, signal: AbortSignal) => Promise<InvocationResult>;
  /** Receives console output as it is written (already bounded by `maxOutputBytes`). */
  readonly onLog?: (level: SandboxLogLevel, text: string) => void;
  /**
   * Receives the script's clock readings (`[elapsed ms, count, ...]`, well-formed: see
   * `isClockReadings`), in order and before the calls (or the outcome) that follow them, so a
   * recorder can log them ahead of those calls.
   */
  readonly onClock?: (readings: readonly number[]) => void;
}

/**
 * The message of a `DeadlockError` of a run in which some calls get no answer (see
 * {@link neverAnswered}): the script may be waiting on one of them, or on a promise of its own.
 */
export const NEVER_ANSWERED_DEADLOCK_MESSAGE =
  "script is waiting on a promise that can never settle: no tool call is pending, and the calls still out get no answer here " +
  "(a replay's calls the recording has no answer for). Await only calls that are answered, and promises the script settles itself";

/** The message of a `DeadlockError` for a run, given how many of its calls got no answer (see {@link neverAnswered}). */
export function deadlockMessage(neverAnsweredCalls: number): string {
  return neverAnsweredCalls > 0 ? NEVER_ANSWERED_DEADLOCK_MESSAGE : DEADLOCK_MESSAGE;
}

/** The message of a `DeadlockError`: what happened, and what the script can change. */
export const DEADLOCK_MESSAGE =
  "script is waiting on a promise that can never settle (no tool call is pending). Await tool calls and promises the script " +
  "settles itself: a script has no timers or events, so a promise nothing in it resolves waits for ever";

/**
 * Calls a run may make past its budget (`maxToolCalls`) before it is ended (`CallLimitError`).
 * Each is refused and traced; a script calling in a loop without awaiting (100 000 calls: the
 * host's thread held 6 s, 1 GB of memory, 100 000 trace records) is stopped here instead.
 */
export const MAX_CALLS_PAST_BUDGET = 1_000;

/** True for a call index past what a run with a budget of `maxToolCalls` may make (see {@link MAX_CALLS_PAST_BUDGET}). */
export function pastCallLimit(callIndex: number, maxToolCalls: number): boolean {
  return callIndex >= maxToolCalls + MAX_CALLS_PAST_BUDGET;
}

/** Results marked by {@link neverAnswered}. */
const unanswered = new WeakSet<object>();

/**
 * Marks `result` as the answer of a call that is never answered (a strict replay's call the
 * recorded chain returned without: the script never saw its answer): a driver that gets it from
 * `onToolCall` delivers nothing, and stops waiting for that call, so a script that awaits it ends
 * in a `DeadlockError` at once instead of at `totalTimeoutMs`. A driver that does not know the mark
 * delivers `result` itself, so it should say why the call has no answer. Returns `result`.
 */
export function neverAnswered<T extends object>(result: T): T {
  unanswered.add(result);
  return result;
}

/** True for a result marked by {@link neverAnswered}: deliver nothing, wait for it no more. */
export function isNeverAnswered(result: unknown): boolean {
  return typeof result === "object" && result !== null && unanswered.has(result);
}

/**
 * A fault inside the sandbox, positions still in compiled code. Names the drivers use beyond
 * the script's own errors: `TimeoutError` (totalTimeoutMs, status `timeout`), `CpuLimitError`
 * (cpuTimeMs, status `timeout`), `MemoryLimitError` (memoryLimitMb, status `error`), all with
 * phase `limit`; `SandboxError` (the isolate vanished: driver closed, crash; phase `limit`);
 * `DeadlockError` (phase `limit`: the script awaits a promise nothing can settle, with no
 * call pending). A syntax error in the compiled script surfaces as a runtime `SyntaxError`.
 */
export interface SandboxError {
  readonly phase: "runtime" | "limit";
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/**
 * How one run ended. `returnJson` is `JSON.stringify` of the value inside the isolate, so JSON's
 * own rules apply (`-0` becomes `0`, `NaN` becomes `null`, `undefined` members are dropped).
 */
export interface SandboxRunOutcome {
  /** `ok` (returned), `error` (threw, or a limit other than time), `timeout` (wall or CPU time), `cancelled` (the request's signal). */
  readonly status: "ok" | "error" | "timeout" | "cancelled";
  /** JSON text of the script's return value; absent when it returned `undefined`. */
  readonly returnJson?: string;
  /** Why the run did not end `ok`, positions still in the compiled script. */
  readonly error?: SandboxError;
  /**
   * Call indexes of the calls the script made and had not seen answered when it returned (it did
   * not await them); only on an `ok` outcome, absent for none.
   */
  readonly unansweredCalls?: readonly number[];
  /**
   * Promise rejections the script left unhandled, as isolated-vm reports them: at the end of each
   * hand-off to the isolate (the start, a delivery of results), the first promise then rejected
   * with no handler on it. The in-process driver reports the start's only (see
   * isolate-runner.ts: awaiting each delivery would slow every chain). At most
   * {@link MAX_UNHANDLED_REJECTIONS}, in order; absent for none.
   * A rejection handled in a later hand-off (`const p = f(); await tools.x(); await p`) is
   * still listed, as every JavaScript runtime reports it.
   */
  readonly unhandledRejections?: readonly SandboxError[];
  /** Wall time of the run in its sandbox, ms. */
  readonly wallMs: number;
  /** CPU time the isolate used for the run, ms (as a sandbox child reports it, for the process driver). */
  readonly cpuMs: number;
  /** The isolate's used heap at the run's end, bytes. */
  readonly heapBytes: number;
}

/** Unhandled promise rejections an outcome keeps (see {@link SandboxRunOutcome.unhandledRejections}); later ones are dropped. */
export const MAX_UNHANDLED_REJECTIONS = 5;

/** A way to run scripts in isolation. */
export interface SandboxDriver {
  /** `"in-process"` or `"process"`. */
  readonly kind: string;
  /**
   * Runs one compiled script, calling `request.onToolCall` for each of its tool calls. Resolves
   * with how the run ended, whatever the script did: a driver rejects only when it cannot run
   * at all (closed, its sandbox would not start).
   */
  run(request: SandboxRunRequest): Promise<SandboxRunOutcome>;
  /** Brings the pool to its warm size; optional, `run` works cold. */
  warm?(): Promise<void>;
  /** Disposes every isolate and child; later `run` calls reject with `SANDBOX_FAILED`/`CHAIN_CLOSED`. */
  close(): Promise<void>;
}

/**
 * Most runs nested inside tool calls of one another on one driver (a tool that runs a chain
 * whose script calls a tool that runs a chain...). Such a run does not wait for a sandbox, since
 * its caller holds one until it ends; past this depth it is refused ({@link nestedTooDeep}).
 */
export const MAX_NESTED_RUNS = 8;

/** The outcome of a run nested past {@link MAX_NESTED_RUNS}: a `SandboxError` saying why. */
export function nestedTooDeep(depth: number): SandboxRunOutcome {
  const message = `chains nested ${depth + 1} deep inside tool calls (a tool that runs a chain whose script calls it again?); at most ${MAX_NESTED_RUNS} are run`;
  return { status: "error", error: { phase: "limit", name: "SandboxError", message }, wallMs: 0, cpuMs: 0, heapBytes: 0 };
}

/**
 * One run of a driver, as {@link RunNesting} tracks it for the tool calls it makes. A run started
 * from inside one of its calls is nested only while the run is in progress: work a call left
 * behind (a timer, an interval, a listener, a promise it did not await) carries the frame in its
 * async context long after, and a run that work starts once this run has ended holds up no
 * caller, so it queues like any other. (Per run, not per call: settling a frame as each call
 * settles cost a promise reaction per call, 15-20% of a 50-call sequential chain, measured.)
 */
export class ToolCallFrame {
  /** How deep a run started from inside a call of this run is nested: 1 for a run that is not nested. */
  readonly depth: number;
  /** The frame of the run this one was nested in; `undefined` for a run that was not nested. */
  readonly parent: ToolCallFrame | undefined;
  #settled = false;

  constructor(depth: number, parent: ToolCallFrame | undefined) {
    this.depth = depth;
    this.parent = parent;
  }

  /** Whether the run has ended. */
  get settled(): boolean {
    return this.#settled;
  }

  /** The run has ended: runs started from inside its calls from now on are not nested in it. */
  settle(): void {
    this.#settled = true;
  }
}

/**
 * Which run's tool call the current code runs inside (each driver has its own), so a run started
 * from one can skip the queue. The run's frame is kept in an `AsyncLocalStorage`, which every
 * async resource made during a call inherits; only a run still in progress counts (see
 * {@link ToolCallFrame}).
 */
export class RunNesting {
  readonly #call = new AsyncLocalStorage<ToolCallFrame>();

  /**
   * The run a run started now is nested in: the innermost one still in progress among the run
   * whose call the current code runs inside and those it is nested in; `undefined` outside every
   * call of a run in progress (a run that is not nested). A run started now is
   * `current?.depth ?? 0` deep.
   */
  get current(): ToolCallFrame | undefined {
    let frame = this.#call.getStore();
    while (frame?.settled === true) frame = frame.parent;
    return frame;
  }

  /**
   * The frame of a run about to start, one level below `caller` (its {@link current}, taken when
   * it started); the driver settles it when the run ends.
   */
  frameOf(caller: ToolCallFrame | undefined): ToolCallFrame {
    return new ToolCallFrame((caller?.depth ?? 0) + 1, caller);
  }

  /** `request` with each of its tool calls run inside `frame` (see {@link frameOf}). */
  within(request: SandboxRunRequest, frame: ToolCallFrame): SandboxRunRequest {
    const onToolCall = request.onToolCall;
    return { ...request, onToolCall: (call, signal) => this.#call.run(frame, onToolCall, call, signal) };
  }
}

/**
 * Ties a run's wait in a driver's queue to its caller's signal: `onAbort` when the signal fires,
 * and once `wait` settles, either way, the listener removed and the wait's timer (`timer()` as it
 * is then: a wait may replace its timer) cleared. Shared by both drivers' queues.
 */
export function bindQueueWait(wait: Promise<unknown>, signal: AbortSignal | undefined, onAbort: () => void, timer: () => ReturnType<typeof setTimeout> | undefined): void {
  signal?.addEventListener("abort", onAbort, { once: true });
  void wait
    .finally(() => {
      clearTimeout(timer());
      signal?.removeEventListener("abort", onAbort);
    })
    .catch(() => undefined);
}

/**
 * `request` with `waitedMs` (its wait in a driver's queue behind busy sandboxes) added to its
 * {@link SandboxRunRequest.budgetSpentMs}; `undefined` when nothing of the budget is left.
 * `request` itself after a wait under a millisecond.
 */
export function afterDriverWait(request: SandboxRunRequest, waitedMs: number): SandboxRunRequest | undefined {
  const spent = (request.budgetSpentMs ?? 0) + waitedMs;
  if (spent >= request.limits.totalTimeoutMs) return undefined;
  return waitedMs < 1 ? request : { ...request, budgetSpentMs: spent };
}

/** What is left of `request`'s wall-time budget when its run starts, ms (see {@link SandboxRunRequest.budgetSpentMs}). */
export function wallBudgetMs(request: Pick<SandboxRunRequest, "limits" | "budgetSpentMs">): number {
  return request.limits.totalTimeoutMs - (request.budgetSpentMs ?? 0);
}

/**
 * The outcome of a run handed to a driver with nothing left of its budget (`budgetSpentMs` at or
 * past `totalTimeoutMs`), before any sandbox is touched; `undefined` for any other run.
 */
export function budgetSpentBefore(request: SandboxRunRequest): SandboxRunOutcome | undefined {
  if (request.budgetSpentMs === undefined || wallBudgetMs(request) > 0) return undefined;
  return timedOutBeforeStart(`the chain had spent its totalTimeoutMs (${request.limits.totalTimeoutMs} ms) before its script could start`, 0);
}

/** The outcome of a run whose budget ran out while it waited for `what` in a driver. */
export function waitedPastBudget(request: SandboxRunRequest, what: string, waitedMs: number): SandboxRunOutcome {
  return timedOutBeforeStart(`the chain waited past totalTimeoutMs (${request.limits.totalTimeoutMs} ms) for ${what}`, waitedMs);
}

/** A `TimeoutError` outcome of a run whose script never started. */
function timedOutBeforeStart(message: string, wallMs: number): SandboxRunOutcome {
  return { status: "timeout", error: { phase: "limit", name: "TimeoutError", message }, wallMs, cpuMs: 0, heapBytes: 0 };
}

/** The outcome of a run its signal cancelled before it started, after `wallMs` of waiting. */
export function cancelledOutcome(wallMs: number): SandboxRunOutcome {
  return { status: "cancelled", wallMs, cpuMs: 0, heapBytes: 0 };
}

/**
 * A driver's first load of the prelude (`load`), waited for no longer than the run's budget and
 * its signal allow: `undefined` once loaded, else the outcome that ends the run (`timeout`
 * naming the load, or `cancelled`); the load goes on, for the runs after. Rejects as `load` does.
 */
export async function preludeWithinBudget(load: Promise<unknown>, request: SandboxRunRequest): Promise<SandboxRunOutcome | undefined> {
  const started = performance.now();
  const { promise, resolve } = Promise.withResolvers<"timeout" | "cancelled">();
  const timer = setTimeout(resolve, Math.min(wallBudgetMs(request), MAX_POLICY_DURATION_MS), "timeout");
  const onAbort = (): void => resolve("cancelled");
  request.signal?.addEventListener("abort", onAbort, { once: true });
  if (request.signal?.aborted === true) onAbort();
  let ended: "loaded" | "timeout" | "cancelled";
  try {
    ended = await Promise.race([load.then(() => "loaded" as const), promise]);
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
  }
  const waitedMs = performance.now() - started;
  if (ended === "cancelled") return cancelledOutcome(waitedMs);
  if (ended === "timeout") return waitedPastBudget(request, "the sandbox prelude to load (an esbuild build)", waitedMs);
  return undefined;
}
