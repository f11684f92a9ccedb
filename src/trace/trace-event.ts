import {
  ChainRuntimeError,
  type ApprovalRequest,
  type CallRecordStatus,
  type ChainError,
  type ChainPolicy,
  type ChainRunStats,
  type ChainRunStatus,
  type InvocationResult,
  type ToolRisk,
} from "../kernel/index.ts";
import type { ToolboxFingerprint } from "./chain-trace.ts";

/**
 * First record of every chain's log: what ran, under which rules, from which seed and clock.
 * Exactly one per chain.
 */
export interface TraceChainStartEvent {
  readonly type: "chain-start";
  /** The trace format version (`TRACE_FORMAT_VERSION`); readers refuse others. */
  readonly version: number;
  readonly chainId: string;
  readonly parentChainId?: string;
  readonly source: string;
  /** sha256 (hex) of `source`. */
  readonly sourceHash: string;
  readonly policy: ChainPolicy;
  readonly toolbox: ToolboxFingerprint;
  readonly seed: number;
  /** Epoch milliseconds. */
  readonly clockStart: number;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/** A call passed the budget gate and is about to run. Logged durably before the tool executes. */
export interface TraceToolCallEvent {
  readonly type: "tool-call";
  /** Program-order id from the isolate (`c0`, ...). Unique within the chain. */
  readonly callId: string;
  /** Host arrival order, 0-based. */
  readonly seq: number;
  readonly tool: string;
  /** `undefined` when the call ended before its arguments were seen (a budget refusal). */
  readonly args: unknown;
  readonly argsDigest: string;
  /** Absent for a tool the toolbox does not have. */
  readonly risk?: ToolRisk;
  /** Epoch milliseconds. */
  readonly startedAt: number;
}

/** A call ended, whatever its outcome. Logged durably before the result reaches the script. */
export interface TraceToolResultEvent {
  readonly type: "tool-result";
  readonly callId: string;
  readonly seq: number;
  /** What the script received; artifact refs kept as refs. */
  readonly result: InvocationResult;
  /** The call record's status: the result's, or `timeout`. */
  readonly status: CallRecordStatus;
  /** Epoch milliseconds. */
  readonly endedAt: number;
  readonly durationMs: number;
}

/** The chain asked a human to approve a call. */
export interface TraceApprovalRequestEvent {
  readonly type: "approval-request";
  readonly request: ApprovalRequest;
}

/**
 * The script read its clock: the readings since the last such event, run-length encoded
 * (`[elapsed ms, count, ...]`, elapsed since `clockStart`). Logged before the calls that follow
 * them; a replay reads them back in order (see `prelude/virtual-clock.ts`).
 */
export interface TraceClockEvent {
  readonly type: "clock";
  readonly readings: readonly number[];
}

/** Last record of a chain's log: how it ended. At most one per chain. */
export interface TraceChainEndEvent {
  readonly type: "chain-end";
  readonly status: ChainRunStatus;
  readonly returnValue?: unknown;
  readonly returnArtifactRef?: string;
  readonly outputText?: string;
  readonly error?: ChainError;
  readonly durationMs: number;
  readonly stats: ChainRunStats;
}

/**
 * One record of a chain's append-only log. Noun-verb `type`s. A {@link ChainTrace} is the fold
 * of its events (`foldTraceEvents`); the log, not any in-memory cursor, is the source of truth.
 */
export type TraceEvent =
  | TraceChainStartEvent
  | TraceToolCallEvent
  | TraceToolResultEvent
  | TraceApprovalRequestEvent
  | TraceClockEvent
  | TraceChainEndEvent;

/** The `type` of a {@link TraceEvent}. */
export type TraceEventType = TraceEvent["type"];

/** Every event type, in the order they usually appear. */
export const TRACE_EVENT_TYPES: readonly TraceEventType[] = Object.freeze([
  "chain-start",
  "tool-call",
  "tool-result",
  "approval-request",
  "clock",
  "chain-end",
]);

/** True when `value` is an object whose `type` is a known {@link TraceEventType}. Checks nothing else. */
export function isTraceEvent(value: unknown): value is TraceEvent {
  return (
    typeof value === "object" &&
    value !== null &&
    TRACE_EVENT_TYPES.includes((value as { type?: unknown }).type as TraceEventType)
  );
}

/**
 * Checks that `event` is an object with a known `type`.
 * @throws ChainRuntimeError `TRACE_INVALID` otherwise.
 */
export function assertTraceEvent(event: unknown): asserts event is TraceEvent {
  if (!isTraceEvent(event)) {
    throw new ChainRuntimeError("TRACE_INVALID", "A trace event needs a known type (chain-start, tool-call, ...).", {
      details: { type: typeof event === "object" && event !== null ? (event as { type?: unknown }).type : typeof event },
    });
  }
}

/**
 * True for the events a durable store must have on stable storage before `append` resolves:
 * `tool-call` (so a crash mid-call leaves the call in doubt, never forgotten), `tool-result`
 * (so a finished side effect is never repeated) and `chain-end`.
 */
export function isDurableTraceEvent(event: TraceEvent): boolean {
  return event.type === "tool-call" || event.type === "tool-result" || event.type === "chain-end";
}
