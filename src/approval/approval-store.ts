import type { ApprovalDecision, ApprovalRequest } from "../kernel/index.ts";

/**
 * Where a {@link QueueApprovalHandler} keeps requests awaiting a human, and their decisions.
 * Shared by every process that decides (the server, a CLI, the chain that asked), so it is the
 * one place a decision is recorded; a durable implementation lets a decision survive a restart.
 *
 * A request is *pending* from `putPending` until it is decided or removed. The first decision
 * wins. Implementations: `MemoryApprovalStore`, `FileApprovalStore`.
 */
export interface ApprovalStore {
  /**
   * Records `request` as pending (a private JSON copy). A request with the same id is replaced;
   * a decision already recorded for that id is kept, so the request is then not pending. A
   * request put after `remove` of its id starts out pending: no earlier decision carries over.
   * Throws `ARGUMENT_INVALID` for a malformed request.
   */
  putPending(request: ApprovalRequest): Promise<void>;
  /** Requests without a decision, oldest first (`createdAt`, then `id`). */
  listPending(): Promise<ApprovalRequest[]>;
  /** The request of `id`, decided or not, or `undefined` when absent. */
  get(id: string): Promise<ApprovalRequest | undefined>;
  /**
   * Records the decision of a pending request. Throws `APPROVAL_NOT_FOUND` when no pending
   * request has `id` (absent, removed or already decided: the first decision wins), and
   * `ARGUMENT_INVALID` for a value that is not a decision.
   */
  decide(id: string, decision: ApprovalDecision): Promise<void>;
  /** The decision recorded for `id`, or `undefined` when none is. */
  getDecision(id: string): Promise<ApprovalDecision | undefined>;
  /** Forgets the request of `id` and its decision. An absent id is a no-op. */
  remove(id: string): Promise<void>;
}
