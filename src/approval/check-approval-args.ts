import { ChainRuntimeError, isToolRisk, type ApprovalDecision, type ApprovalRequest } from "../kernel/index.ts";

/** Every decision a human can give. */
export const APPROVAL_DECISIONS: readonly ApprovalDecision[] = Object.freeze(["approved", "denied", "skipped"]);

/** Longest request id the stores accept, in characters. */
export const MAX_APPROVAL_ID_LENGTH = 512;

/** True for `"approved"`, `"denied"` or `"skipped"`. */
export function isApprovalDecision(value: unknown): value is ApprovalDecision {
  return value === "approved" || value === "denied" || value === "skipped";
}

/** Returns `decision` when it is one; throws `ChainRuntimeError` `ARGUMENT_INVALID` otherwise. */
export function checkApprovalDecision(decision: unknown): ApprovalDecision {
  if (!isApprovalDecision(decision)) {
    throw new ChainRuntimeError(
      "ARGUMENT_INVALID",
      `An approval decision must be "approved", "denied" or "skipped"; got ${JSON.stringify(decision) ?? String(decision)}.`,
      { details: { argument: "decision" } },
    );
  }
  return decision;
}

/** Throws `ARGUMENT_INVALID` unless `id` is a non-empty string of at most {@link MAX_APPROVAL_ID_LENGTH} characters. */
export function checkApprovalId(id: unknown): string {
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_APPROVAL_ID_LENGTH) {
    throw new ChainRuntimeError(
      "ARGUMENT_INVALID",
      `An approval request id must be a non-empty string of at most ${MAX_APPROVAL_ID_LENGTH} characters.`,
      { details: { argument: "id" } },
    );
  }
  return id;
}

/**
 * A checked, private JSON copy of `request` (what a store keeps, so later mutation of the
 * caller's `args` cannot change it). Throws `ARGUMENT_INVALID` naming the field when the request
 * is malformed or its `args` are not JSON-serialisable.
 */
export function checkApprovalRequest(request: unknown): ApprovalRequest {
  if (typeof request !== "object" || request === null) {
    throw invalid("request", "must be an object");
  }
  const r = request as Record<string, unknown>;
  checkApprovalId(r.id);
  if (typeof r.chainId !== "string") throw invalid("chainId", "must be a string");
  if (typeof r.tool !== "string" || r.tool === "") throw invalid("tool", "must be a non-empty string");
  if (!isToolRisk(r.risk)) throw invalid("risk", 'must be "safe", "high" or "critical"');
  if (typeof r.createdAt !== "number" || !Number.isFinite(r.createdAt)) throw invalid("createdAt", "must be a finite number");
  if (r.callId !== undefined && typeof r.callId !== "string") throw invalid("callId", "must be a string when given");
  let args: unknown;
  try {
    const text = JSON.stringify(r.args);
    args = text === undefined ? undefined : JSON.parse(text);
  } catch (error) {
    throw invalid("args", "must be JSON-serialisable", error);
  }
  const copy = { id: r.id as string, chainId: r.chainId, tool: r.tool, args, risk: r.risk, createdAt: r.createdAt, ...(r.callId === undefined ? {} : { callId: r.callId as string }) };
  return copy;
}

/** Sorts requests oldest first: by `createdAt`, then by `id`. */
export function compareApprovalRequests(a: ApprovalRequest, b: ApprovalRequest): number {
  if (a.createdAt !== b.createdAt) return a.createdAt - b.createdAt;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** The `APPROVAL_NOT_FOUND` error of a decide on a request that is not pending. */
export function approvalNotPending(id: string, alreadyDecided: boolean): ChainRuntimeError {
  return new ChainRuntimeError(
    "APPROVAL_NOT_FOUND",
    alreadyDecided ? `Approval request ${JSON.stringify(id)} was already decided.` : `No pending approval request ${JSON.stringify(id)}.`,
    { details: { id, alreadyDecided } },
  );
}

function invalid(field: string, problem: string, cause?: unknown): ChainRuntimeError {
  return new ChainRuntimeError("ARGUMENT_INVALID", `ApprovalRequest.${field} ${problem}.`, {
    details: { argument: `request.${field}` },
    ...(cause === undefined ? {} : { cause }),
  });
}
