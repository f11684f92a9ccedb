import type { InvocationResult, InvocationStatus } from "../kernel/index.ts";

/**
 * What a direct (non-chain) call of one model turn comes back as: one per executed (or
 * refused) call, ready to become a tool-result message.
 *
 * - `status`: the invocation's status; `"skipped"` for a hosted tool (the provider runs it and
 *   its result arrives with the model's next turn).
 * - `content`: the text to send back to the model (for a failure, the explanation).
 * - `result`: the full {@link InvocationResult}, when the call went through the invoker or a
 *   provider-defined handler.
 * - `error`: set for every failure (`status` `"error"` or `"denied"`), same text as `content`.
 */
export interface ToolCallResponse {
  /** The call's id (the provider's tool-call id), or `call_<index>` when the call had none. */
  readonly id: string;
  readonly name: string;
  readonly status: InvocationStatus | "skipped";
  readonly content: string;
  readonly result?: InvocationResult;
  readonly error?: string;
}
