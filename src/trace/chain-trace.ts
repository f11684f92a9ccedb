/**
 * The shape of a chain's trace: what ran, under which rules, and every call with its state.
 *
 * Replay rules this data is built for (replay itself lives with the chain runtime):
 * - A trace is the fold of an append-only log keyed by `(chainId, seq)`; every call entry has
 *   an explicit {@link TraceCallState}. No cursor lives outside the log.
 * - A replayed script gets the same `seed` and `clockStart`, so it issues the same calls with the
 *   same program-order `callId`s. Calls are matched by `callId` (not `seq`: parallel calls may
 *   reach the host in another order), and checked by `tool` and `argsDigest`; the first
 *   mismatch is the divergence (strict mode).
 * - Resume mode answers `completed` calls from `result`, never re-runs an `in-doubt` call (it
 *   answers `IN_DOUBT`: the side effect may have happened), and runs calls the trace lacks live.
 *   The resumed run is a new chain whose `parentChainId` names this one.
 * - The `toolbox` digest and `sourceHash` tell whether a replay runs the same script against
 *   the same tools before any call is made.
 *
 * @module
 */
import type {
  ApprovalRequest,
  CallRecordStatus,
  ChainError,
  ChainPolicy,
  ChainRunStats,
  ChainRunStatus,
  InvocationResult,
  ToolRisk,
} from "../kernel/index.ts";

/**
 * Version of the trace format: the shape of {@link ChainTrace} and of the events it is folded
 * from. Written into every `chain-start` event; a reader refuses a version it does not know
 * with `TRACE_INVALID` (naming it), instead of misreading events it has never seen.
 *
 * - 1: the first format.
 * - 2: adds the `clock` event (the script's clock readings) and `resultSeq` on completed calls.
 *   Version-1 logs are still read (they have neither: a replay then reads the clock live).
 *
 * The frame codec's escaped frames (an event holding a lone surrogate: see `trace-frame-codec.ts`)
 * are no version of their own: they decode to the same events, and a reader that does not know
 * them refuses them rather than misreading them.
 */
export const TRACE_FORMAT_VERSION = 2;

/** The format versions this reader folds (see {@link TRACE_FORMAT_VERSION}). */
export const READABLE_TRACE_FORMAT_VERSIONS: readonly number[] = Object.freeze([1, 2]);

/** One tool as the trace remembers it: enough to tell whether a replay runs against the same toolbox. */
export interface ToolFingerprint {
  readonly name: string;
  readonly risk: ToolRisk;
  /** sha256 (hex) of the canonical JSON of the tool's description and schemas. */
  readonly schemaDigest: string;
}

/** The toolbox a chain ran against. Two toolboxes with equal `digest` present the same tools. */
export interface ToolboxFingerprint {
  /** Sorted by name. */
  readonly tools: readonly ToolFingerprint[];
  /** sha256 (hex) of the canonical JSON of `tools`. */
  readonly digest: string;
}

/**
 * Where a call stands in the log.
 *
 * - `started`: a `tool-call` was logged and its `tool-result` not yet; only seen in a live view
 *   (see `foldTraceEvents`' `openCallState`).
 * - `completed`: both were logged; `result` holds what the script received.
 * - `in-doubt`: a `tool-call` was logged and no `tool-result` ever followed (the process died, or
 *   the chain ended first). The tool may or may not have run: a resume must not run it again.
 */
export type TraceCallState = "started" | "completed" | "in-doubt";

/** One call of a chain, as the log records it. Keyed by `(chainId, seq)`; `callId` is the replay key. */
export interface TraceCallEntry {
  /**
   * Program-order id assigned inside the isolate (`c0`, `c1`, ...). Deterministic for a given
   * script, seed and answers, so a replay matches calls by it even when parallel calls reached
   * the host in another order.
   */
  readonly callId: string;
  /** 0-based order in which the host received the call. */
  readonly seq: number;
  /** The tool's name as the script called it. */
  readonly tool: string;
  /** The arguments as the host received them; `undefined` when the call was refused before they were seen. */
  readonly args: unknown;
  /** sha256 (hex) of the canonical JSON of `args`. */
  readonly argsDigest: string;
  /** The tool's risk; absent when the tool is not in the toolbox fingerprint (an unknown tool). */
  readonly risk?: ToolRisk;
  /** Whether the call's result was logged (see {@link TraceCallState}). */
  readonly state: TraceCallState;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  /** Epoch milliseconds; set when `completed`. */
  readonly endedAt?: number;
  /** Set when `completed`. */
  readonly durationMs?: number;
  /** The call record's status (`timeout` included); set when `completed`. */
  readonly status?: CallRecordStatus;
  /** What the script received, artifact refs kept as refs (never inlined); set when `completed`. */
  readonly result?: InvocationResult;
  /**
   * 0-based order in which the call's result was logged, among all results of the chain: the
   * order the script received them. Set when `completed`; a replay answers in this order.
   */
  readonly resultSeq?: number;
}

/** How the chain ended, when it did. Field for field a subset of `ChainRunResult`. */
export interface TraceOutcome {
  /** How the chain ended (`ChainRunResult.status`). */
  readonly status: ChainRunStatus;
  /** The script's return value, when it returned one that stayed inline. */
  readonly returnValue?: unknown;
  /** Set when the return value was offloaded to the blob store. */
  readonly returnArtifactRef?: string;
  /** Console output, as bounded by the policy. */
  readonly outputText?: string;
  /** Why the chain did not end `ok` (`ChainRunResult.error`). */
  readonly error?: ChainError;
  /** The whole run, ms (`ChainRunResult.durationMs`). */
  readonly durationMs: number;
  /** What the run used (`ChainRunResult.stats`). */
  readonly stats: ChainRunStats;
}

/**
 * Everything needed to inspect or replay one chain: the script, the policy and toolbox it ran
 * under, the seed and clock its determinism came from, every call with arguments and full
 * result, and the outcome. Built from the event log by `foldTraceEvents`; never mutated.
 */
export interface ChainTrace {
  /** {@link TRACE_FORMAT_VERSION} of the log it was read from. */
  readonly version: number;
  /** The chain's id (`ChainRunResult.chainId`), which names its trace in a store. */
  readonly chainId: string;
  /** The chain this one resumes or replays, when it does. */
  readonly parentChainId?: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** The script as the model wrote it. */
  readonly source: string;
  /** sha256 (hex) of `source`. */
  readonly sourceHash: string;
  /** The policy the chain ran under, every field resolved. */
  readonly policy: ChainPolicy;
  /** The tools the script could call, as a digest and per-tool fingerprints. */
  readonly toolbox: ToolboxFingerprint;
  /** Seed of the script's `Math.random`. */
  readonly seed: number;
  /** Start of the script's virtual clock, epoch milliseconds. */
  readonly clockStart: number;
  /**
   * Every reading the script made of its clock, in order, run-length encoded: `[elapsed ms since
   * clockStart, count, ...]`; absent when it made none. A replay reads them back.
   */
  readonly clockReadings?: readonly number[];
  /** Every call the host received, ordered by `seq`. */
  readonly calls: readonly TraceCallEntry[];
  /** Every approval the chain asked a human for, in the order asked. */
  readonly approvalRequests: readonly ApprovalRequest[];
  /** Absent while the chain runs, or when its process died before the end was logged. */
  readonly outcome?: TraceOutcome;
}
