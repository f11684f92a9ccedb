import type { InvocationResult, InvocationStatus } from "../kernel/index.ts";

/**
 * What a direct (non-chain) call of one model turn comes back as: one per executed (or
 * refused) call, ready to become a tool-result message.
 *
 * - `status`: the invocation's status; `"skipped"` for a hosted tool (the provider runs it and
 *   its result arrives with the model's next turn).
 * - `content`: the text to send back to the model (for a failure, the explanation).
 * - `result`: the full {@link InvocationResult}, when the call went through the invoker, a
 *   provider-defined handler or a chain tool (`run_chain`: `structured` is the `ChainRunResult`, when
 *   it stays inline).
 * - `error`: set for every failure (`status` `"error"` or `"denied"`), same text as `content`.
 */
export interface ToolCallResponse {
  /**
   * The call's id (the provider's tool-call id); a generated `call_<index>` (or
   * `call_<index>_<n>`, never an id another call was given) when the call had none or repeats an
   * earlier call's id (that call is refused, not run). Unique among a round's responses.
   */
  readonly id: string;
  /** The tool's name as the model called it. */
  readonly name: string;
  /** The invocation's status; `"skipped"` for a hosted tool (the provider runs it). */
  readonly status: InvocationStatus | "skipped";
  /** The text to send back to the model (for a failure, the explanation). */
  readonly content: string;
  /** The full result, when the call went through the invoker, a provider-defined handler or a chain tool. */
  readonly result?: InvocationResult;
  /** Set for every failure (`status` `"error"` or `"denied"`), the same text as `content`. */
  readonly error?: string;
}
