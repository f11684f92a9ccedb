/**
 * QueueApprovalHandler: approvals decided later, by someone else, possibly in another process.
 *
 * ```
 * request(req) ──putPending──▶ ApprovalStore ◀──decide(id)── server / CLI / other instance
 *      │                             │
 *      └── waits ◀── poll getDecision(id) at once after an in-process decide(), and every
 *                    pollIntervalMs (decisions from elsewhere)
 *                ◀── signal abort ──▶ "denied", entry removed
 * ```
 *
 * Invariants:
 * - A decision already in the store for `req.id` is returned at once (a restarted process asking
 *   again gets the answer given while it was down).
 * - A waiter takes its decision from the store only, never from a `decide()` call: a decide that
 *   raced a remove and re-queue of the id is not kept for the new request (see `FileApprovalStore`),
 *   and handing its value over would answer the new request with it.
 * - Each waiter settles exactly once; on settling its timer and abort listener are gone and its
 *   entry is removed from the store (the decision is consumed).
 * - A pending entry that vanishes from the store without a decision settles as `"denied"`.
 * - A store read failing while polling is retried at the next tick: the invoker's own approval
 *   timeout bounds the wait.
 */
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import {
  ChainRuntimeError,
  type ApprovalDecision,
  type ApprovalHandler,
  type ApprovalRequest,
  type ApprovalRequestOptions,
} from "../kernel/index.ts";
import type { ApprovalStore } from "./approval-store.ts";
import { checkApprovalDecision, checkApprovalRequest } from "./check-approval-args.ts";
import { MemoryApprovalStore } from "./memory-approval-store.ts";

/** Every field of {@link QueueApprovalHandlerOptions}. */
const QUEUE_APPROVAL_HANDLER_OPTION_NAMES = optionNames<QueueApprovalHandlerOptions>({ store: true, pollIntervalMs: true });

/** How often a waiter polls the store when none is given. */
export const DEFAULT_APPROVAL_POLL_INTERVAL_MS = 250;

/** Options of a {@link QueueApprovalHandler}. */
export interface QueueApprovalHandlerOptions {
  /**
   * Where pending requests and decisions live. Use a `FileApprovalStore` to decide from
   * another process or across restarts.
   * @defaultValue a new `MemoryApprovalStore`
   */
  readonly store?: ApprovalStore;
  /**
   * How often each waiter checks the store for a decision made by another instance, in ms.
   * Decisions made through this instance's {@link QueueApprovalHandler.decide} need no poll.
   * @defaultValue 250 ({@link DEFAULT_APPROVAL_POLL_INTERVAL_MS})
   */
  readonly pollIntervalMs?: number;
}

/** Makes a waiter read the store now (a decide in this instance may have answered it). */
type Wake = () => void;

/**
 * An {@link ApprovalHandler} that queues each request in an {@link ApprovalStore} and waits for
 * a decision made through {@link QueueApprovalHandler.decide} (here or in any instance over the
 * same store). An aborted `signal` stops the wait with `"denied"` and removes the entry.
 *
 * Errors: `request` throws `STORE_FAILED` when the store cannot record the request, and
 * `ARGUMENT_INVALID` for a malformed request.
 */
export class QueueApprovalHandler implements ApprovalHandler {
  /** The store requests and decisions go through. */
  readonly store: ApprovalStore;
  /** Poll interval in ms. */
  readonly pollIntervalMs: number;
  readonly #waiters = new Map<string, Set<Wake>>();

  /** @param options - see {@link QueueApprovalHandlerOptions}. Throws `ARGUMENT_INVALID` for a bad poll interval. */
  constructor(options: QueueApprovalHandlerOptions = {}) {
    checkOptionNames("QueueApprovalHandler", options, QUEUE_APPROVAL_HANDLER_OPTION_NAMES);
    const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_APPROVAL_POLL_INTERVAL_MS;
    if (typeof pollIntervalMs !== "number" || !Number.isFinite(pollIntervalMs) || pollIntervalMs <= 0) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `pollIntervalMs must be a finite number > 0; got ${String(pollIntervalMs)}.`, {
        details: { argument: "pollIntervalMs", value: pollIntervalMs },
      });
    }
    this.store = options.store ?? new MemoryApprovalStore();
    this.pollIntervalMs = pollIntervalMs;
  }

  /**
   * Queues `request` and resolves with the decision once one is made. Resolves `"denied"` at
   * once when `signal` is already aborted (nothing is queued), and when it aborts while waiting
   * (the entry is removed).
   */
  async request(request: ApprovalRequest, options: ApprovalRequestOptions): Promise<ApprovalDecision> {
    const { signal } = options;
    const checked = checkApprovalRequest(request);
    if (signal.aborted) return "denied";
    const earlier = await this.store.getDecision(checked.id);
    if (earlier !== undefined) {
      await this.#forget(checked.id);
      return earlier;
    }
    await this.store.putPending(checked);
    if (signal.aborted) {
      await this.#forget(checked.id);
      return "denied";
    }
    return this.#wait(checked.id, signal);
  }

  /** Requests awaiting a decision in the store (from every instance), oldest first. */
  async pending(): Promise<ApprovalRequest[]> {
    return this.store.listPending();
  }

  /**
   * Records `decision` for request `id` in the store and wakes the waiters of `id` in this
   * instance, which read it from the store at once (waiters in other instances see it at their
   * next poll). Throws `APPROVAL_NOT_FOUND` when no pending request has `id`, `ARGUMENT_INVALID`
   * for a value that is not a decision.
   */
  async decide(id: string, decision: ApprovalDecision): Promise<void> {
    checkApprovalDecision(decision);
    await this.store.decide(id, decision);
    const waiters = this.#waiters.get(id);
    if (waiters !== undefined) for (const wake of [...waiters]) wake();
  }

  #wait(id: string, signal: AbortSignal): Promise<ApprovalDecision> {
    return new Promise<ApprovalDecision>((resolve) => {
      let settled = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let polling = false;
      let wokenWhilePolling = false;
      const waiters = this.#waiters.get(id) ?? new Set<Wake>();
      this.#waiters.set(id, waiters);

      const settle = (decision: ApprovalDecision): void => {
        if (settled) return;
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        waiters.delete(wake);
        if (waiters.size === 0 && this.#waiters.get(id) === waiters) this.#waiters.delete(id);
        void this.#forget(id).then(() => resolve(decision));
      };
      const onAbort = (): void => settle("denied");

      const poll = async (): Promise<void> => {
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        if (polling) {
          // a decide woke this waiter during a read that may predate the decision: read again
          wokenWhilePolling = true;
          return;
        }
        polling = true;
        do {
          wokenWhilePolling = false;
          try {
            const decision = await this.store.getDecision(id);
            if (decision !== undefined) settle(decision);
            else if ((await this.store.get(id)) === undefined) settle("denied");
          } catch {
            // transient store failure: try again at the next tick
          }
        } while (wokenWhilePolling && !settled);
        polling = false;
        if (!settled) timer = setTimeout(() => void poll(), this.pollIntervalMs);
      };
      const wake: Wake = () => void poll();

      waiters.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
      timer = setTimeout(() => void poll(), this.pollIntervalMs);
    });
  }

  /** Removes the entry of `id`, swallowing store failures (the outcome is already decided). */
  async #forget(id: string): Promise<void> {
    try {
      await this.store.remove(id);
    } catch {
      // best effort: a stale entry is harmless, and its decision is already consumed
    }
  }
}
