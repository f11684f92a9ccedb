import { randomUUID } from "node:crypto";
import {
  describeThrown,
  isToolRisk,
  requiresApproval,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type InvocationFailure,
  type ToolRisk,
} from "../../kernel/index.ts";
import { CallAbortScope } from "../call-abort-scope.ts";
import { invocationFailure } from "../invocation-failure.ts";
import type { SessionState } from "../invoker-session.ts";

/** What the approval gate needs to know about one call. */
export interface ApprovalGateInput {
  readonly handler: ApprovalHandler | undefined;
  readonly state: SessionState;
  readonly tool: string;
  /** The tool's declared risk; anything that is not a risk level counts as `critical`. */
  readonly risk: unknown;
  /** The argument copy: exactly what will run if approved. */
  readonly args: Record<string, unknown>;
  readonly callId: string;
  readonly signal: AbortSignal | undefined;
}

type HandlerOutcome = { readonly decision: unknown } | { readonly thrown: unknown };

/** The risk level a tool runs under: its own, `"safe"` when absent, `"critical"` when malformed. */
export function effectiveRisk(risk: unknown): ToolRisk {
  if (risk === undefined) return "safe";
  return isToolRisk(risk) ? risk : "critical";
}

/**
 * Gate 5, risk and approval. Calls at or below `maxRiskUnapproved` pass (`critical` never
 * does). Otherwise the handler is asked, and the wait is bounded by `approvalTimeoutMs`: on
 * timeout its signal fires and the call is `denied` (`APPROVAL_TIMEOUT`), so a slow human never
 * hangs a chain. No handler, a `denied` answer, a handler that throws, or an unknown answer:
 * `denied` (`APPROVAL_DENIED`); `skipped`: `denied` (`APPROVAL_SKIPPED`). A session or caller
 * cancellation while waiting: `error` (`CANCELLED`).
 */
export async function requestApproval(input: ApprovalGateInput): Promise<InvocationFailure | undefined> {
  const { state, tool } = input;
  const risk = effectiveRisk(input.risk);
  if (!requiresApproval(risk, state.policy.maxRiskUnapproved)) return undefined;
  const handler = input.handler;
  if (handler === undefined) {
    return invocationFailure(
      "APPROVAL_DENIED",
      `Tool "${tool}" (risk ${risk}) needs a human's approval and no approval handler is configured, so the call was denied and did not run. ` +
        "Do not retry it in this chain.",
      "denied",
    );
  }
  const request: ApprovalRequest = Object.freeze({
    id: randomUUID(),
    chainId: state.id,
    tool,
    // The approver's own frozen copy: what it is shown is what runs, and nothing it does to
    // that object (an approval UI tidying it for display, say) can change the call after its
    // arguments were validated and recorded.
    args: frozenCopy(input.args),
    risk,
    createdAt: Date.now(),
    callId: input.callId,
  });
  const timeoutMs = state.policy.approvalTimeoutMs;
  const scope = new CallAbortScope(state.id, input.callId, timeoutMs, state, input.signal);
  let winner: HandlerOutcome | "timeout" | "cancelled";
  try {
    winner = scope.signal.aborted ? "cancelled" : await Promise.race([askHandler(handler, request, scope.signal), scope.aborted]);
  } finally {
    scope.dispose();
  }
  if (winner === "timeout") {
    return invocationFailure(
      "APPROVAL_TIMEOUT",
      `No approval for "${tool}" (risk ${risk}) within ${timeoutMs} ms (approvalTimeoutMs), so the call was denied and did not run. ` +
        "Do not retry it in this chain; call the tool directly, outside the script, if it is still needed.",
      "denied",
    );
  }
  if (winner === "cancelled") {
    return invocationFailure("CANCELLED", `The call of "${tool}" was cancelled while waiting for approval; it did not run.`);
  }
  if ("thrown" in winner) {
    return invocationFailure(
      "APPROVAL_DENIED",
      `The approval handler failed for "${tool}" (${describeThrown(winner.thrown)}), so the call was denied and did not run.`,
      "denied",
    );
  }
  return decisionToFailure(winner.decision, tool, risk);
}

/** What a decision means for the call: `undefined` to go on (approved), else the failure the script reads. */
export function decisionToFailure(decision: unknown, tool: string, risk: ToolRisk): InvocationFailure | undefined {
  switch (decision as ApprovalDecision) {
    case "approved":
      return undefined;
    case "skipped":
      return invocationFailure(
        "APPROVAL_SKIPPED",
        `The call of "${tool}" (risk ${risk}) was skipped by the approver and did not run. Continue without its result.`,
        "denied",
      );
    case "denied":
      return invocationFailure(
        "APPROVAL_DENIED",
        `The call of "${tool}" (risk ${risk}) was denied by the approver and did not run. Do not retry it in this chain.`,
        "denied",
      );
    default:
      return invocationFailure(
        "APPROVAL_DENIED",
        `The approval handler gave no valid decision for "${tool}" (got ${describeThrown(decision)}), so the call was denied and did not run.`,
        "denied",
      );
  }
}

async function askHandler(handler: ApprovalHandler, request: ApprovalRequest, signal: AbortSignal): Promise<HandlerOutcome> {
  try {
    return { decision: await handler.request(request, { signal }) };
  } catch (error) {
    return { thrown: error };
  }
}

/** A deep copy of plain JSON data, frozen all the way down (arguments nest at most 64 levels). */
function frozenCopy<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  for (const item of Object.values(value)) deepFreeze(item);
  return Object.freeze(value);
}
