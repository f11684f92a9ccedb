/**
 * The per-chain state of a shared {@link ToolInvoker}: budget counter, call trace, pinned
 * artifacts, media counters, the concurrency slots and the session's abort signal.
 *
 * Invariants:
 * - The trace keeps at most `maxTraceRecords` records; later ones are only counted
 *   (`droppedRecords`), so a flood of calls cannot grow memory without bound. When it is full,
 *   a call whose tool ran takes the place of the latest kept one that never ran (refused:
 *   budget, arguments, approval): a flood of refusals, which end first, cannot push the calls
 *   that acted out of the trace.
 * - Every ref pinned through the session is unpinned exactly once, by `close()` (or
 *   `await using`). A pin that arrives after close (a call still running when the chain ended)
 *   is released at once.
 * - `close()` aborts the session's signal, so calls still running see their `ctx.signal` fire,
 *   and later invokes get a `CANCELLED` result.
 *
 * The mutable state is reachable only through {@link sessionStateOf}, which the invoker uses;
 * the public surface is read-only.
 */
import {
  ChainRuntimeError,
  describeThrown,
  type ArtifactRef,
  type BlobStore,
  type ChainCallRecord,
  type ChainPolicy,
} from "../kernel/index.ts";
import { CallSlots } from "./call-slots.ts";

/** Records a session keeps before it starts counting instead. */
export const DEFAULT_MAX_TRACE_RECORDS = 1000;

/** What {@link InvokerSession} is built from (by `ToolInvoker.openSession`). */
export interface InvokerSessionInit {
  readonly id: string;
  readonly policy: ChainPolicy;
  readonly blobStore?: BlobStore | undefined;
  readonly signal?: AbortSignal | undefined;
  /** @defaultValue {@link DEFAULT_MAX_TRACE_RECORDS} */
  readonly maxTraceRecords?: number | undefined;
}

/** @internal The mutable half of a session, used by the invoker. */
export class SessionState {
  readonly id: string;
  readonly policy: ChainPolicy;
  readonly blobStore: BlobStore | undefined;
  readonly maxTraceRecords: number;
  readonly slots: CallSlots;
  readonly trace: ChainCallRecord[] = [];
  /** Indexes in {@link trace} of the records of calls that never ran, in order. */
  readonly #notRun: number[] = [];
  readonly pins: ArtifactRef[] = [];
  readonly #external: AbortSignal | undefined;
  #mediaCounters: Map<string, number> | undefined;
  seq = 0;
  callCount = 0;
  droppedRecords = 0;
  closed = false;
  /** Made on first read of {@link signal}: most chains never need it. */
  #controller: AbortController | undefined;
  #aborted = false;
  /** Why the session was aborted; `undefined` with {@link #aborted} set means "closed". */
  #reason: unknown;

  constructor(init: InvokerSessionInit) {
    this.id = init.id;
    this.policy = init.policy;
    this.blobStore = init.blobStore;
    const max = init.maxTraceRecords ?? DEFAULT_MAX_TRACE_RECORDS;
    if (!Number.isInteger(max) || max < 0) {
      throw new ChainRuntimeError("POLICY_INVALID", `maxTraceRecords must be an integer >= 0; got ${String(max)}.`, {
        details: { field: "maxTraceRecords", value: max },
      });
    }
    this.maxTraceRecords = max;
    this.slots = new CallSlots(init.policy.maxConcurrentCalls);
    this.#external = init.signal;
    if (init.signal) {
      if (init.signal.aborted) this.#abort(init.signal.reason);
      else init.signal.addEventListener("abort", this, { once: true });
    }
  }

  /** True once the caller's signal fired or the session closed. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** Fires when the caller's signal fires or the session closes (already fired if it has). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason ?? closedReason());
    }
    return this.#controller.signal;
  }

  /** The caller's signal fired: cancel the session's calls. */
  handleEvent(): void {
    this.#abort(this.#external?.reason);
  }

  /** Aborts once; the signal fires now if it was made, else it is made aborted when first read. */
  #abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    if (this.#controller !== undefined) this.#controller.abort(reason ?? closedReason());
  }

  /**
   * Appends a record, or counts it when the trace is full; the record of a call whose tool ran
   * (`executed`) then replaces the latest kept record of one that did not, if any.
   */
  record(record: ChainCallRecord, executed: boolean): void {
    if (this.trace.length < this.maxTraceRecords) {
      if (!executed) this.#notRun.push(this.trace.length);
      this.trace.push(record);
      return;
    }
    this.droppedRecords++;
    const evicted = executed ? this.#notRun.pop() : undefined;
    if (evicted === undefined) return;
    // The latest of them: the indexes of the others, all before it, stay right.
    this.trace.splice(evicted, 1);
    this.trace.push(record);
  }

  /** The next media index of `tool` in this session, from 0. */
  nextMediaIndex(tool: string): number {
    this.#mediaCounters ??= new Map();
    const n = this.#mediaCounters.get(tool) ?? 0;
    this.#mediaCounters.set(tool, n + 1);
    return n;
  }

  /** Pins `ref` for the session's lifetime (released at once when the session already closed). */
  async pin(ref: ArtifactRef): Promise<void> {
    const store = this.blobStore;
    if (!store) return;
    await store.pin(ref);
    if (this.closed) await store.unpin(ref);
    else this.pins.push(ref);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.#external?.removeEventListener("abort", this);
    this.#abort(undefined);
    const store = this.blobStore;
    const refs = this.pins.splice(0, this.pins.length);
    if (!store || refs.length === 0) return;
    const outcomes = await Promise.allSettled(refs.map((ref) => store.unpin(ref)));
    const failed = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
    if (failed.length > 0) {
      throw new ChainRuntimeError(
        "STORE_FAILED",
        `Closing the session could not unpin ${failed.length} of ${refs.length} artifacts: ${describeThrown(failed[0]?.reason)}`,
        { details: { sessionId: this.id, failed: failed.length }, cause: failed[0]?.reason },
      );
    }
  }
}

/**
 * The abort reason of a closed session. Made without a stack trace: a DOMException captures one
 * (tens of µs, once per chain), and where the session was closed says nothing to its readers.
 */
function closedReason(): DOMException {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new DOMException("The invoker session was closed.", "AbortError");
  } finally {
    Error.stackTraceLimit = limit;
  }
}

let stateOf: (session: InvokerSession) => SessionState;

/**
 * One chain's view of a {@link ToolInvoker}: open it with `invoker.openSession()`, pass it to
 * every `invoke`, and close it when the chain ends (`await using session = ...` does that).
 */
export class InvokerSession implements AsyncDisposable {
  readonly #state: SessionState;

  static {
    stateOf = (session) => session.#state;
  }

  /**
   * Use `ToolInvoker.openSession()` rather than this constructor. Throws `POLICY_INVALID` when
   * `maxTraceRecords` is not an integer >= 0.
   */
  constructor(init: InvokerSessionInit) {
    this.#state = new SessionState(init);
  }

  /** The chain id: `ApprovalRequest.chainId`, `ToolContext.chainId`, and the default call-id prefix. */
  get id(): string {
    return this.#state.id;
  }

  /** The resolved policy this session's calls run under. */
  get policy(): ChainPolicy {
    return this.#state.policy;
  }

  /** Calls that passed the budget gate (refused-for-budget calls are not counted). */
  get callCount(): number {
    return this.#state.callCount;
  }

  /** Calls left before the budget gate refuses: `maxToolCalls - callCount`. */
  get remaining(): number {
    return Math.max(0, this.#state.policy.maxToolCalls - this.#state.callCount);
  }

  /** One record per call received, whatever its outcome, in order; capped (see {@link droppedRecords}). */
  get trace(): readonly ChainCallRecord[] {
    return this.#state.trace;
  }

  /** Records not kept because the trace reached `maxTraceRecords`. */
  get droppedRecords(): number {
    return this.#state.droppedRecords;
  }

  /** Refs this session pinned and has not released yet (one entry per pin). */
  get pinnedRefs(): readonly ArtifactRef[] {
    return this.#state.pins;
  }

  /** Fires when the caller's signal fires or the session closes. */
  get signal(): AbortSignal {
    return this.#state.signal;
  }

  /** True after `close()`. */
  get closed(): boolean {
    return this.#state.closed;
  }

  /**
   * Cancels running calls, refuses later ones, and unpins every artifact the session pinned,
   * each exactly once. Idempotent. Throws `ChainRuntimeError` `STORE_FAILED` when the store
   * failed to unpin (every unpin is still attempted).
   */
  close(): Promise<void> {
    return this.#state.close();
  }

  /** `await using session = invoker.openSession()` closes the session at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#state.close();
  }
}

/** @internal The mutable state of `session`, or `undefined` when it is not an {@link InvokerSession}. */
export function sessionStateOf(session: unknown): SessionState | undefined {
  return session instanceof InvokerSession ? stateOf(session) : undefined;
}
