import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import { ChainRuntimeError, type ChainRunStatus } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import type { TraceEvent } from "./trace-event.ts";

/** One line of {@link TraceStore.list}. */
export interface TraceSummary {
  readonly chainId: string;
  readonly parentChainId?: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Absent while the chain runs, or when it died before its end was logged. */
  readonly status?: ChainRunStatus;
  /** Calls in the log. */
  readonly calls: number;
}

/** Options of {@link TraceStore.list}. */
export interface TraceListOptions {
  /** Return at most this many summaries (the newest). @defaultValue no limit */
  readonly limit?: number;
}

/**
 * Options of {@link TraceStore.prune}. A trace is removed when either rule selects it; with
 * neither rule, nothing is removed. A chain this store is still writing (started, not ended)
 * is never removed.
 */
export interface TracePruneOptions {
  /** Remove traces created more than this many milliseconds ago. @defaultValue no age limit */
  readonly olderThanMs?: number;
  /** Keep only the newest `keep` traces. @defaultValue no count limit */
  readonly keep?: number;
  /** The current time, epoch milliseconds (for tests). @defaultValue `Date.now()` */
  readonly now?: number;
}

/**
 * Where chain traces live: one append-only event log per chain id.
 *
 * Implementations: `MemoryTraceStore` (tests, ephemeral runs) and `FileTraceStore` (the
 * embedded default: one file per chain, fsync'd). Every implementation runs
 * `runTraceStoreContract` in the tests.
 *
 * Invariants every implementation keeps:
 * - Appends of one chain land in the order `append` was called, whether or not the caller
 *   awaited the previous one.
 * - When {@link TraceStore.durable} is true, a `tool-call`, `tool-result` or `chain-end` event is
 *   on stable storage when its `append` resolves.
 * - Failures throw `ChainRuntimeError`: `TRACE_INVALID` for a bad chain id or event,
 *   `TRACE_NOT_FOUND` for a missing trace, `STORE_FAILED` (with `cause`) when storage fails.
 */
export interface TraceStore {
  /** True when appended events outlive this process. */
  readonly durable: boolean;
  /**
   * Appends one event to the chain's log (creating the log on its first event). A `chain-start`
   * for a chain id that already has a log is refused with `TRACE_INVALID`, and that log is left
   * as it was: a chain id names one run.
   */
  append(chainId: string, event: TraceEvent): Promise<void>;
  /**
   * The chain's trace, folded from its log. Calls without a result read `in-doubt`.
   * @throws ChainRuntimeError `TRACE_NOT_FOUND`, `TRACE_INVALID`, `STORE_FAILED`.
   */
  load(chainId: string): Promise<ChainTrace>;
  /** Summaries of every readable trace, newest first (ties by chain id). Unreadable logs are skipped. */
  list(options?: TraceListOptions): Promise<TraceSummary[]>;
  /** Removes old traces (and their resume claims); resolves to how many were removed. */
  prune(options: TracePruneOptions): Promise<number>;
  /**
   * Records that chain `chainId` is being resumed as chain `resumedAs`, atomically: of any
   * number of claims of one chain, in one process or in several sharing the store, exactly one
   * gets `undefined` (it holds the claim); every other gets the `resumedAs` of that claim
   * ({@link UNREADABLE_RESUME_CLAIM} when it cannot be read, e.g. cut short by a crash). A claim
   * is never replaced or released: a resume that ran its live calls must not be run again, and
   * one that died before running anything is forced past it by its caller. `replay` and
   * `resumeChain` take it before anything runs live. Durable where the store is.
   *
   * Optional: without it a store gets only the weaker check (a trace in the store naming
   * `chainId` as its parent), which two resumes started at the same moment both pass.
   * @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id, `STORE_FAILED` when storage fails.
   */
  claimResume?(chainId: string, resumedAs: string): Promise<string | undefined>;
  /**
   * Who is still writing chain `chainId`'s log, if anyone: a description such as `"this
   * process"` or `"process 4242 on host-a"`, or `undefined` when no live writer holds it (the
   * chain ended, or its process died). A writer that cannot be checked (another host) counts as
   * live. `replay` refuses to resume a chain that is still being written (its run would make
   * the calls the resume is about to make again), and `prune` keeps it.
   *
   * Optional: without it, only chains written through the same store object are known to run.
   * @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id, `STORE_FAILED` when storage fails.
   */
  liveWriter?(chainId: string): Promise<string | undefined>;
  /** Waits for pending appends and releases resources. Later appends throw `STORE_FAILED`. */
  close(): Promise<void>;
}

/** What {@link TraceStore.claimResume} reports for a claim it cannot read: never a chain id. */
export const UNREADABLE_RESUME_CLAIM = "?";

const CHAIN_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** True when `value` is a chain id {@link assertTraceChainId} accepts. */
export function isTraceChainId(value: unknown): value is string {
  return typeof value === "string" && CHAIN_ID_PATTERN.test(value);
}

/**
 * Checks that `chainId` is safe to use as a file name: 1 to 128 of `A-Z a-z 0-9 _ -`.
 * @throws ChainRuntimeError `TRACE_INVALID` otherwise (path traversal, empty, too long).
 */
export function assertTraceChainId(chainId: unknown): asserts chainId is string {
  if (!isTraceChainId(chainId)) {
    throw new ChainRuntimeError(
      "TRACE_INVALID",
      `A trace chain id must be 1 to 128 letters, digits, "_" or "-"; got ${JSON.stringify(String(chainId)).slice(0, 140)}.`,
      { details: { chainId: typeof chainId === "string" ? chainId.slice(0, 200) : typeof chainId } },
    );
  }
}

/** The stores' refusal of a `chain-start` for a chain id that already has a log. */
export function chainIdTakenError(chainId: string): ChainRuntimeError {
  return new ChainRuntimeError(
    "TRACE_INVALID",
    `Chain id ${chainId} already has a trace; a chain id names one run (leave chainId out for a fresh one).`,
    { details: { chainId } },
  );
}

/** The {@link TraceSummary} of a trace. */
export function summarizeTrace(trace: ChainTrace): TraceSummary {
  return {
    chainId: trace.chainId,
    ...(trace.parentChainId === undefined ? {} : { parentChainId: trace.parentChainId }),
    createdAt: trace.createdAt,
    ...(trace.outcome === undefined ? {} : { status: trace.outcome.status }),
    calls: trace.calls.length,
  };
}

/** Sorts summaries newest first, ties by chain id, and applies `limit`. Used by the stores. */
export function orderTraceSummaries(summaries: TraceSummary[], options: TraceListOptions = {}): TraceSummary[] {
  checkOptionNames("list()", options, LIST_OPTION_NAMES);
  summaries.sort((a, b) => b.createdAt - a.createdAt || (a.chainId < b.chainId ? -1 : a.chainId > b.chainId ? 1 : 0));
  if (options.limit !== undefined) {
    if (!Number.isInteger(options.limit) || options.limit < 0) {
      throw new ChainRuntimeError("TRACE_INVALID", `list({ limit }) must be an integer >= 0; got ${String(options.limit)}.`, {
        details: { limit: options.limit },
      });
    }
    return summaries.slice(0, options.limit);
  }
  return summaries;
}

/** Every field of {@link TraceListOptions}. */
const LIST_OPTION_NAMES = optionNames<TraceListOptions>({ limit: true });
/** Every field of {@link TracePruneOptions}. */
const PRUNE_OPTION_NAMES = optionNames<TracePruneOptions>({ olderThanMs: true, keep: true, now: true });

/**
 * The chain ids {@link TraceStore.prune} removes from `summaries` under `options`. Pure; shared
 * by the stores so both prune alike.
 * @throws ChainRuntimeError `TRACE_INVALID` when `olderThanMs` or `keep` is negative or not a number.
 */
export function selectTracesToPrune(summaries: readonly TraceSummary[], options: TracePruneOptions): string[] {
  // A misspelt field (kepe) would prune nothing, or everything a bound was meant to keep.
  checkOptionNames("prune()", options, PRUNE_OPTION_NAMES);
  const { olderThanMs, keep } = options;
  if (olderThanMs !== undefined && !(typeof olderThanMs === "number" && olderThanMs >= 0)) {
    throw new ChainRuntimeError("TRACE_INVALID", `prune({ olderThanMs }) must be a number >= 0; got ${String(olderThanMs)}.`, {
      details: { olderThanMs },
    });
  }
  if (keep !== undefined && !(Number.isInteger(keep) && keep >= 0)) {
    throw new ChainRuntimeError("TRACE_INVALID", `prune({ keep }) must be an integer >= 0; got ${String(keep)}.`, {
      details: { keep },
    });
  }
  const now = options.now ?? Date.now();
  const ordered = orderTraceSummaries([...summaries]);
  const victims: string[] = [];
  ordered.forEach((summary, index) => {
    const tooOld = olderThanMs !== undefined && summary.createdAt < now - olderThanMs;
    const beyondKeep = keep !== undefined && index >= keep;
    if (tooOld || beyondKeep) victims.push(summary.chainId);
  });
  return victims;
}
