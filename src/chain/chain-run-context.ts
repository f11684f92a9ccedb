/**
 * The per-run state a `ToolChainTool` keeps beside the invoker session: the trace recorder, the
 * run's own call numbering, the calls answered from a trace, and the suspension of a chain that
 * waits on a human (`approvalMode: "suspend"`).
 *
 * The invoker is shared by every run of a tool and takes its hooks once, at construction, so the
 * tool gives it one set of hooks that dispatch by `chainId` to the active run's context.
 *
 * Invariants:
 * - `seq` in the trace is host arrival order over ALL calls of the run, those answered from a
 *   trace included; live calls keep the invoker's order (the map is monotonic).
 * - Suspension: the first call that reaches the approval gate suspends the run. Live calls
 *   already running finish and are logged; calls the script makes after that are never sent
 *   to the invoker and never logged; the suspended calls' results (a placeholder "denied")
 *   are not logged either, so their `tool-call` stays open in the trace, and `resumeChain` runs
 *   them live with the decision. Once every live call has ended or is waiting, the run stops.
 * - A call whose tool was still running when the chain ended gets no logged result either: it
 *   may have had its effect, so the trace keeps it in doubt.
 * - A trace store failure is kept by the recorder; once one happened on a durable store, no new
 *   call is sent to the invoker (its side effect could no longer be made at-most-once).
 * @module
 */
import {
  describeThrown,
  digestJson,
  type ApprovalDecision,
  type ApprovalRequest,
  type ChainCallRecord,
  type ChainError,
  type InvocationResult,
  type ToolEndEvent,
  type ToolStartEvent,
} from "../kernel/index.ts";
import { fitsArgumentLimits } from "../invoker/gates/normalize-arguments.ts";
import type { InvokerSession } from "../invoker/invoker-session.ts";
import type { TraceRecorder } from "../trace/trace-recorder.ts";
import type { RunPlan } from "./call-router.ts";
import type { TracedChainRunResult } from "./traced-chain-run-result.ts";

/** An answer from the trace waiting for its turn (see `ChainRunContext.inRecordedOrder`). */
interface HeldAnswer {
  readonly order: number;
  readonly answer: () => Promise<InvocationResult>;
  readonly resolve: (result: InvocationResult) => void;
}

interface OpenCall {
  readonly tool: string;
  /** The arguments as the hook received them (JSON text from a sandbox). */
  readonly args: unknown;
  /** Digest of the parsed arguments, taken only when an approval request needs matching. */
  digest?: string;
}

/** @internal One run's state; see the module comment. */
export class ChainRunContext {
  readonly chainId: string;
  readonly recorder: TraceRecorder | undefined;
  readonly plan: RunPlan | undefined;
  #stop: AbortController | undefined;
  /** Calls whose start was not logged (the durable trace had broken): their end is not either. */
  readonly unloggedCalls = new Set<string>();
  /** Calls answered without the invoker, as call records (run seqs). */
  readonly answeredRecords: ChainCallRecord[] = [];
  /** The first approval that suspended the run. */
  pendingApproval: ApprovalRequest | undefined;
  /** Why the run was stopped early, when it was. */
  stopReason: "suspended" | "halted" | undefined;
  /** What the run is waiting on now, named when it never settles (see `ToolChainTool`'s deadline). */
  stage = "the chain's start";
  /** The run's invoker session, once opened. */
  session: InvokerSession | undefined;
  /**
   * Set, to what its caller got, when the caller was answered without this run (it never
   * settled in time): nothing more of it starts, and what it still records says that.
   */
  abandoned: { readonly status: "timeout" | "cancelled"; readonly error?: ChainError } | undefined;
  /** The run's deadline while it waits on host code (see `ToolChainTool`). */
  deadline: { pause(bounded: boolean): void; resume(): void; cancelled(): void } | undefined;
  /**
   * Settles when the run's caller is answered: once its work has (result built, trace ended,
   * hooks fired), or without it when host code it waits on never settles. Never rejects.
   */
  settled: Promise<unknown> = Promise.resolve();
  /** The run's result, once built (before the trace's end and the CHAIN_END hook, which may still hang). */
  result: TracedChainRunResult | undefined;

  #nextSeq = 0;
  readonly #seqOf = new Map<number, number>();
  readonly #open = new Map<string, OpenCall>();
  readonly #approvalCallIds = new Set<string>();
  readonly #presetApprovals = new Map<string, ApprovalDecision>();
  readonly #suspended = new Set<string>();
  readonly #waiting = new Set<() => void>();
  /** Answers from the trace held until the end of the host turn (see {@link inRecordedOrder}). */
  #held: HeldAnswer[] = [];
  #liveInFlight = 0;

  constructor(chainId: string, recorder: TraceRecorder | undefined, plan: RunPlan | undefined) {
    this.chainId = chainId;
    this.recorder = recorder;
    this.plan = plan;
  }

  /**
   * Aborts the sandbox run: a suspension or a replay halt. Made on first use: a run that can
   * be neither (no router, no suspend mode) never asks for it, and its sandbox gets no signal
   * to listen to.
   */
  get stop(): AbortController {
    this.#stop ??= new AbortController();
    return this.#stop;
  }

  /** True once the run was suspended or halted: new calls are not sent anywhere. */
  get stopping(): boolean {
    return this.stopReason !== undefined;
  }

  readonly #guards = new Map<string, AbortController>();

  /** A signal for call `callId` that {@link refuseCall} can abort before the tool runs (durable traces). */
  guardCall(callId: string): AbortController {
    const guard = new AbortController();
    this.#guards.set(callId, guard);
    return guard;
  }

  unguardCall(callId: string): void {
    this.#guards.delete(callId);
  }

  /** Refuses a guarded call that has not run yet: the invoker answers it with `failure` (see `ToolInvoker`'s cancellation gate). */
  refuseCall(callId: string, failure: InvocationResult): void {
    this.#guards.get(callId)?.abort(failure);
  }

  /** The run's seq for an invoker seq (identity when no call was answered from a trace). */
  runSeq(invokerSeq: number): number {
    return this.#seqOf.get(invokerSeq) ?? invokerSeq;
  }

  /** Takes the next run seq for a call answered from a trace. */
  nextAnsweredSeq(): number {
    return this.#nextSeq++;
  }

  /** Calls suspended for approval (they never ran). */
  get suspendedCount(): number {
    return this.#suspended.size;
  }

  /** True when the call's result must stay out of the trace (it was suspended, never ran). */
  isSuspended(callId: string): boolean {
    return this.#suspended.has(callId);
  }

  /**
   * Runs on the invoker's `TOOL_START`: numbering and open calls. Returns the event for the
   * recorder (run seq, parsed arguments), or `undefined` when the run has none. Nothing is
   * parsed or digested for a run without a recorder: only an approval request needs the open
   * call's digest, and {@link callIdOf} takes it then (a sha256 per call, and tens of µs on a
   * host thread that just woke, off every call's path).
   */
  onToolStart(payload: ToolStartEvent): ToolStartEvent | undefined {
    const seq = this.#nextSeq++;
    this.#seqOf.set(payload.seq, seq);
    this.#open.set(payload.callId, { tool: payload.tool, args: payload.args });
    return this.recorder === undefined ? undefined : { ...payload, seq, args: parseArguments(payload.args) };
  }

  /** Runs before `TOOL_END` reaches the recorder; `undefined` when the result must not be logged. */
  onToolEnd(payload: ToolEndEvent): ToolEndEvent | undefined {
    this.#open.delete(payload.callId);
    let seq = this.#seqOf.get(payload.seq);
    if (seq === undefined) {
      seq = this.#nextSeq++;
      this.#seqOf.set(payload.seq, seq);
    }
    if (this.#suspended.has(payload.callId)) return undefined;
    // A tool still running when the chain ended (its timeout, a cancel, a return that left the
    // call behind) was told to stop, but may have done its work anyway: its outcome is unknown,
    // and the script never saw the CANCELLED. Left open, the call reads in doubt, so a resume
    // neither repeats it blindly nor reports it as not run (and a strict replay stops there).
    const { result } = payload;
    if (payload.executed === true && result.status === "error" && result.code === "CANCELLED") return undefined;
    return { ...payload, seq, record: { ...payload.record, seq } };
  }

  /**
   * Delivers an answer from the trace in its recorded order among the answers routed in the
   * same host turn: they are held until the turn ends, then handed over sorted by `order`, each
   * only after the one before it. Calls made together (a `Promise.race`, `.then`s on a
   * `Promise.all`'s members) thus settle in the order the original run saw, and the script
   * takes the same branch. A call made later is not waited for.
   */
  inRecordedOrder(order: number, answer: () => Promise<InvocationResult>): Promise<InvocationResult> {
    const { promise, resolve } = Promise.withResolvers<InvocationResult>();
    if (this.#held.length === 0) setImmediate(() => this.#releaseHeld());
    this.#held.push({ order, answer, resolve });
    return promise;
  }

  #releaseHeld(): void {
    const held = this.#held.sort((a, b) => a.order - b.order);
    this.#held = [];
    let previous: Promise<unknown> = Promise.resolve();
    for (const { answer, resolve } of held) {
      const result = answer();
      previous = previous
        .then(() => result)
        .then(resolve, (error: unknown) => resolve({ status: "error", code: "TOOL_ERROR", text: `The recorded answer could not be delivered: ${describeThrown(error)}` }));
    }
  }

  /** A live call is about to go to the invoker. */
  liveCallStarted(): void {
    this.#liveInFlight++;
  }

  /** A live call's invoke settled. */
  liveCallEnded(): void {
    this.#liveInFlight--;
    this.#checkSuspension();
  }

  /** Sets the approval decision of one call (a resumed approval). */
  presetApproval(callId: string, decision: ApprovalDecision): void {
    this.#presetApprovals.set(callId, decision);
  }

  /**
   * The open call an approval request belongs to: same tool and arguments, not yet matched.
   * The invoker logs `TOOL_START` before the approval gate, so the call is always open here.
   */
  callIdOf(request: ApprovalRequest): string | undefined {
    // The invoker names the call; matching by tool and arguments is for a request without one.
    const named = request.callId;
    if (named !== undefined && this.#open.has(named) && !this.#approvalCallIds.has(named)) {
      this.#approvalCallIds.add(named);
      return named;
    }
    const digest = digestJson(request.args);
    for (const [callId, open] of this.#open) {
      if (open.tool !== request.tool || this.#approvalCallIds.has(callId)) continue;
      open.digest ??= digestJson(parseArguments(open.args));
      if (open.digest === digest) {
        this.#approvalCallIds.add(callId);
        return callId;
      }
    }
    return undefined;
  }

  /** The preset decision of `callId`, consumed. */
  takePresetApproval(callId: string | undefined): ApprovalDecision | undefined {
    if (callId === undefined) return undefined;
    const decision = this.#presetApprovals.get(callId);
    this.#presetApprovals.delete(callId);
    return decision;
  }

  /**
   * Suspends the run on `request`: logs it, and resolves `"denied"` (a placeholder never
   * logged) once the run stops, or when the invoker stops waiting.
   */
  async suspend(request: ApprovalRequest, callId: string | undefined, signal: AbortSignal): Promise<ApprovalDecision> {
    this.pendingApproval ??= request;
    this.stopReason = "suspended";
    if (callId !== undefined) this.#suspended.add(callId);
    await this.recorder?.recordApprovalRequest(request);
    return new Promise<ApprovalDecision>((resolve) => {
      const release = (): void => {
        this.#waiting.delete(release);
        signal.removeEventListener("abort", onAbort);
        resolve("denied");
      };
      const onAbort = (): void => {
        release();
        this.#checkSuspension();
      };
      if (signal.aborted) return resolve("denied");
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.add(release);
      this.#checkSuspension();
    });
  }

  /** Stops the run now (a replay divergence or the end of a recording). */
  halt(): void {
    this.stopReason ??= "halted";
    if (!this.stop.signal.aborted) this.stop.abort(new DOMException("The chain run was stopped.", "AbortError"));
  }

  #checkSuspension(): void {
    if (this.stopReason !== "suspended" || this.#liveInFlight > this.#waiting.size) return;
    if (!this.stop.signal.aborted) this.stop.abort(new DOMException("The chain is suspended for approval.", "AbortError"));
    for (const release of [...this.#waiting]) release();
  }
}

/**
 * The arguments a hook received as JSON text, parsed; anything else as it is. Text that does not
 * parse, or parses to a tree past the argument limits (which the invoker refuses, and which a
 * script can only send by hiding it from the prelude's check), stays text: the trace logs it and
 * digests it as the invoker's record does, and nothing walks the deep tree recursively.
 */
export function parseArguments(args: unknown): unknown {
  if (typeof args !== "string") return args;
  try {
    const parsed = JSON.parse(args) as unknown;
    return fitsArgumentLimits(parsed) ? parsed : args;
  } catch {
    return args;
  }
}

/** An `answer` result for a call the run will not make because it is stopping. */
export function stoppedCallResult(tool: string, reason: "suspended" | "halted"): InvocationResult {
  return {
    status: "error",
    code: "CANCELLED",
    text:
      reason === "suspended"
        ? `tools.${tool}: the chain is suspended waiting for an approval; the call did not run (it will run when the chain resumes).`
        : `tools.${tool}: the chain run was stopped; the call did not run.`,
  };
}
