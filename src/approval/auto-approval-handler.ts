import type { ApprovalDecision, ApprovalHandler, ApprovalRequest, ApprovalRequestOptions } from "../kernel/index.ts";
import { checkApprovalDecision } from "./check-approval-args.ts";

/** Decides a request programmatically; may be async. */
export type ApprovalPolicyFunction = (request: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;

/**
 * An {@link ApprovalHandler} that answers without a human: always the same decision, or whatever
 * a function says. For tests, scripted runs and trusted environments. Every request it sees is
 * kept in {@link AutoApprovalHandler.requests}.
 *
 * An aborted `signal` (before or while an async policy runs) resolves `"denied"`. A policy that
 * throws rejects the request with its error; one that returns something other than a decision
 * rejects with `ChainRuntimeError` `ARGUMENT_INVALID`.
 */
export class AutoApprovalHandler implements ApprovalHandler {
  readonly #decide: ApprovalDecision | ApprovalPolicyFunction;
  readonly #requests: ApprovalRequest[] = [];

  /**
   * @param decision - the answer to every request, or a function deciding each one.
   *   @defaultValue `"approved"`
   * Throws `ARGUMENT_INVALID` when `decision` is neither a decision nor a function.
   */
  constructor(decision: ApprovalDecision | ApprovalPolicyFunction = "approved") {
    this.#decide = typeof decision === "function" ? decision : checkApprovalDecision(decision);
  }

  /** Every request this handler was asked, in order (a copy). */
  get requests(): readonly ApprovalRequest[] {
    return [...this.#requests];
  }

  /** Answers `request` with the fixed decision or the policy's. */
  async request(request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision> {
    this.#requests.push(request);
    const { signal } = options;
    if (signal.aborted) return "denied";
    if (typeof this.#decide !== "function") return this.#decide;
    const policy = this.#decide;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<ApprovalDecision>((resolve) => {
      onAbort = () => resolve("denied");
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const decided = Promise.resolve(policy(request)).then((value) => checkApprovalDecision(value));
      return await Promise.race([decided, aborted]);
    } finally {
      if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
    }
  }
}
