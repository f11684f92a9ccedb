/**
 * `run_chain`: one chain from source to result.
 *
 *   code ──compile──▶ JS + source map ──driver.run──▶ isolate
 *                                          │  tools.x(args)  (one frame out, one back)
 *                                          ▼
 *                                   ToolInvoker.invoke ── budget, approval, refs, timeout, shaping
 *                                          │
 *   ChainRunResult ◀── map stack, offload return value, collect trace ◀┘
 *
 * Invariants:
 * - `run` never throws for anything the script does; every fault is a `ChainRunResult`.
 * - The host keeps the trace (the invoker session), not the isolate: every call that reached the
 *   host is in `callTrace` whatever the outcome, calls still running when the script ends included
 *   (they are cancelled and awaited before `run` returns, so nothing starts after it).
 * - This layer knows nothing of isolated-vm; it talks to a `SandboxDriver`.
 * - Traces (`traceStore`): one `TraceRecorder` per run, started before the first call and ended
 *   with the result. The invoker is shared by all runs and takes hooks once, so it gets one set
 *   of hooks that dispatch by `chainId` to the run's `ChainRunContext` (then to the user's hooks).
 * - Call routing: each call's id is `c<callIndex>` (program order, from the isolate). A replay
 *   gives the run a `RunPlan` whose router answers calls from a trace instead of the invoker;
 *   answered calls are logged in the run's own trace so it stays whole and resumable.
 * - `approvalMode: "suspend"`: see `chain-run-context.ts`; the run ends `suspended` and the
 *   suspended call's result is kept out of the trace, so `resumeChain` runs it with the decision.
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomInt, randomUUID } from "node:crypto";
import { sandboxLimitsFromPolicy } from "../../sandbox/limits.ts";
import { neverAnswered, type SandboxDriver, type SandboxError, type SandboxLimits, type SandboxLogLevel, type SandboxRunOutcome, type SandboxRunRequest, type SandboxToolCall } from "../../sandbox/sandbox-driver.ts";
import { MAX_CLOCK_READINGS } from "../bridge/protocol.ts";
import { compileScriptAsync, isDeferredCompile, type CompileFailure, type CompileResult } from "../compile/compile-script.ts";
import { DEFAULT_SCRIPT_NAME } from "../compile/compiled-script-contract.ts";
import { mapRuntimeError } from "../compile/map-runtime-error.ts";
import { decisionToFailure, effectiveRisk } from "../invoker/gates/request-approval.ts";
import { ToolInvoker } from "../invoker/tool-invoker.ts";
import type { InvokerSession } from "../invoker/invoker-session.ts";
import {
  compareToolNames,
  type AnyTool,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type ApprovalRequestOptions,
  type ArtifactRef,
  type BlobStore,
  brandChainTool,
  type ChainError,
  type ChainPolicy,
  type ChainRunResult,
  ChainRuntimeError,
  type ChainCallRecord,
  type ChainCleanupError,
  type ChainRunStatus,
  describeThrown,
  digestJson,
  isChainRuntimeError,
  type Hooks,
  type InvocationFailure,
  type InvocationResult,
  type ObjectJsonSchema,
  type ProgressListener,
  resolveChainPolicy,
  type Tool,
  type ToolContext,
  type ToolExecutionResult,
  type ToolRisk,
  TOOL_NAME_PATTERN,
} from "../kernel/index.ts";
import { BLOB_STORE_METHODS, checkHooks, checkMethods, checkOptionNames, describeKind, isAbortSignalLike, optionNames, refuseOption, refuseToolsBesideToolbox } from "../kernel/check-option-shape.ts";
import { fireHook } from "../kernel/fire-hook.ts";
import { jsonDepthExceeds } from "../kernel/json-depth.ts";
import type { Skill } from "../skills/skill.ts";
import { renderDeclarations } from "../toolbox/render-declarations.ts";
import { Toolbox } from "../toolbox/toolbox.ts";
import { fingerprintToolbox } from "../trace/fingerprint-toolbox.ts";
import { TraceRecorder } from "../trace/trace-recorder.ts";
import { isTraceChainId, type TraceStore } from "../trace/trace-store.ts";
import type { RunPlan } from "./call-router.ts";
import { ChainRunContext, parseArguments, stoppedCallResult } from "./chain-run-context.ts";
import { createSandboxDriver, type DriverChoice, isOwnDriver, type PoolChoice, readPoolChoice } from "./create-driver.ts";
import { runWarnings, withWaitedCalls } from "./run-warnings.ts";
import { summarizeRun } from "./summarize-run.ts";
import type { ChainTraceError, TracedChainRunResult } from "./traced-chain-run-result.ts";

/** How `ToolChainTool` is built. Give `toolbox` or `tools`. */
export interface ToolChainToolOptions {
  /** The tools scripts may call (hosted, provider-defined and `run_chain` itself are left out). */
  readonly toolbox?: Toolbox;
  /** Shorthand for `toolbox: new Toolbox(tools)`. */
  readonly tools?: Iterable<AnyTool>;
  /** Limits; unset fields take `DEFAULT_CHAIN_POLICY`. Throws `POLICY_INVALID` when inconsistent. */
  readonly policy?: Partial<ChainPolicy>;
  /** Who approves calls above `policy.maxRiskUnapproved`. None: those calls are denied. */
  readonly approvalHandler?: ApprovalHandler;
  /** Where large results, media and large return values go. None: everything stays inline. */
  readonly blobStore?: BlobStore;
  /** Observers of tool and chain events. */
  readonly hooks?: Hooks;
  /**
   * The sandbox: `"in-process"`, `"process"`, or a driver instance (shared drivers are not
   * closed by `close()`). @defaultValue `"process"` (see the default-driver line in the constructor)
   */
  readonly driver?: DriverChoice;
  /** Warm sandboxes kept ready by a driver the tool makes (`"in-process"`, `"process"`): an integer from 0 to 256 (`ARGUMENT_INVALID` otherwise). A driver instance keeps its own size. @defaultValue 2 */
  readonly poolSize?: number;
  /**
   * The sandbox pool in one option, instead of `driver` and `poolSize` (`ARGUMENT_INVALID` beside
   * either): a size (`pool: 4`), `{ size?, driver? }` (`pool: { size: 4, driver: "in-process" }`),
   * or a driver instance.
   */
  readonly pool?: PoolChoice;
  /** The tool's name. @defaultValue `"run_chain"` */
  readonly name?: string;
  /** When given, scripts see only the skill's `allowedTools`. */
  readonly skill?: Skill;
  /**
   * Where every run's trace goes (a `FileTraceStore` for crash-safe, resumable chains). Each run
   * writes a `ChainTrace` as it happens; a store failure is reported in the run's `traceError`.
   * @defaultValue none: runs are not traced
   */
  readonly traceStore?: TraceStore;
  /**
   * What a call needing approval does. `"wait"`: ask `approvalHandler` and wait (bounded by
   * `approvalTimeoutMs`). `"suspend"`: end the run with `status: "suspended"` and the request in
   * `pendingApproval`, its trace persisted; `resumeChain` continues it later, in any process.
   * `"suspend"` needs a `traceStore`.
   * @defaultValue `"wait"`
   */
  readonly approvalMode?: "wait" | "suspend";
}

/** Options of one run. */
export interface ChainRunOptions {
  /** Aborting cancels the chain: `status: "cancelled"`, pending calls' signals fire. */
  readonly signal?: AbortSignal;
  /** Receives `tool_call`, `tool_result` and `log` steps as they happen. */
  readonly onProgress?: ProgressListener;
  /** Use this chain id instead of a random one. */
  readonly chainId?: string;
  /** Seed of the script's `Math.random` (recorded in the result). @defaultValue random */
  readonly seed?: number;
  /** Start of the script's virtual clock. @defaultValue `Date.now()` */
  readonly clockStart?: number;
}

/**
 * The input of `run_chain`. A type, not an interface, so that it fits `Record<string, unknown>`
 * and a `ToolChainTool` is a `Tool` (as a `defineTool` result is) wherever one is asked for.
 */
export type ChainInput = {
  readonly code: string;
};

const SCRIPT_NAME = DEFAULT_SCRIPT_NAME;
const MAX_ARGUMENT_BYTES = 8 * 1024 * 1024;

/** @internal Runs `code` on `tool` with a replay plan (see `replay`, `resumeChain`). */
export let runWithPlan: (tool: ToolChainTool, code: string, options: ChainRunOptions, plan: RunPlan) => Promise<TracedChainRunResult>;

/** The error of a run its caller's signal cancelled. */
const CANCELLED_ERROR: ChainError = {
  phase: "limit",
  name: "CancelledError",
  message: "the chain was cancelled: its caller's signal fired before it finished (calls still running were told to stop, and are recorded CANCELLED)",
};

/** The error of a run stopped by `close()` (on a driver the tool does not own, which it cannot close). */
const CLOSED_ERROR: ChainError = {
  phase: "limit",
  name: "CancelledError",
  message: "the chain was cancelled: its ToolChainTool was closed before it finished (calls still running were told to stop, and are recorded CANCELLED)",
};

/**
 * The `run_chain` tool: a model writes a TypeScript script that calls `tools.*`; this runs it in
 * an isolated sandbox and routes every call through a {@link ToolInvoker}.
 *
 * ```ts
 * const chain = new ToolChainTool({ toolbox, policy: { maxToolCalls: 50 }, approvalHandler, blobStore });
 * const run = await chain.run(code);            // ChainRunResult, never throws for script faults
 * const forModel = await chain.execute({ code }); // text summary + structuredContent = run
 * await chain.close();
 * ```
 */
export class ToolChainTool implements Tool<ChainInput, ChainRunResult> {
  /** The tool's name for the model: `options.name`, by default `"run_chain"`. */
  readonly name: string;
  /** `{ code: string }` and nothing else, frozen: what the model sends. */
  readonly inputSchema: ObjectJsonSchema = Object.freeze({
    type: "object",
    properties: {
      code: {
        type: "string",
        description: "TypeScript or JavaScript: the body of an async function. Use await, call tools.*, and return a JSON value.",
      },
    },
    required: ["code"],
    additionalProperties: false,
  });
  /** `"safe"`: running a script is not itself a risk; each call it makes is judged by its own tool's risk. */
  readonly risk: ToolRisk = "safe";
  /** The resolved policy every run of this tool uses. */
  readonly policy: ChainPolicy;
  /** The invoker every call of every run goes through. */
  readonly invoker: ToolInvoker;

  readonly #toolbox: Toolbox;
  readonly #blobStore: BlobStore | undefined;
  readonly #hooks: Hooks | undefined;
  readonly #traceStore: TraceStore | undefined;
  readonly #approvalMode: "wait" | "suspend";
  readonly #approvalHandler: ApprovalHandler | undefined;
  /**
   * Active runs, for the hooks and approval handler the invoker shares (found by chain id). An
   * array, not a Map keyed by the id: every chain adds and removes a key never seen again, which
   * made V8 rehash the long-lived Map's table every few chains, and those tables outlived young
   * collections (~150 bytes promoted per chain). A chain holds a sandbox while it runs, so the
   * runs at once are few and a scan is as fast as a hash lookup.
   */
  readonly #runs: ChainRunContext[] = [];
  readonly #driver: SandboxDriver;
  readonly #ownsDriver: boolean;
  /**
   * The driver is one of isochain's (see isOwnDriver): it bounds its queue and its runs itself
   * (see RunDeadline), and drops a call answered `neverAnswered`.
   */
  readonly #ownDriver: boolean;
  #declarations: string | undefined;
  #toolNames: readonly string[] | undefined;
  /** The sandbox limits of every run, from the (frozen) policy. */
  readonly #limits: SandboxLimits;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** The run the current host code works for (a tool, hook or listener of one), if any: see {@link close}. */
  readonly #runScope = new AsyncLocalStorage<ChainRunContext>();

  /**
   * Throws `POLICY_INVALID` for an inconsistent policy or an unknown policy field,
   * `ARGUMENT_INVALID` for options that are not an object, an unknown option, `tools` that are
   * not a list of tools, a part without the methods it needs, a `poolSize` out of range,
   * `approvalMode: "suspend"` without a `traceStore` or an unknown `approvalMode`.
   */
  constructor(options: ToolChainToolOptions) {
    checkChainToolOptions(options);
    this.policy = resolveChainPolicy(options.policy);
    this.#limits = sandboxLimitsFromPolicy(this.policy, { maxArgumentBytes: MAX_ARGUMENT_BYTES });
    let toolbox = options.toolbox ?? new Toolbox(options.tools ?? []);
    if (options.skill) toolbox = toolbox.withSkill(options.skill);
    this.#toolbox = toolbox;
    this.#blobStore = options.blobStore;
    this.#hooks = options.hooks;
    this.#traceStore = options.traceStore;
    this.#approvalMode = options.approvalMode ?? "wait";
    this.#approvalHandler = options.approvalHandler;
    if (this.#approvalMode !== "wait" && this.#approvalMode !== "suspend") {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `approvalMode must be "wait" or "suspend"; got ${JSON.stringify(this.#approvalMode)}.`);
    }
    if (this.#approvalMode === "suspend" && !this.#traceStore) {
      throw new ChainRuntimeError(
        "ARGUMENT_INVALID",
        'approvalMode "suspend" needs a traceStore: a suspended chain resumes from its trace.',
      );
    }
    this.name = options.name ?? "run_chain";
    // Runs that are traced or can suspend need per-run hooks: one dispatcher, by chain id.
    const perRun = this.#traceStore !== undefined || this.#approvalMode === "suspend";
    const hooks = perRun ? this.#dispatchingHooks() : options.hooks;
    // With no handler and no suspension, the invoker denies on its own (and says why).
    const approvalHandler = this.#approvalMode === "suspend" || options.approvalHandler ? this.#dispatchingApprovalHandler() : undefined;
    this.invoker = new ToolInvoker({
      toolbox,
      policy: this.policy,
      ...(approvalHandler ? { approvalHandler } : {}),
      ...(options.blobStore ? { blobStore: options.blobStore } : {}),
      ...(hooks ? { hooks } : {}),
    });
    const pool = options.pool === undefined ? options : readPoolChoice("ToolChainTool", options.pool);
    const driver = pool.driver ?? "process";
    this.#ownsDriver = typeof driver === "string";
    this.#driver = createSandboxDriver(driver, { poolSize: pool.poolSize ?? 2, memoryLimitMb: this.policy.memoryLimitMb });
    this.#ownDriver = isOwnDriver(this.#driver);
    brandChainTool(this);
  }

  /** What the model reads: how to write a script, and the `tools.*` declarations. */
  get description(): string {
    return (
      "Run a short TypeScript script that calls several tools and combines their results in one step. " +
      "The script is the body of an async function: use top-level await, call tools as `await tools.name({...})`, " +
      "and `return` a JSON value. Large results come back as artifact refs; pass them on with `artifact(ref)`. " +
      `At most ${this.policy.maxToolCalls} tool calls per script.\n\n` +
      this.declarations()
    );
  }

  /** The TypeScript declarations of `tools.*`, generated from the tools' schemas. */
  declarations(): string {
    this.#declarations ??= renderDeclarations(this.#toolbox.callable());
    return this.#declarations;
  }

  /** The toolbox scripts call into. */
  get toolbox(): Toolbox {
    return this.#toolbox;
  }

  /**
   * Warms the sandbox pool so the first chain does not pay for isolate start-up. Throws
   * `CHAIN_CLOSED` after `close()`; a warm-up that `close()` cuts short resolves.
   */
  async warm(): Promise<void> {
    if (this.#closed) throw new ChainRuntimeError("CHAIN_CLOSED", "This ToolChainTool was closed; create a new one.");
    try {
      await this.#driver.warm?.();
    } catch (error) {
      // Its sandboxes were stopped by close(), not by a fault.
      if (!this.#closed) throw error;
    }
  }

  /**
   * Runs one script. Never throws for anything the script does: syntax errors, runtime errors,
   * limits and cancellation are statuses of the result. With a `traceStore`, the run is traced
   * as it happens (see {@link TracedChainRunResult.traceError}). Throws `CHAIN_CLOSED` after
   * `close()`, `ARGUMENT_INVALID` when `options.chainId` is already running on this tool or an
   * option is unusable (a `chainId` that is not 1-128 of `A-Z a-z 0-9 _ -`, a `seed` that is not
   * an integer, a `clockStart` that is not a time a `Date` can hold, a `signal`
   * that is not an AbortSignal, an `onProgress` that is not a function, a field
   * `ChainRunOptions` does not have). A run that waits on host code that never settles (a store,
   * a hook) past `totalTimeoutMs` and a 5 s grace (the time its sandbox ran not counted) ends
   * `timeout` without it (see `error`), `cancelled` 5 s after its signal fired.
   */
  async run(code: string, options: ChainRunOptions = {}): Promise<TracedChainRunResult> {
    return this.#run(code, options, undefined);
  }

  static {
    runWithPlan = (tool, code, options, plan) => tool.#run(code, options, plan);
  }

  #runOf(chainId: string): ChainRunContext | undefined {
    for (const run of this.#runs) if (run.chainId === chainId) return run;
    return undefined;
  }

  async #run(code: string, options: ChainRunOptions, plan: RunPlan | undefined): Promise<TracedChainRunResult> {
    if (this.#closed) throw new ChainRuntimeError("CHAIN_CLOSED", "This ToolChainTool was closed; create a new one.");
    checkRunOptions(options);
    const started = performance.now();
    const chainId = options.chainId ?? randomUUID();
    const seed = options.seed ?? randomInt(0, 2 ** 31 - 1);
    const clockStart = options.clockStart ?? Date.now();
    if (this.#runOf(chainId) !== undefined) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `A chain with id ${chainId} is already running on this tool.`, { details: { chainId } });
    }
    const recorder = this.#traceStore ? new TraceRecorder({ store: this.#traceStore, chainId }) : undefined;
    const run = new ChainRunContext(chainId, recorder, plan);
    this.#runs.push(run);
    const ids = { started, chainId, seed, clockStart };
    const execute = async (): Promise<TracedChainRunResult> => {
      if (recorder) {
        run.stage = "the trace store (writing chain-start)";
        await recorder.start({
          source: typeof code === "string" ? code : "",
          policy: this.policy,
          toolbox: fingerprintToolbox(this.#toolbox.callable()),
          seed,
          clockStart,
          ...(plan?.parentChainId === undefined ? {} : { parentChainId: plan.parentChainId }),
        });
      }
      return this.#execute(code, options, run, ids);
    };
    // The deadline first (the work runs into the sandbox synchronously), then the work, with
    // `forget` registered before anything else awaits it: the run is gone from #runs before its
    // caller resumes (the chain id is free again), or, when the caller was answered without it,
    // once it does settle.
    const answered = this.#withinDeadline(run, ids, options.signal, () => {
      // Everything the run calls (tools, hooks, stores, listeners) runs in its scope: close()
      // called from there does not wait for the run it would be waiting inside.
      const work = this.#runScope.run(run, execute);
      const forget = (): void => this.#forget(run);
      work.then(forget, forget);
      return work;
    });
    // Its work, or its answer without it (host code that never settles: see #withinDeadline).
    run.settled = answered.then(noop, noop);
    return answered;
  }

  #forget(run: ChainRunContext): void {
    const index = this.#runs.indexOf(run);
    if (index >= 0) {
      // Swap-remove: no reallocation.
      this.#runs[index] = this.#runs[this.#runs.length - 1] as ChainRunContext;
      this.#runs.pop();
    }
  }

  /**
   * Starts a run's deadline (see {@link RunDeadline}), before any of its work, and answers with
   * `work`, or with a result without it when host code the chain awaits (a blob store, trace
   * store, approval handler or hook) never settles. Past the deadline the run is abandoned: its
   * session is closed (calls still out are told to stop), nothing more of it starts, and what it
   * still writes (the trace's end, CHAIN_END) says what its caller got.
   */
  #withinDeadline(run: ChainRunContext, ids: RunIds, signal: AbortSignal | undefined, start: () => Promise<TracedChainRunResult>): Promise<TracedChainRunResult> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => deadline.cancelled();
      const deadline = new RunDeadline(this.policy.totalTimeoutMs, (waited) => {
        signal?.removeEventListener("abort", onAbort);
        const abandoned = this.#abandonedResult(run, ids, signal?.aborted === true ? "cancelled" : "timeout", waited);
        if (run.result === undefined) run.abandoned = { status: abandoned.status as "timeout" | "cancelled", ...(abandoned.error ? { error: abandoned.error } : {}) };
        void run.session?.close().catch(noop);
        resolve(abandoned);
      });
      run.deadline = deadline;
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted === true) onAbort();
      const work = start();
      work.then(
        (result) => {
          deadline.clear();
          signal?.removeEventListener("abort", onAbort);
          resolve(result);
        },
        (error: unknown) => {
          deadline.clear();
          signal?.removeEventListener("abort", onAbort);
          reject(error as Error);
        },
      );
    });
  }

  /** The result of a run abandoned while it waited on `run.stage` for `waited` (see {@link #withinDeadline}). */
  #abandonedResult(run: ChainRunContext, ids: RunIds, status: "timeout" | "cancelled", waited: string): TracedChainRunResult {
    const message =
      `The chain was abandoned: ${run.stage} did not settle within ${waited}. A blob store, trace store, approval handler or hook ` +
      "that never answers holds a chain this way; calls still waiting on it are not in callTrace.";
    const traceError: ChainTraceError | undefined = run.recorder
      ? { code: "STORE_FAILED", message: `The trace was left unfinished: ${message}`, lostEvents: run.recorder.failures.length + 1 }
      : undefined;
    // Stuck after the result was built: that result, with the trace said to be unfinished when its end was what hung.
    if (run.result !== undefined) return run.result.traceError === undefined && traceError && run.stage === CHAIN_END_STAGE ? { ...run.result, traceError } : run.result;
    const durationMs = performance.now() - ids.started;
    const session = run.session;
    const callTrace: ChainCallRecord[] = [...run.answeredRecords];
    for (const record of session?.trace ?? []) {
      const seq = run.runSeq(record.seq);
      callTrace.push(seq === record.seq ? record : { ...record, seq });
    }
    callTrace.sort((a, b) => a.seq - b.seq);
    return {
      chainId: ids.chainId,
      status,
      outputText: "",
      error: { phase: "limit", name: status === "timeout" ? "TimeoutError" : "CancelledError", message },
      callTrace,
      durationMs,
      stats: { wallMs: durationMs, cpuMs: 0, heapBytes: 0, toolCalls: (session?.callCount ?? 0) + run.answeredRecords.length },
      seed: ids.seed,
      clockStart: ids.clockStart,
      ...(traceError ? { traceError } : {}),
    };
  }

  async #execute(code: string, options: ChainRunOptions, run: ChainRunContext, ids: RunIds): Promise<TracedChainRunResult> {
    const { started, chainId, seed, clockStart } = ids;
    if (this.#hooks?.CHAIN_START) {
      run.stage = "the CHAIN_START hook";
      await this.#fireChainStart(chainId, code);
    }

    // On a cache miss V8's check of the compiled code is deferred: it runs while the sandbox
    // compiles the same code (see DeferredCompile), not before. esbuild, where a script needs it,
    // is waited for without blocking the host (see compileScriptAsync).
    let pending = typeof code === "string" ? compileScriptAsync(code) : invalidInput();
    let compilerFault: { readonly error: unknown } | undefined;
    if (pending instanceof Promise) {
      run.stage = "the compiler (esbuild)";
      pending = await pending.catch((error: unknown) => {
        compilerFault = { error };
        return invalidInput();
      });
    }
    const compiling = pending;

    // Answered without this run while it waited above (see #withinDeadline): the script never
    // starts, and the trace still gets its end, should the store take it now.
    if (run.abandoned !== undefined) {
      const { status, error } = run.abandoned;
      return this.#finish(chainId, started, { status, ...(error ? { error } : {}), outputText: "", seed, clockStart, run });
    }
    if (compilerFault !== undefined) {
      // esbuild could not run: thrown, as compileScript throws it, once the trace has its end.
      const message = `The script compiler could not run: ${describeThrown(compilerFault.error)}`;
      await this.#finish(chainId, started, { status: "error", error: { phase: "compile", name: "CompileError", message }, outputText: "", seed, clockStart, run });
      throw compilerFault.error;
    }
    let compiled = isDeferredCompile(compiling) ? compiling.result : compiling;
    const compileFailed = (error: ChainError): Promise<TracedChainRunResult> =>
      this.#finish(chainId, started, { status: "error", error, outputText: "", seed, clockStart, run });
    if (!compiled.ok) return compileFailed(compiled.error);

    // Opened right after the sandbox run is posted (or by a driver's first call, if that comes
    // sooner): host work before the post delays the chain by more than it costs (see
    // sandbox/isolate-runner.ts, startRun), after it the isolate's thread is still waking up.
    const sessionOf = (): InvokerSession =>
      (run.session ??= this.invoker.openSession({
        chainId,
        ...(options.signal ? { signal: options.signal } : {}),
      }));
    const inFlight = new Set<Promise<InvocationResult>>();
    let output = "";
    const onProgress = options.onProgress;
    const router = run.plan?.router;
    const durableTrace = this.#traceStore?.durable === true;
    // While V8's deferred check of the running code is pending, calls wait for it: code it refuses
    // (a body that closed its wrapper early, say) must not reach a tool, and the stripper's code
    // it refuses is replaced by esbuild's without any of the first attempt's calls having run.
    let unconfirmed: Promise<boolean> | undefined;
    const onToolCall = (call: SandboxToolCall, signal: AbortSignal): Promise<InvocationResult> => {
      if (unconfirmed !== undefined) {
        return unconfirmed.then((confirmed) => (confirmed ? dispatch(call, signal) : unconfirmedCallResult(call.tool)));
      }
      return dispatch(call, signal);
    };
    const dispatch = (sent: SandboxToolCall, signal: AbortSignal): Promise<InvocationResult> => {
      const callId = `c${sent.callIndex}`;
      // A call the isolate refused (its value not plain data, too large) sends `{}` in place of
      // its arguments: it is recorded, and matched on replay, as what it was refused for, so a
      // script that makes a valid `{}` call there instead is not taken for the same call.
      const call = sent.refusal === undefined ? sent : { ...sent, argsJson: JSON.stringify({ $refused: sent.refusal }) };
      if (run.stopReason !== undefined) return whenAborted(signal, stoppedCallResult(call.tool, run.stopReason));
      // A durable trace that broke runs no further call (a resume could not know it ran): each is
      // refused through the invoker, so it is counted and recorded like any refused call.
      const broken = durableTrace ? run.recorder?.error : undefined;
      const route = broken === undefined ? router?.route({ callId, tool: call.tool, argsJson: call.argsJson }) : undefined;
      if (route?.kind === "answer") {
        if (route.halt) run.halt();
        if (route.unanswered) {
          return this.#ownDriver ? Promise.resolve(neverAnswered(route.result)) : whenAborted(signal, route.result);
        }
        if (!route.record) return Promise.resolve(route.result);
        const answer = route.result;
        // Numbered now, in host arrival order like every call, whenever it is delivered.
        const seq = run.nextAnsweredSeq();
        if (route.order === undefined) return this.#recordAnswer(run, seq, callId, call, answer);
        // Held for its recorded turn: tracked like a live call, so the run's end waits for its
        // record (a call the script did not await is still traced before chain-end).
        const held = run.inRecordedOrder(route.order, () => this.#recordAnswer(run, seq, callId, call, answer));
        inFlight.add(held);
        void held.finally(() => inFlight.delete(held));
        return held;
      }
      if (route?.approval !== undefined) run.presetApproval(callId, route.approval);
      // A human's no holds whatever the tool's risk is now (lowered since, the call would skip
      // the approval gate, and the preset decision with it): the call is refused, counted, recorded.
      const refusedByHuman =
        route?.approval === "denied" || route?.approval === "skipped"
          ? decisionToFailure(route.approval, call.tool, effectiveRisk((this.#toolbox.get(call.tool) as { risk?: unknown } | undefined)?.risk))
          : undefined;
      run.liveCallStarted();
      // With a durable trace, a call whose start the store could not log must not run (a resume
      // could not know it did): the chain's TOOL_START hook refuses it through its own signal.
      const guard = durableTrace ? run.guardCall(callId) : undefined;
      const pending = this.invoker.invoke(
        {
          id: callId,
          name: call.tool,
          arguments: call.argsJson,
          // Refused (the durable trace broke, the isolate refused the value, a human on a resume): counted and recorded, never run.
          ...(broken !== undefined
            ? { rejection: traceBrokenResult(call.tool, broken) }
            : call.refusal !== undefined
              ? { rejection: { status: "error", code: "BRIDGE_ERROR", text: call.refusal } }
              : refusedByHuman !== undefined
                ? { rejection: refusedByHuman }
                : {}),
        },
        { session: sessionOf(), ctx: { signal: guard ? AbortSignal.any([signal, guard.signal]) : signal, callId }, ...(onProgress ? { onProgress } : {}) },
      );
      inFlight.add(pending);
      void pending.finally(() => {
        inFlight.delete(pending);
        run.liveCallEnded();
        if (guard) run.unguardCall(callId);
      });
      return pending;
    };
    const onLog = (level: SandboxLogLevel, text: string): void => {
      output += `${text}\n`; // one console call = one line
      if (onProgress) safeProgress(onProgress, { type: "log", level, text });
    };
    // Logged as they come, ahead of the calls that follow them (the store keeps append order), so
    // a resume reads back the times the script read before a call it makes again.
    const onClock = run.recorder === undefined ? undefined : clockRecorder(run.recorder);
    // Only a replay (its router can halt) or the suspend mode can stop a run from inside; close()
    // stops a run on a driver this tool does not own (it cannot close it) the same way.
    const stop = router !== undefined || this.#approvalMode === "suspend" || !this.#ownsDriver ? run.stop.signal : undefined;
    const signal = options.signal && stop ? AbortSignal.any([options.signal, stop]) : (options.signal ?? stop);

    const runSandbox = async (script: string): Promise<SandboxRunOutcome> => {
      try {
        const request: Mutable<SandboxRunRequest> = {
          chainId,
          script,
          scriptName: SCRIPT_NAME,
          toolNames: run.plan?.toolNames ?? (this.#toolNames ??= this.#toolbox.callable().map((tool) => tool.name).sort(compareToolNames)),
          maxToolCalls: this.policy.maxToolCalls,
          limits: this.#limits,
          seed,
          clockStart,
          // In the run's scope (see close()): a driver calls back from its own events, outside it.
          onToolCall: (call, callSignal) => this.#runScope.run(run, onToolCall, call, callSignal),
          onLog,
        };
        if (run.plan?.clockReplay !== undefined) request.clockReplay = run.plan.clockReplay;
        if (run.plan?.clockLiveAt !== undefined) request.clockLiveAt = run.plan.clockLiveAt;
        if (signal !== undefined) request.signal = signal;
        if (onClock !== undefined) request.onClock = onClock;
        // The driver bounds the sandbox (its queue, the watchdog, the kill timer): the run's own
        // deadline waits, and gives the host work after it a grace of its own.
        run.stage = "the sandbox";
        run.deadline?.pause(this.#ownDriver);
        try {
          return await this.#driver.run(request);
        } finally {
          run.deadline?.resume();
        }
      } catch (error) {
        return {
          status: "error",
          error: { phase: "limit", name: "SandboxError", message: `The sandbox failed: ${String((error as Error)?.message ?? error)}` },
          wallMs: performance.now() - started,
          cpuMs: 0,
          heapBytes: 0,
        };
      }
    };
    let outcome: SandboxRunOutcome;
    let refusedByV8: CompileFailure | undefined;
    if (isDeferredCompile(compiling)) {
      const firstAttempt = compiled;
      const confirming = afterThisTurn(() => compiling.confirm());
      unconfirmed = confirming.then(
        (result) => result === firstAttempt,
        () => false,
      );
      // Confirmed: later calls go straight through. Refused: every later call of this attempt is refused too.
      void unconfirmed.then((confirmed) => {
        if (confirmed) unconfirmed = undefined;
      });
      const running = runSandbox(compiled.code);
      sessionOf();
      // After the sandbox has its tasks (the driver queues them in this turn's microtasks).
      const checked = await confirming.catch(async (error: unknown) => {
        await running; // esbuild could not run: nothing is left behind, then the error as compileScript throws it
        await closeSession(sessionOf());
        throw error;
      });
      outcome = await running;
      if (!checked.ok) {
        // V8 refused the code, so the sandbox could not start it either: a compile error.
        refusedByV8 = checked;
      } else if (checked !== compiled) {
        // V8 refused the type stripper's output and esbuild's compiles: no call of the first
        // attempt ran (they were held, then refused), so run that, with calls open again.
        unconfirmed = undefined;
        compiled = checked;
        // Not again for a run its caller was answered without (see #withinDeadline).
        if (run.abandoned === undefined) outcome = await runSandbox(checked.code);
      }
    } else {
      const running = runSandbox(compiled.code);
      sessionOf();
      outcome = await running;
    }
    // Calls still running were cancelled by the driver; wait for their records so the trace is whole.
    if (inFlight.size > 0) {
      run.stage = "a call still running after the script ended (its blob store, trace store, approval or hook step)";
      await Promise.allSettled([...inFlight]);
    }
    const session = sessionOf();
    run.stage = "the blob store (unpinning the chain's artifacts)";
    const cleanupError = await closeSession(session);
    if (refusedByV8 !== undefined) return compileFailed(refusedByV8.error);
    const suspended = run.stopReason === "suspended" && run.pendingApproval !== undefined;
    return this.#finish(chainId, started, {
      status: suspended ? "suspended" : outcome.status,
      outcome: suspended ? withoutError(outcome) : outcome,
      compiled,
      source: code,
      session,
      outputText: output,
      seed,
      clockStart,
      run,
      ...(cleanupError === undefined ? {} : { cleanupError }),
    });
  }

  /** Logs a call answered from a trace (resume) as a completed call, then hands its result over. */
  async #recordAnswer(run: ChainRunContext, seq: number, callId: string, call: SandboxToolCall, result: InvocationResult): Promise<InvocationResult> {
    const args = parseArguments(call.argsJson);
    const startedAt = Date.now();
    const record: ChainCallRecord = {
      seq,
      callId,
      tool: call.tool,
      argsDigest: digestJson(args),
      status: result.status,
      startedAt,
      durationMs: 0,
      ...(result.status === "ok" ? {} : { error: result.text, code: result.code }),
    };
    run.answeredRecords.push(record);
    const hooks = run.recorder?.hooks();
    if (hooks) {
      await hooks.TOOL_START?.({ event: "TOOL_START", chainId: run.chainId, callId, seq, tool: call.tool, args, startedAt });
      await hooks.TOOL_END?.({ event: "TOOL_END", chainId: run.chainId, callId, seq, tool: call.tool, record, result, executed: false });
    }
    return result;
  }

  /** The invoker's hooks: per-run bookkeeping and trace, then the user's hooks. */
  #dispatchingHooks(): Hooks {
    const user = this.#hooks;
    return {
      TOOL_START: async (payload) => {
        const run = this.#runOf(payload.chainId);
        if (run) {
          const seen = run.onToolStart(payload);
          const durable = this.#traceStore?.durable === true;
          // A call refused because the durable trace already broke is not logged, nor its end: it never starts.
          if (seen && durable && run.recorder?.error) run.unloggedCalls.add(payload.callId);
          else if (seen) await run.recorder?.hooks().TOOL_START?.(seen);
          const broken = durable ? run.recorder?.error : undefined;
          if (broken) run.refuseCall(payload.callId, traceBrokenResult(payload.tool, broken));
        }
        await fireHook(user, "TOOL_START", payload);
      },
      TOOL_END: async (payload) => {
        const run = this.#runOf(payload.chainId);
        if (run) {
          const seen = run.onToolEnd(payload);
          if (seen && !run.unloggedCalls.delete(payload.callId)) await run.recorder?.hooks().TOOL_END?.(seen);
        }
        await fireHook(user, "TOOL_END", payload);
      },
    };
  }

  /** The invoker's approval handler: a resumed decision, a suspension, or the user's handler. */
  #dispatchingApprovalHandler(): ApprovalHandler {
    return {
      request: async (request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision> => {
        const run = this.#runOf(request.chainId);
        if (run) {
          const callId = run.callIdOf(request);
          const preset = run.takePresetApproval(callId);
          if (preset !== undefined) return preset;
          if (this.#approvalMode === "suspend") return run.suspend(request, callId, options.signal);
        }
        if (this.#approvalHandler) return this.#approvalHandler.request(request, options);
        return "denied";
      },
    };
  }

  /** `run_chain` as a tool: a bounded text summary for the model, the full run as `structuredContent`. */
  async execute(args: ChainInput, ctx?: ToolContext): Promise<ToolExecutionResult> {
    let code: unknown;
    try {
      code = typeof args === "object" && args !== null ? (args as { code?: unknown }).code : undefined;
    } catch {
      code = undefined; // a getter or Proxy that throws: as malformed as a missing code
    }
    if (typeof code !== "string") {
      return { content: [{ type: "text", text: 'run_chain needs { "code": string }: the script to run.' }], isError: true };
    }
    const run = await this.run(code, ctx ? { signal: ctx.signal } : {});
    return {
      content: [{ type: "text", text: summarizeRun(run, { maxReturnBytes: this.policy.maxInlineResultBytes }) }],
      isError: run.status !== "ok",
      structuredContent: run as unknown as Record<string, unknown>,
    };
  }

  /**
   * Ends the tool: later `run()`, `execute()` and `warm()` throw `CHAIN_CLOSED`, runs in flight are
   * ended (their sandboxes stopped: with the driver this tool made, by closing it; on a driver it
   * was given, which stays open, through each run's signal), and the sandboxes this tool owns are
   * disposed. Resolves once those runs have settled: their results built, traces ended and hooks
   * fired, so a trace store closed next loses nothing. A run still waiting on host code that never
   * settles (a hook, a store) is answered without it within 5 s, as a cancelled one is. Called
   * from inside a run (its tool, hook or listener), it does not wait for that run. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    // From inside a run: not that run, which waits for this call.
    const inside = this.#runScope.getStore();
    const runs = this.#runs.filter((run) => run !== inside);
    return this.#closing.then(() => Promise.all(runs.map((run) => run.settled))).then(noop);
  }

  /** Ends the runs in flight and closes the driver this tool made (see {@link close}). */
  async #close(): Promise<void> {
    this.#closed = true;
    for (const run of this.#runs) {
      run.deadline?.cancelled();
      // The driver this tool made ends its runs as it closes; another's is told through their signals.
      if (!this.#ownsDriver) run.halt();
    }
    if (this.#ownsDriver) await this.#driver.close();
  }

  /** {@link ToolChainTool.close}, for `await using chain = new ToolChainTool(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #finish(
    chainId: string,
    started: number,
    parts: {
      status: ChainRunStatus;
      outputText: string;
      seed: number;
      clockStart: number;
      error?: ChainError;
      outcome?: SandboxRunOutcome;
      compiled?: Extract<CompileResult, { ok: true }>;
      source?: string;
      session?: InvokerSession;
      run: ChainRunContext;
      cleanupError?: ChainCleanupError;
    },
  ): Promise<TracedChainRunResult> {
    const { run } = parts;
    const { outcome, compiled, session } = parts;
    const toolNames = run.plan?.toolNames ?? this.#toolNames;
    const source = parts.source;
    // A fault of the script's compiled code, about the script as the model wrote it.
    const mapped = compiled && source !== undefined
      ? (fault: SandboxError): ChainError => mapRuntimeError(fault, { source, map: compiled.map, scriptName: SCRIPT_NAME, ...(toolNames === undefined ? {} : { toolNames }) })
      : undefined;
    let error = parts.error;
    if (!error && outcome?.error && mapped) error = mapped(outcome.error);
    let status = parts.status;
    // A driver says only that the run was cancelled; the result says why, as for every other end
    // but `ok`: the caller's signal, or close(). A replay that stopped its run at a divergence
    // says why in its report (`ReplayReport.divergence`): its run has no error of its own.
    if (status === "cancelled" && error === undefined) {
      if (run.stopReason === undefined) error = CANCELLED_ERROR;
      else if (this.#closed) error = CLOSED_ERROR;
    }
    let returnValue: unknown;
    let returnArtifactRef: ArtifactRef | undefined;
    // (An abandoned run stores nothing more: its caller has its answer, and the ref would be dropped.)
    if (outcome?.status === "ok" && outcome.returnJson !== undefined && run.abandoned === undefined) {
      try {
        if (Buffer.byteLength(outcome.returnJson, "utf8") > this.policy.maxInlineResultBytes && this.#blobStore) {
          try {
            run.stage = "the blob store (storing the return value)";
            returnArtifactRef = await this.#blobStore.put(outcome.returnJson, { mimeType: "application/json", name: "return-value" });
          } catch {
            returnValue = JSON.parse(outcome.returnJson);
          }
        } else {
          returnValue = JSON.parse(outcome.returnJson);
        }
      } catch {
        // The prelude sends JSON.stringify's text: anything else comes from a sandbox not to be trusted.
        status = "error";
        error = { phase: "limit", name: "SandboxError", message: "the sandbox returned a value that is not JSON text" };
      }
      // The prelude refuses a value this deep, unless a Proxy showed its check another value
      // than JSON.stringify read. Past here the value would be walked recursively (the trace's
      // encoder, the model's summary, a caller's code), so it is refused here too.
      if (outcome.returnJson.length > 2 * MAX_RETURN_DEPTH && jsonDepthExceeds(returnValue, MAX_RETURN_DEPTH)) {
        returnValue = undefined;
        status = "error";
        error = {
          phase: "runtime",
          name: "TypeError",
          message: `return value must be JSON-compatible: found a value nested deeper than ${MAX_RETURN_DEPTH} levels`,
        };
      }
    }
    // Answered without this run while it waited (its deadline passed): what it still records,
    // the trace's end and CHAIN_END, says what the caller got.
    if (run.abandoned !== undefined) {
      status = run.abandoned.status;
      error = run.abandoned.error;
      returnValue = undefined;
      returnArtifactRef = undefined;
    }
    const durationMs = performance.now() - started;
    // Records are kept in completion order; the trace reads in arrival order. Calls answered from
    // a trace count as calls of this run; suspended calls (never run) are left out.
    const callTrace: ChainCallRecord[] = [...run.answeredRecords];
    if (session) {
      for (const record of session.trace) {
        if (run.isSuspended(record.callId)) continue;
        const seq = run.runSeq(record.seq);
        callTrace.push(seq === record.seq ? record : { ...record, seq });
      }
    }
    callTrace.sort((a, b) => a.seq - b.seq);
    const pendingApproval = status === "suspended" ? run.pendingApproval : undefined;
    const rejections = status === "ok" && mapped ? outcome?.unhandledRejections?.map(mapped) : undefined;
    const warnings = runWarnings(status, callTrace, outcome?.unansweredCalls, rejections);
    if (status === "timeout" && error) error = withWaitedCalls(error, callTrace);
    let result: TracedChainRunResult = {
      chainId,
      status,
      ...(returnValue !== undefined ? { returnValue } : {}),
      ...(returnArtifactRef ? { returnArtifactRef } : {}),
      outputText: parts.outputText,
      ...(error ? { error } : {}),
      callTrace,
      ...(session && session.droppedRecords > 0 ? { droppedCallRecords: session.droppedRecords } : {}),
      durationMs,
      stats: {
        wallMs: outcome?.wallMs ?? durationMs,
        cpuMs: outcome?.cpuMs ?? 0,
        heapBytes: outcome?.heapBytes ?? 0,
        // Calls answered from a trace count; calls suspended for approval (never run) do not.
        toolCalls: (session ? session.callCount - run.suspendedCount : 0) + run.answeredRecords.length,
      },
      seed: parts.seed,
      clockStart: parts.clockStart,
      ...(pendingApproval ? { pendingApproval } : {}),
      ...(parts.cleanupError ? { cleanupError: parts.cleanupError } : {}),
      ...(warnings ? { warnings } : {}),
    };
    run.result = result;
    if (run.recorder) {
      run.stage = CHAIN_END_STAGE;
      await run.recorder.end(result);
      const failure = run.recorder.error;
      if (failure) {
        const traceError: ChainTraceError = { code: failure.code, message: failure.message, lostEvents: run.recorder.failures.length };
        result = { ...result, traceError };
      }
      run.result = result;
    }
    run.stage = "the CHAIN_END hook";
    await this.#fireChainEnd(chainId, result);
    return result;
  }

  #fireChainStart(chainId: string, code: string): Promise<void> {
    return fireHook(this.#hooks, "CHAIN_START", { event: "CHAIN_START", chainId, code: typeof code === "string" ? code : "" });
  }

  #fireChainEnd(chainId: string, result: ChainRunResult): Promise<void> {
    return this.#hooks?.CHAIN_END ? fireHook(this.#hooks, "CHAIN_END", { event: "CHAIN_END", chainId, result }) : Promise.resolve();
  }
}

/**
 * Closes a chain's invoker session. An unpin the blob store refused is the chain's clean-up
 * failing after its calls are done: returned, for the result to report, never thrown over the
 * run's outcome.
 */
async function closeSession(session: InvokerSession): Promise<ChainCleanupError | undefined> {
  try {
    await session.close();
    return undefined;
  } catch (error) {
    return isChainRuntimeError(error)
      ? { code: error.code, message: error.message }
      : { code: "STORE_FAILED", message: `Closing the chain's invoker session failed: ${describeThrown(error)}` };
  }
}

function withoutError(outcome: SandboxRunOutcome): SandboxRunOutcome {
  const { error: _error, ...rest } = outcome;
  return rest;
}

/** The answer to a call made by code V8's check then refused (never run, never traced: the run becomes that compile error or is run again). */
function unconfirmedCallResult(tool: string): InvocationResult {
  return { status: "error", code: "CANCELLED", text: `The call of "${tool}" was not run: the script did not compile.` };
}

/** Resolves `value` when `signal` aborts (at once when it has). */
function whenAborted<T>(signal: AbortSignal, value: T): Promise<T> {
  if (signal.aborted) return Promise.resolve(value);
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(value), { once: true }));
}

function noop(): void {
  // nothing to do
}

/** What a deadline waited, for its message (built only when it fires). */
type Waited = "budget" | "backstop" | "after-script" | "after-cancel";

/**
 * A run's deadline while it waits on host code (see `ToolChainTool.#withinDeadline`). It starts
 * at `totalTimeoutMs` + `STUCK_GRACE_MS`; while the sandbox runs it waits (isochain's drivers bound
 * their queue and their run themselves; over another driver a backstop of twice `totalTimeoutMs`
 * and a grace stands); after the sandbox it resumes with what was left of it, at least
 * `STUCK_GRACE_MS`. The caller's signal cuts it to at most `STUCK_GRACE_MS` from then.
 *
 * No timer of its own: every armed deadline sits in a slot checked by one shared tick (see
 * {@link watchDeadline}), so a run costs a few field writes, not timers, before its sandbox
 * starts (host work there delays a chain by more than it costs: timers per run made a one-call
 * chain ~10% slower). Slots in a plain array, reused through a free list, not a `Set`: a set
 * emptied and refilled by every run reallocated its table each time, and with every run's young
 * deadline referenced from that long-lived table V8 kept growing the host's young generation
 * (new space 16 -> 64 MiB; the soak's RSS +40-50 MiB over 10 000 chains where slots give +2).
 */
class RunDeadline {
  readonly #expire: (waited: string) => void;
  readonly #totalMs: number;
  #endsAt = 0;
  #waited: Waited = "budget";
  /** Budget left when paused, ms. */
  #left = 0;
  #paused = false;
  #cancelled = false;
  #done = false;
  /** Its slot under the shared tick. */
  #slot = -1;

  constructor(totalMs: number, expire: (waited: string) => void) {
    this.#totalMs = totalMs;
    this.#expire = expire;
    this.#set(totalMs + STUCK_GRACE_MS, "budget");
    this.#slot = watchDeadline(this);
  }

  /** The sandbox starts: the budget waits; over a driver that does not bound itself (`bounded` false), a backstop stands. */
  pause(bounded: boolean): void {
    if (this.#done || this.#paused) return;
    this.#paused = true;
    this.#left = this.#endsAt - performance.now();
    if (this.#cancelled) return;
    if (bounded) this.#endsAt = Number.POSITIVE_INFINITY;
    else this.#set(2 * this.#totalMs + STUCK_GRACE_MS, "backstop");
  }

  /** The sandbox ended: what was left of the budget, at least `STUCK_GRACE_MS`. */
  resume(): void {
    if (this.#done || !this.#paused) return;
    this.#paused = false;
    if (this.#cancelled) return;
    const left = Math.max(this.#left, STUCK_GRACE_MS);
    this.#set(left, left > STUCK_GRACE_MS ? "budget" : "after-script");
  }

  /** The caller's signal fired: at most `STUCK_GRACE_MS` from now, whatever the run is doing. */
  cancelled(): void {
    if (this.#done || this.#cancelled) return;
    this.#cancelled = true;
    if (this.#endsAt - performance.now() > STUCK_GRACE_MS) this.#set(STUCK_GRACE_MS, "after-cancel");
  }

  clear(): void {
    if (this.#done) return;
    this.#done = true;
    unwatchDeadline(this.#slot);
  }

  /** Fires when `now` is past the deadline (the shared tick calls it). */
  check(now: number): void {
    if (this.#done || now < this.#endsAt) return;
    this.clear();
    this.#expire(this.#describe());
  }

  #set(ms: number, waited: Waited): void {
    this.#endsAt = performance.now() + ms;
    this.#waited = waited;
  }

  #describe(): string {
    switch (this.#waited) {
      case "budget":
        return `totalTimeoutMs (${this.#totalMs} ms) and ${STUCK_GRACE_MS} ms more`;
      case "backstop":
        return `twice totalTimeoutMs (${this.#totalMs} ms) and ${STUCK_GRACE_MS} ms more`;
      case "after-script":
        return `${STUCK_GRACE_MS} ms after the script ended`;
      case "after-cancel":
        return `${STUCK_GRACE_MS} ms after it was cancelled`;
    }
  }
}

/** How often armed deadlines are checked, ms: they end a grace of seconds, so a tenth of a second is precise enough. */
const DEADLINE_TICK_MS = 100;
/** Armed deadlines by slot; `null` for a free slot (see {@link freeSlots}). Grows to the most runs at once, never shrinks. */
const deadlineSlots: (RunDeadline | null)[] = [];
const freeSlots: number[] = [];
let armedCount = 0;
let deadlineTicker: ReturnType<typeof setInterval> | undefined;

/**
 * Puts a deadline under the shared tick and returns its slot. The tick is kept while deadlines
 * are armed (it also keeps the process alive for a run stuck on a promise nothing else holds
 * open), and stops at the first tick with none: back-to-back runs reuse it.
 */
function watchDeadline(deadline: RunDeadline): number {
  const slot = freeSlots.length > 0 ? (freeSlots.pop() as number) : deadlineSlots.push(null) - 1;
  deadlineSlots[slot] = deadline;
  armedCount++;
  deadlineTicker ??= setInterval(tickDeadlines, DEADLINE_TICK_MS);
  return slot;
}

/** Frees the slot of a deadline that is cleared or fired. */
function unwatchDeadline(slot: number): void {
  deadlineSlots[slot] = null;
  freeSlots.push(slot);
  armedCount--;
}

function tickDeadlines(): void {
  if (armedCount === 0) {
    clearInterval(deadlineTicker);
    deadlineTicker = undefined;
    return;
  }
  const now = performance.now();
  for (let slot = 0; slot < deadlineSlots.length; slot++) deadlineSlots[slot]?.check(now);
}

/** What identifies one run, fixed before it starts. */
interface RunIds {
  readonly started: number;
  readonly chainId: string;
  readonly seed: number;
  readonly clockStart: number;
}

/**
 * How long past `totalTimeoutMs` (or past the caller's cancel) a run may still wait on host code
 * (stores, hooks, an approval handler) before `run()` answers without it, ms.
 */
const STUCK_GRACE_MS = 5_000;

/** The stage of a run writing its trace's end (see {@link ChainRunContext.stage}). */
const CHAIN_END_STAGE = "the trace store (writing chain-end)";

/** Deepest nesting of a return value, as the prelude's plain-data check counts it (prelude/plain-data.ts). */
const MAX_RETURN_DEPTH = 200;

/** Most warm sandboxes a `ToolChainTool` keeps (`poolSize`): each is an isolate or a child process. */
const MAX_POOL_SIZE = 256;

/** @throws ChainRuntimeError `ARGUMENT_INVALID` naming what is wrong with the constructor's options (the policy is checked apart). */
function checkChainToolOptions(options: ToolChainToolOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `new ToolChainTool() needs options ({ tools } or { toolbox }, ...); got ${options === null ? "null" : typeof options}.`);
  }
  const owner = "ToolChainTool";
  checkOptionNames(owner, options, CHAIN_TOOL_OPTION_NAMES);
  const { tools } = options;
  if (tools !== undefined) {
    if (typeof (tools as Partial<Toolbox> | null)?.callable === "function") refuseOption(owner, "tools", "a list of tools", "got a Toolbox; pass it as toolbox:");
    if (typeof (tools as Partial<Iterable<unknown>> | null)?.[Symbol.iterator] !== "function" || typeof tools === "string") {
      refuseOption(owner, "tools", "a list of tools (an array or another iterable)", `got ${describeKind(tools)}`);
    }
  }
  refuseToolsBesideToolbox(owner, options);
  const { toolbox, name } = options;
  let { driver, poolSize } = options;
  if (options.pool !== undefined) {
    const beside = driver !== undefined ? "driver" : poolSize !== undefined ? "poolSize" : undefined;
    if (beside !== undefined) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `ToolChainTool options.pool stands for driver and poolSize: give it or ${beside}, not both.`, {
        details: { argument: "pool", beside },
      });
    }
    ({ driver, poolSize } = readPoolChoice(owner, options.pool));
  }
  // Duck-typed: a Toolbox from another copy of the package works as well.
  if (toolbox !== undefined && typeof (toolbox as Partial<Toolbox> | null)?.callable !== "function") {
    const why = Array.isArray(toolbox) ? "got an array; wrap the tools in one (toolbox: new Toolbox([...])) or pass them as tools: [...]" : `got ${describeKind(toolbox)}`;
    refuseOption(owner, "toolbox", "a Toolbox", why);
  }
  if (options.approvalHandler !== undefined) checkMethods(owner, "approvalHandler", "an ApprovalHandler", options.approvalHandler, ["request"]);
  if (options.blobStore !== undefined) checkMethods(owner, "blobStore", "a BlobStore", options.blobStore, BLOB_STORE_METHODS);
  // Only what a run calls: a store for replay needs load and list too, and replay() checks those.
  if (options.traceStore !== undefined) checkMethods(owner, "traceStore", "a TraceStore", options.traceStore, ["append"]);
  if (options.hooks !== undefined) checkHooks(owner, options.hooks);
  if (driver !== undefined && typeof driver !== "string") {
    const argument = options.pool === undefined ? "driver" : options.pool === driver ? "pool" : "pool.driver";
    checkMethods(owner, argument, '"process", "in-process" or a SandboxDriver', driver, ["run", "close"]);
  }
  if (name !== undefined && (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name))) {
    refuseOption(owner, "name", `a tool name matching ${String(TOOL_NAME_PATTERN)}`, `got ${describeKind(name)}`);
  }
  if (driver !== undefined && typeof driver === "string" && driver !== "process" && driver !== "in-process") {
    refuseOption(owner, options.pool === undefined ? "driver" : "pool.driver", '"process", "in-process" or a SandboxDriver', `got ${JSON.stringify(driver)}`);
  }
  if (poolSize !== undefined && !(Number.isInteger(poolSize) && poolSize >= 0 && poolSize <= MAX_POOL_SIZE)) {
    const argument = options.pool === undefined ? "poolSize" : typeof options.pool === "number" ? "pool" : "pool.size";
    throw new ChainRuntimeError("ARGUMENT_INVALID", `ToolChainTool options.${argument} must be an integer from 0 to ${MAX_POOL_SIZE}; got ${String(poolSize)}.`, {
      details: { argument },
    });
  }
}

/** Every field of {@link ToolChainToolOptions}. */
const CHAIN_TOOL_OPTION_NAMES = optionNames<ToolChainToolOptions>({
  toolbox: true,
  tools: true,
  policy: true,
  approvalHandler: true,
  blobStore: true,
  hooks: true,
  driver: true,
  poolSize: true,
  pool: true,
  name: true,
  skill: true,
  traceStore: true,
  approvalMode: true,
});

/** `work`'s value, computed in the check phase of this event-loop turn (after its I/O and microtasks). */
function afterThisTurn<T>(work: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    setImmediate(() => {
      try {
        resolve(work());
      } catch (error) {
        reject(error as Error);
      }
    });
  });
}

/** @throws ChainRuntimeError `ARGUMENT_INVALID` naming the run option that cannot be used. */
function checkRunOptions(options: ChainRunOptions): void {
  if (typeof options !== "object" || options === null) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `run() options must be an object; got ${options === null ? "null" : typeof options}.`);
  }
  const refuse = (argument: string, expected: string, value: unknown): never => {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `run() options.${argument} must be ${expected}; got ${describeKind(value)}.`, { details: { argument } });
  };
  checkOptionNames("run()", options, RUN_OPTION_NAMES);
  const { signal, onProgress, chainId, seed, clockStart } = options;
  // Duck-typed: a signal from another realm or an AbortSignal polyfill is an AbortSignal too.
  if (signal !== undefined && !isAbortSignalLike(signal)) refuse("signal", "an AbortSignal", signal);
  if (onProgress !== undefined && typeof onProgress !== "function") refuse("onProgress", "a function", onProgress);
  if (chainId !== undefined && !isTraceChainId(chainId)) refuse("chainId", 'an id of 1 to 128 letters, digits, "_" or "-"', chainId);
  if (seed !== undefined && !Number.isSafeInteger(seed)) refuse("seed", "an integer", seed);
  if (clockStart !== undefined && !(typeof clockStart === "number" && Math.abs(clockStart) <= 8.64e15)) {
    refuse("clockStart", "epoch milliseconds a Date can hold (within ±8.64e15)", clockStart);
  }
}

/** Every field of {@link ChainRunOptions}. */
const RUN_OPTION_NAMES = optionNames<ChainRunOptions>({ signal: true, onProgress: true, chainId: true, seed: true, clockStart: true });

function traceBrokenResult(tool: string, error: ChainRuntimeError): InvocationFailure {
  return {
    status: "error",
    code: "STORE_FAILED",
    text:
      `tools.${tool}: the chain's trace store failed (${error.code}: ${error.message}), so no further tool calls run in this chain: ` +
      "a call that is not on disk could be repeated by a resume.",
  };
}

function invalidInput(): { ok: false; error: ChainError } {
  return {
    ok: false,
    error: { phase: "compile", name: "CompileError", message: "The script must be a string of TypeScript or JavaScript." },
  };
}

function safeProgress(listener: ProgressListener, step: Parameters<ProgressListener>[0]): void {
  try {
    listener(step);
  } catch {
    // A progress listener never breaks a chain.
  }
}

/** `T` with its fields writable: a request built in steps. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * A run's `onClock`, logging the readings its sandbox sends to its trace: at most
 * {@link MAX_CLOCK_READINGS} runs of equal readings in all, as the prelude records (a run that goes
 * on from the last one is the same run). A sandbox that sends more (an escaped child, frame after
 * full frame) would make the trace one that no longer loads, so the rest is dropped.
 */
function clockRecorder(recorder: TraceRecorder): (readings: readonly number[]) => void {
  let runs = 0;
  let last = -1;
  return (readings) => {
    let end = 0;
    for (; end < readings.length; end += 2) {
      const elapsed = readings[end] as number;
      if (elapsed === last) continue;
      if (runs >= MAX_CLOCK_READINGS) break;
      runs++;
      last = elapsed;
    }
    if (end > 0) void recorder.recordClock(end === readings.length ? readings : readings.slice(0, end));
  };
}
