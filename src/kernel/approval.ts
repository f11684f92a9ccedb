import type { ToolRisk } from "./tool-risk.ts";

/** A request for a human's yes or no. Immutable and JSON-serialisable, so it can be persisted. */
export interface ApprovalRequest {
  readonly id: string;
  /** The chain (or invoker session) the call belongs to. */
  readonly chainId: string;
  readonly tool: string;
  /** The exact arguments that will run if approved: a deep-frozen copy of the host's own, so the approver cannot change them. */
  readonly args: unknown;
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
  request(request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision>;
}
