/**
 * `resumeChain`: the second half of a durable approval. A chain run with
 * `approvalMode: "suspend"` stopped at a call that needs a human, its trace on disk and no
 * isolate held; any process with the same stores continues it here once the human decided.
 *
 * It is a resume-replay of the suspended trace: completed calls are answered from the trace,
 * the suspended call runs live with `decision` applied to it alone, and the rest runs live. The
 * resumed chain keeps `approvalMode: "suspend"` by default, so the next call that needs approval
 * suspends it again (resume the new chain id then).
 * @module
 */
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import { checkChainTrace } from "../trace/check-chain-trace.ts";
import { isApprovalDecision } from "../approval/check-approval-args.ts";
import { ChainRuntimeError, type ApprovalDecision, type ApprovalRequest } from "../kernel/index.ts";
import type { ChainTrace } from "../trace/chain-trace.ts";
import type { TraceStore } from "../trace/trace-store.ts";
import { replay, type ReplayOptions, type ReplayReport } from "./replay.ts";
import { matchSuspendedCalls, suspendedCalls } from "./replay-router.ts";

/** Options of {@link resumeChain}: those of a resume `replay`, with the store required. */
export interface ResumeChainOptions extends Omit<ReplayOptions, "mode" | "approvals" | "traceStore" | "approvalMode"> {
  /** The store the suspended chain was traced to; the resumed chain is traced there too. */
  readonly traceStore: TraceStore;
  /** Which pending request `decision` answers. @defaultValue the first pending request */
  readonly requestId?: string;
  /**
   * The suspended trace itself, when it was read from elsewhere (a `.trace` file moved out of
   * the store); its `chainId` must be `chainId`. The resumed chain is still traced to
   * `traceStore`, which also tells whether this suspension was already resumed.
   * @defaultValue `traceStore.load(chainId)`
   */
  readonly trace?: ChainTrace;
  /** What later calls needing approval do. @defaultValue `"suspend"` */
  readonly approvalMode?: "wait" | "suspend";
}

/** Every field of {@link ResumeChainOptions}. */
const RESUME_OPTION_NAMES = optionNames<ResumeChainOptions>({
  traceStore: true,
  requestId: true,
  trace: true,
  approvalMode: true,
  source: true,
  toolbox: true,
  tools: true,
  inDoubt: true,
  approvalHandler: true,
  blobStore: true,
  hooks: true,
  policy: true,
  driver: true,
  chainId: true,
  force: true,
  signal: true,
  onProgress: true,
});

/** The approval requests of a suspended trace still waiting for a decision, oldest first (see {@link suspendedCalls}). */
export function pendingApprovals(trace: ChainTrace): ApprovalRequest[] {
  const waiting = suspendedCalls(trace);
  return trace.approvalRequests.filter((request) => waiting.has(request.id));
}

/**
 * Resumes suspended chain `chainId` with `decision` for its pending approval (see the module
 * comment). Resolves with the resume's report; `report.run` is the new chain (`status` `ok`,
 * `error`, or `suspended` again with a new `pendingApproval`).
 *
 * @throws ChainRuntimeError `TRACE_NOT_FOUND` (no such chain), `REPLAY_FAILED` (the chain is not
 * suspended, `requestId` is not pending, or it was already resumed or is being resumed: see
 * `TraceStore.claimResume`), `ARGUMENT_INVALID` (a
 * decision that is not `approved`, `denied` or `skipped`).
 */
export async function resumeChain(chainId: string, decision: ApprovalDecision, options: ResumeChainOptions): Promise<ReplayReport> {
  if (!isApprovalDecision(decision)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `An approval decision is "approved", "denied" or "skipped"; got ${JSON.stringify(decision)}.`);
  }
  if (typeof options !== "object" || options === null || typeof options.traceStore?.load !== "function") {
    throw new ChainRuntimeError("ARGUMENT_INVALID", "resumeChain() needs options with the traceStore the suspended chain was traced to.");
  }
  checkOptionNames("resumeChain()", options, RESUME_OPTION_NAMES);
  if (options.trace !== undefined) checkChainTrace(options.trace, "resumeChain() options.trace");
  if (options.trace !== undefined && options.trace.chainId !== chainId) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `options.trace is chain ${JSON.stringify(options.trace.chainId)}, not ${JSON.stringify(chainId)}.`, {
      details: { chainId },
    });
  }
  const trace = options.trace ?? (await options.traceStore.load(chainId));
  if (trace.outcome?.status !== "suspended") {
    throw new ChainRuntimeError(
      "REPLAY_FAILED",
      `Chain ${chainId} is not suspended (its status is ${trace.outcome?.status ?? "unknown: it never ended"}); use replay(trace, { mode: "resume" }) for a chain that died.`,
      { details: { chainId } },
    );
  }
  const waiting = matchSuspendedCalls(trace); // checked above, or folded by the store
  const pending = trace.approvalRequests.filter((candidate) => waiting.has(candidate.id));
  const request = options.requestId === undefined ? pending[0] : pending.find((candidate) => candidate.id === options.requestId);
  if (request === undefined) {
    throw new ChainRuntimeError(
      "REPLAY_FAILED",
      options.requestId === undefined
        ? `Chain ${chainId} has no pending approval request.`
        : `Approval request ${options.requestId} is not pending in chain ${chainId}.`,
      { details: { chainId, requestId: options.requestId } },
    );
  }
  const callId = waiting.get(request.id);
  const { requestId: _requestId, trace: _trace, ...rest } = options;
  return replay(trace, {
    ...rest,
    mode: "resume",
    approvalMode: options.approvalMode ?? "suspend",
    ...(callId === undefined ? {} : { approvals: { [callId]: decision } }),
  });
}
