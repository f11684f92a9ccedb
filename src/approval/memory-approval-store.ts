import { type ApprovalDecision, type ApprovalRequest } from "../kernel/index.ts";
import type { ApprovalStore } from "./approval-store.ts";
import {
  approvalNotPending,
  checkApprovalDecision,
  checkApprovalId,
  checkApprovalRequest,
  compareApprovalRequests,
} from "./check-approval-args.ts";

interface Entry {
  request: ApprovalRequest;
  decision?: ApprovalDecision;
}

/**
 * An {@link ApprovalStore} in a `Map`: for tests and single-process use. Keeps JSON copies of
 * requests, so it behaves like a durable store except that nothing survives the process.
 */
export class MemoryApprovalStore implements ApprovalStore {
  readonly #entries = new Map<string, Entry>();

  /** See {@link ApprovalStore.putPending}. */
  async putPending(request: ApprovalRequest): Promise<void> {
    const copy = checkApprovalRequest(request);
    const entry = this.#entries.get(copy.id);
    if (entry === undefined) this.#entries.set(copy.id, { request: copy });
    else entry.request = copy;
  }

  /** See {@link ApprovalStore.listPending}. */
  async listPending(): Promise<ApprovalRequest[]> {
    const pending: ApprovalRequest[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.decision === undefined) pending.push(structuredClone(entry.request));
    }
    return pending.sort(compareApprovalRequests);
  }

  /** See {@link ApprovalStore.get}. */
  async get(id: string): Promise<ApprovalRequest | undefined> {
    const entry = this.#entries.get(checkApprovalId(id));
    return entry === undefined ? undefined : structuredClone(entry.request);
  }

  /** See {@link ApprovalStore.decide}. */
  async decide(id: string, decision: ApprovalDecision): Promise<void> {
    checkApprovalDecision(decision);
    const entry = this.#entries.get(checkApprovalId(id));
    if (entry === undefined || entry.decision !== undefined) throw approvalNotPending(id, entry !== undefined);
    entry.decision = decision;
  }

  /** See {@link ApprovalStore.getDecision}. */
  async getDecision(id: string): Promise<ApprovalDecision | undefined> {
    return this.#entries.get(checkApprovalId(id))?.decision;
  }

  /** See {@link ApprovalStore.remove}. */
  async remove(id: string): Promise<void> {
    this.#entries.delete(checkApprovalId(id));
  }
}
