/**
 * The call router of a replay: answers a re-run script's calls from a {@link ChainTrace}.
 *
 * Matching (see the design comment of `src/trace/chain-trace.ts`): by program-order `callId`,
 * checked by tool name and the digest of the arguments. The first call that does not match is
 * the divergence; the run stops there.
 *
 *     call cN ─┬─ not in the trace ──────────── strict, trace has an outcome: divergence (unexpected call)
 *              │                                 strict, trace has none (the chain died between
 *              │                                   calls): the recording ends here (stops, `partial`)
 *              │                                 resume: live (a call the chain never reached)
 *              ├─ other tool / other args ────── divergence (both modes)
 *              ├─ completed ──────────────────── answered with the recorded result
 *              └─ in doubt (started, no result)
 *                   strict, the chain returned `ok` (the script had not awaited it): no answer,
 *                     as in the recording (see neverAnswered); the replay goes on
 *                   strict, otherwise: the recording ends here (the run stops, `partial`)
 *                   resume: suspended for approval → live, with the caller's decision
 *                           inDoubt[cN] = "re-execute" → live; "assume-done" → ok, no result
 *                           no decision: safe tool → live; any other risk → IN_DOUBT error
 *
 * A completed call whose recorded result is itself `IN_DOUBT` (a resume that left it undecided)
 * counts as in doubt again on the next resume, so a decision can still be given.
 *
 * A resume also answers from the chains the trace itself resumes (its `parentChainId`, and
 * theirs): a resume that died, or stopped at a divergence, before it had answered every
 * completed call of its parent holds only the calls it reached, and those it did not reach
 * were done all the same (see {@link InheritedCall}).
 * @module
 */
import { checkChainTrace } from "../trace/check-chain-trace.ts";
import {
  digestJson,
  type ApprovalDecision,
  type InvocationResult,
  type ToolRisk,
} from "../kernel/index.ts";
import type { ChainTrace, TraceCallEntry } from "../trace/chain-trace.ts";
import type { CallRouter, RouteDecision, RoutedCall } from "./call-router.ts";
import { parseArguments } from "./chain-run-context.ts";
import { describeJsonDiff } from "./describe-json-diff.ts";

/** What to do with a call that was started and never finished. */
export type InDoubtDecision = "assume-done" | "re-execute";

/** How a resume settled an in-doubt call. */
export type InDoubtResolution = InDoubtDecision | "in-doubt";

/** An in-doubt call a resume met, and what it did with it. */
export interface InDoubtCall {
  /** The call's id in the recorded chain (`c3`). */
  readonly callId: string;
  /** The tool the call was for. */
  readonly tool: string;
  /** The tool's risk as the trace (or, failing that, the toolbox) knows it; unknown counts as critical. */
  readonly risk: ToolRisk;
  /** `in-doubt`: the script got an `IN_DOUBT` error and the tool did not run. */
  readonly resolution: InDoubtResolution;
}

/** The first point where a replay left the recording. */
export interface ReplayDivergence {
  /**
   * - `call-mismatch`: call `callId` names another tool or other arguments than recorded.
   * - `unexpected-call`: call `callId` is not in the trace (strict mode, and the trace has an
   *   outcome: past the end of a trace without one, the replay stops with `partialAt` instead).
   * - `missing-call`: the recorded call `callId` was never made.
   * - `outcome-mismatch`: the calls match, but the status, return value or error differ.
   */
  readonly kind: "call-mismatch" | "unexpected-call" | "missing-call" | "outcome-mismatch";
  /** The call, for the call kinds. */
  readonly callId?: string;
  /** What the trace holds: `{ tool, args }` for a call, `{ status, returnValue, error }` for the outcome. */
  readonly expected?: unknown;
  /** What the replay did, in the same shape. */
  readonly actual?: unknown;
  /** One line per difference (see `describeJsonDiff`). */
  readonly diff: readonly string[];
  /** A readable account: the summary line, then the diff. */
  readonly message: string;
}

/**
 * A call of an earlier chain in the trace's line of resumes that a resume answers by: one the
 * trace lacks (its run never reached it), or one the trace holds in doubt that the earlier chain
 * completed (a call answered from that chain's trace never ran in this one).
 */
export interface InheritedCall {
  readonly entry: TraceCallEntry;
  /** The chain whose trace holds {@link entry}. */
  readonly chainId: string;
  /** True when that chain was suspended on this call, waiting for its approval (it never ran). */
  readonly suspended: boolean;
}

/** Options of {@link ReplayRouter}. */
export interface ReplayRouterOptions {
  readonly mode: "strict" | "resume";
  /** Decisions for in-doubt calls, by call id. */
  readonly inDoubt?: Readonly<Record<string, InDoubtDecision>>;
  /** Approval decisions for calls that were suspended for approval, by call id. */
  readonly approvals?: Readonly<Record<string, ApprovalDecision>>;
  /** Risk of tools the trace does not know (from the live toolbox). */
  readonly riskOf?: (tool: string) => ToolRisk | undefined;
  /** Resume: calls of the chains the trace resumes, by call id (see {@link InheritedCall}). */
  readonly inherited?: ReadonlyMap<string, InheritedCall>;
}

/** @internal Answers a replayed run's calls from a trace; read its findings once the run ended. */
export class ReplayRouter implements CallRouter {
  readonly #trace: ChainTrace;
  readonly #options: ReplayRouterOptions;
  readonly #byId: ReadonlyMap<string, TraceCallEntry>;
  readonly #suspended: ReadonlySet<string>;
  readonly #requested = new Set<string>();
  /** Calls answered from the trace. */
  readonly replayed: string[] = [];
  /** Calls sent to the live invoker. */
  readonly live: string[] = [];
  readonly inDoubt: InDoubtCall[] = [];
  /** Strict: calls the recorded chain returned without answering, answered (never) as the run ends. */
  readonly unanswered: { readonly callId: string; readonly tool: string }[] = [];
  divergence: ReplayDivergence | undefined;
  /**
   * Strict mode reached the end of the recording and stopped there: at an in-doubt call, or at
   * the first call past the end of a trace with no outcome (the chain died between calls).
   */
  partialAt: string | undefined;

  constructor(trace: ChainTrace, options: ReplayRouterOptions) {
    this.#trace = trace;
    this.#options = options;
    this.#byId = new Map(trace.calls.map((call) => [call.callId, call]));
    this.#suspended = suspendedCallIds(trace);
  }

  route(call: RoutedCall): RouteDecision {
    const { callId, tool } = call;
    this.#requested.add(callId);
    const strict = this.#options.mode === "strict";
    const args = parseArguments(call.argsJson);
    const inherited = strict ? undefined : this.#options.inherited?.get(callId);
    const entry = inherited?.entry ?? this.#byId.get(callId);
    // The chain whose trace the answer comes from.
    const chainId = inherited?.chainId ?? this.#trace.chainId;
    if (entry === undefined) {
      if (!strict) {
        this.live.push(callId);
        return { kind: "live" };
      }
      // No outcome: the chain died (or the trace was copied) before this call started; or its
      // caller cancelled it first. The recording ends here, as it does at an in-doubt call: not
      // a divergence.
      if (recordingEndsEarly(this.#trace)) {
        this.partialAt ??= callId;
        return { kind: "answer", result: endOfRecordingResult(this.#trace, callId, tool), record: false, halt: true };
      }
      return this.#diverge({
        kind: "unexpected-call",
        callId,
        expected: undefined,
        actual: { tool, args },
        diff: [],
        message: `Call ${callId} (tools.${tool}) is not in the trace: the original run made ${this.#trace.calls.length} call(s).`,
      });
    }
    if (entry.tool !== tool || entry.argsDigest !== digestJson(args)) {
      const expected = { tool: entry.tool, args: entry.args === undefined ? `(not recorded; digest ${entry.argsDigest})` : entry.args };
      const actual = { tool, args };
      const diff = describeJsonDiff(expected, actual);
      return this.#diverge({
        kind: "call-mismatch",
        callId,
        expected,
        actual,
        diff,
        message: [
          entry.tool !== tool
            ? `Call ${callId} differs from the trace: expected tools.${entry.tool}, got tools.${tool}.`
            : diff.length === 0 && entry.args !== undefined
              ? // The recorded arguments are the script's, but not what the recorded digest is of.
                `Call ${callId} (tools.${tool}) has the arguments the trace records, but not the digest it records for them: the trace was damaged or edited.`
              : `Call ${callId} (tools.${tool}) differs from the trace: other arguments.`,
          ...diff.map((line) => `  ${line}`),
        ].join("\n"),
      });
    }
    const answered = strict ? entry.state === "completed" && entry.result !== undefined : !isInDoubtOnResume(entry);
    if (answered && entry.result !== undefined) {
      this.replayed.push(callId);
      return { kind: "answer", result: entry.result, record: true, ...(entry.resultSeq === undefined ? {} : { order: entry.resultSeq }) };
    }
    // In doubt: started, never finished.
    if (strict) {
      // The chain returned while this call still ran (the script had not awaited it): the script
      // never saw its answer, so the replay gives it none either (see neverAnswered), and goes on
      // checking the rest.
      if (this.#trace.outcome?.status === "ok") {
        this.replayed.push(callId);
        this.unanswered.push({ callId, tool });
        return { kind: "answer", result: unansweredResult(callId, tool), record: false, unanswered: true };
      }
      this.partialAt ??= callId;
      return { kind: "answer", result: inDoubtResult(this.#trace.chainId, callId, tool), record: false, halt: true };
    }
    if (inherited?.suspended ?? this.#suspended.has(callId)) {
      this.live.push(callId);
      const approval = this.#options.approvals?.[callId];
      return approval === undefined ? { kind: "live" } : { kind: "live", approval };
    }
    const risk = entry.risk ?? this.#options.riskOf?.(tool) ?? "critical";
    const decision = this.#options.inDoubt?.[callId] ?? (risk === "safe" ? "re-execute" : undefined);
    this.inDoubt.push({ callId, tool, risk, resolution: decision ?? "in-doubt" });
    if (decision === "re-execute") {
      this.live.push(callId);
      return { kind: "live" };
    }
    this.replayed.push(callId);
    if (decision === "assume-done") {
      return {
        kind: "answer",
        record: true,
        result: {
          status: "ok",
          text: `tools.${tool} (call ${callId}) was started in chain ${chainId} and its outcome was never recorded; it was assumed done on resume, and no result is available.`,
        },
      };
    }
    return { kind: "answer", result: inDoubtResult(chainId, callId, tool), record: true };
  }

  /** Strict mode, after the run: the first recorded call the replay never made, if any. */
  findMissingCall(): ReplayDivergence | undefined {
    for (const entry of [...this.#trace.calls].sort(byCallIndex)) {
      if (this.#requested.has(entry.callId)) continue;
      return {
        kind: "missing-call",
        callId: entry.callId,
        expected: { tool: entry.tool, args: entry.args },
        actual: undefined,
        diff: [],
        message: `Call ${entry.callId} (tools.${entry.tool}) is in the trace, but the replayed script never made it.`,
      };
    }
    return undefined;
  }

  #diverge(divergence: ReplayDivergence): RouteDecision {
    this.divergence ??= divergence;
    return {
      kind: "answer",
      record: false,
      halt: true,
      result: { status: "error", code: "CANCELLED", text: `Replay stopped: ${divergence.message.split("\n")[0] ?? ""}` },
    };
  }
}

/** The `IN_DOUBT` result a resumed script sees for a call it must not repeat blindly. */
export function inDoubtResult(chainId: string, callId: string, tool: string): InvocationResult {
  return {
    status: "error",
    code: "IN_DOUBT",
    text:
      `tools.${tool} (call ${callId}) was started in chain ${chainId} but its outcome was never recorded: it may or may not have run, ` +
      `so it was not run again. Check its effect, then resume with inDoubt: { ${callId}: "assume-done" } or { ${callId}: "re-execute" }.`,
  };
}

/**
 * True when the recording of `trace` stops before its script did: it has no outcome (the chain
 * died, or the trace was copied while it ran), or its caller cancelled it (the signal came from
 * outside the script, and a replay cannot know when). A strict replay then stops at the first
 * call past the recording, and does not compare the outcome.
 */
export function recordingEndsEarly(trace: ChainTrace): boolean {
  return trace.outcome === undefined || trace.outcome.status === "cancelled";
}

/** What a strict replay hands, as the run ends, a call the recorded script returned without awaiting. */
function unansweredResult(callId: string, tool: string): InvocationResult {
  return {
    status: "error",
    code: "CANCELLED",
    text: `tools.${tool} (call ${callId}) was still running when the recorded chain returned: the recording has no answer to give it.`,
  };
}

/** What a strict replay's call past the end of a recording that ends early gets, as the run stops there. */
function endOfRecordingResult(trace: ChainTrace, callId: string, tool: string): InvocationResult {
  const why = trace.outcome === undefined ? "no outcome (the chain died or the trace was copied before this call started)" : "its caller cancelled it before this call started";
  return {
    status: "error",
    code: "CANCELLED",
    text: `Replay stopped: tools.${tool} (call ${callId}) is past the end of the trace of chain ${trace.chainId}, which has ${trace.calls.length} call(s): ${why}.`,
  };
}

/**
 * Which call of a suspended trace waits for which approval request: the request's `id` → the
 * call's `callId`. A request names its call (`callId`); one from a trace written before requests
 * did is matched, in order, to an open call of the same tool and arguments. Such a call never ran
 * (the approval gate comes before execution), so a resume runs it live once the request is
 * decided. Empty unless the chain ended `suspended`.
 *
 * @example
 * ```ts
 * const trace = await traceStore.load(chainId);
 * for (const [requestId, callId] of suspendedCalls(trace)) console.log(`${callId} waits for ${requestId}`);
 * ```
 */
export function suspendedCalls(trace: ChainTrace): ReadonlyMap<string, string> {
  checkChainTrace(trace, "suspendedCalls()");
  return matchSuspendedCalls(trace);
}

/** {@link suspendedCalls} of a trace already checked (loaded from a store, or checked by the caller). */
export function matchSuspendedCalls(trace: ChainTrace): ReadonlyMap<string, string> {
  const calls = new Map<string, string>();
  if (trace.outcome?.status !== "suspended") return calls;
  const taken = new Set<string>();
  for (const request of trace.approvalRequests) {
    const match = suspendedCallOf(trace, request, taken);
    if (match === undefined) continue;
    taken.add(match);
    calls.set(request.id, match);
  }
  return calls;
}

/**
 * True when `entry` is in doubt on a resume: started and never finished, or answered `IN_DOUBT`
 * by an earlier resume that left it undecided.
 */
export function isInDoubtOnResume(entry: TraceCallEntry): boolean {
  return entry.state !== "completed" || entry.result === undefined || ("code" in entry.result && entry.result.code === "IN_DOUBT");
}

/** The call ids of {@link suspendedCalls}, for a trace already checked. */
export function suspendedCallIds(trace: ChainTrace): ReadonlySet<string> {
  return new Set(matchSuspendedCalls(trace).values());
}

/** The open call of `trace` that `request` suspended, skipping `taken`. */
export function suspendedCallOf(
  trace: ChainTrace,
  request: { readonly tool: string; readonly args: unknown; readonly callId?: unknown },
  taken: ReadonlySet<string> = new Set(),
): string | undefined {
  // A request that names its call (every one made since requests carry callId) is that call:
  // matching by tool and arguments cannot tell two identical calls apart, and would take a call
  // that ran and was left in doubt for one that waits for approval.
  if (typeof request.callId === "string") {
    const named = trace.calls.find((call) => call.callId === request.callId);
    return named !== undefined && named.state !== "completed" && named.tool === request.tool && !taken.has(named.callId) ? named.callId : undefined;
  }
  const digest = digestJson(request.args);
  return trace.calls.find((call) => call.state !== "completed" && call.tool === request.tool && call.argsDigest === digest && !taken.has(call.callId))
    ?.callId;
}

function byCallIndex(a: TraceCallEntry, b: TraceCallEntry): number {
  return callIndexOf(a.callId) - callIndexOf(b.callId) || a.seq - b.seq;
}

function callIndexOf(callId: string): number {
  const index = Number(callId.replace(/^c/, ""));
  return Number.isFinite(index) ? index : Number.MAX_SAFE_INTEGER;
}
