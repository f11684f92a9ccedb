import type { ToolRisk } from "./tool-risk.ts";

/** A request for a human's yes or no. Immutable and JSON-serialisable, so it can be persisted. */
export interface ApprovalRequest {
  /** Unique id of this request (a UUID). */
  readonly id: string;
  /** The chain (or invoker session) the call belongs to. */
  readonly chainId: string;
  /** The tool the call would run. */
  readonly tool: string;
  /** The exact arguments that will run if approved: a deep-frozen copy of the host's own, so the approver cannot change them. */
  readonly args: unknown;
  /** The tool's risk: above the policy's `maxRiskUnapproved` (`critical` always asks). */
  readonly risk: ToolRisk;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /**
   * The call the request is for (its call id in the chain, e.g. `c3`), which tells two identical
   * calls apart. Absent in requests made before it was added, and in a request a caller built
   * without it.
   */
  readonly callId?: string;
}

/** A human's answer. `skipped` does not run the call and says so to the script. */
export type ApprovalDecision = "approved" | "denied" | "skipped";

/** Options passed with each approval request. */
export interface ApprovalRequestOptions {
  /** Fires when the invoker stops waiting (approval timeout, cancellation). */
  readonly signal: AbortSignal;
}

/** Who says yes. The invoker bounds every wait by `approvalTimeoutMs`. */
export interface ApprovalHandler {
  /**
   * Asks for a decision on one call. A rejection or a value that is not a decision refuses the
   * call (`APPROVAL_DENIED`), as does no answer within `approvalTimeoutMs` (`APPROVAL_TIMEOUT`);
   * `options.signal` fires when the invoker stops waiting.
   */
  request(request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision>;
}
