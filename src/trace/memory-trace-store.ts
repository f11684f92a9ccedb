import { ChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { foldTraceEvents } from "./fold-trace-events.ts";
import { assertTraceEvent, type TraceEvent } from "./trace-event.ts";
import { decodeTraceFrames, encodeTraceFrame } from "./trace-frame-codec.ts";
import {
  assertTraceChainId,
  chainIdTakenError,
  orderTraceSummaries,
  selectTracesToPrune,
  summarizeTrace,
  type TraceListOptions,
  type TracePruneOptions,
  type TraceStore,
  type TraceSummary,
} from "./trace-store.ts";

/**
 * A {@link TraceStore} in this process's memory: for tests and runs whose traces need not
 * outlive the process (`durable` is false). Events are kept as the same encoded frames the
 * file store writes, so what loads back is exactly what a file would give.
 */
export class MemoryTraceStore implements TraceStore {
  /** Always false: the traces die with the process. */
  readonly durable = false;
  readonly #logs = new Map<string, Buffer[]>();
  /** Chains started and not yet ended through this store: never pruned. */
  readonly #open = new Set<string>();
  /** Resume claims: chain id -> the chain resuming it. */
  readonly #claims = new Map<string, string>();
  #closed = false;

  /**
   * Appends one event, synchronously encoded.
   * @throws ChainRuntimeError `TRACE_INVALID` (bad chain id or event), `STORE_FAILED` (closed, or unencodable event).
   */
  async append(chainId: string, event: TraceEvent): Promise<void> {
    assertTraceChainId(chainId);
    assertTraceEvent(event);
    if (this.#closed) throw new ChainRuntimeError("STORE_FAILED", "The trace store is closed.", { details: { chainId } });
    let log = this.#logs.get(chainId);
    if (log !== undefined && event.type === "chain-start") throw chainIdTakenError(chainId);
    const frame = encodeTraceFrame(event);
    if (log === undefined) {
      log = [];
      this.#logs.set(chainId, log);
    }
    log.push(frame);
    if (event.type === "chain-start") this.#open.add(chainId);
    if (event.type === "chain-end") this.#open.delete(chainId);
  }

  /** @throws ChainRuntimeError `TRACE_NOT_FOUND`, `TRACE_INVALID`. */
  async load(chainId: string): Promise<ChainTrace> {
    assertTraceChainId(chainId);
    const log = this.#logs.get(chainId);
    if (log === undefined) {
      throw new ChainRuntimeError("TRACE_NOT_FOUND", `No trace has chain id ${chainId}.`, { details: { chainId } });
    }
    return foldTraceEvents(decodeTraceFrames(Buffer.concat(log)).events);
  }

  /** Summaries, newest first; logs that do not fold are skipped. */
  async list(options: TraceListOptions = {}): Promise<TraceSummary[]> {
    const summaries: TraceSummary[] = [];
    for (const chainId of this.#logs.keys()) {
      try {
        summaries.push(summarizeTrace(await this.load(chainId)));
      } catch {
        // an unreadable log is not listed; load() reports why
      }
    }
    return orderTraceSummaries(summaries, options);
  }

  /** Removes traces by age and count; chains still being written are kept. */
  async prune(options: TracePruneOptions): Promise<number> {
    const victims = selectTracesToPrune(await this.list(), options).filter((chainId) => !this.#open.has(chainId));
    for (const chainId of victims) {
      this.#logs.delete(chainId);
      this.#claims.delete(chainId);
    }
    return victims.length;
  }

  /**
   * Claims the resume of `chainId` for `resumedAs` (see {@link TraceStore.claimResume}); the
   * first claim holds.
   * @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id, `STORE_FAILED` once closed.
   */
  async claimResume(chainId: string, resumedAs: string): Promise<string | undefined> {
    assertTraceChainId(chainId);
    assertTraceChainId(resumedAs);
    if (this.#closed) throw new ChainRuntimeError("STORE_FAILED", "The trace store is closed.", { details: { chainId } });
    const holder = this.#claims.get(chainId);
    if (holder !== undefined) return holder;
    this.#claims.set(chainId, resumedAs);
    return undefined;
  }

  /** `"this process"` while a chain started through this store has not ended (see {@link TraceStore.liveWriter}). */
  async liveWriter(chainId: string): Promise<string | undefined> {
    assertTraceChainId(chainId);
    return this.#open.has(chainId) ? "this process" : undefined;
  }

  /** Marks the store closed; the traces stay readable. Chains not ended by then are no longer written. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#open.clear();
  }
}
