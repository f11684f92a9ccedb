/**
 * Folding a chain's event log into a {@link ChainTrace}.
 *
 * Invariants (the replay rules build on them):
 * - The log is the truth. A trace is a pure function of its events; nothing else is consulted.
 * - The first event is the one `chain-start`; a second one, or none, makes the log invalid.
 * - Calls are keyed by `callId` (unique per chain) and ordered by `seq` (host arrival).
 *   A `tool-result` names a `tool-call` already in the log, with the same `seq`, at most once.
 * - A call with a `tool-call` and no `tool-result` is open. A reader cannot know whether the
 *   writer is alive, so by default an open call reads `in-doubt`; an in-process live view may
 *   ask for `started` instead.
 * - `chain-end` appears at most once. Events may follow it (a call the chain abandoned may still
 *   log its result); they are kept.
 *
 *     chain-start ─┬─ tool-call c0 ── tool-result c0 ─┬─ ... ─ chain-end
 *                  └─ tool-call c1 ─────────(none)────┘        → c0 completed, c1 in-doubt
 *
 * @module
 */
import { isClockFrameReadings, isClockReadings } from "../bridge/protocol.ts";
import { ChainRuntimeError, isArtifactRef, isSha256Hex, type ApprovalRequest, type ChainRunStatus } from "../kernel/index.ts";
import { READABLE_TRACE_FORMAT_VERSIONS, type ChainTrace, type TraceCallEntry, type TraceOutcome } from "./chain-trace.ts";
import { isTraceEvent, type TraceChainStartEvent, type TraceEvent, type TraceToolCallEvent } from "./trace-event.ts";

/** Options of {@link foldTraceEvents}. */
export interface FoldTraceEventsOptions {
  /**
   * State given to a call whose `tool-result` is missing. Use `"started"` only for a live view
   * of a chain known to be running in this process.
   * @defaultValue `"in-doubt"`
   */
  readonly openCallState?: "started" | "in-doubt";
}

/**
 * Builds the {@link ChainTrace} a log of events describes. Pure: the events are not modified.
 *
 * @throws ChainRuntimeError `TRACE_INVALID` when the log is empty, does not begin with a
 * `chain-start` of a readable format version (`READABLE_TRACE_FORMAT_VERSIONS`), holds a malformed event, repeats a
 * `chain-start`, `chain-end`, `callId` or result, or has a result for a call it never started.
 */
export function foldTraceEvents(events: readonly TraceEvent[], options: FoldTraceEventsOptions = {}): ChainTrace {
  if (!Array.isArray(events)) throw invalid(`foldTraceEvents() takes an array of trace events; got ${events === null ? "null" : typeof events}.`, {});
  const openCallState = options.openCallState ?? "in-doubt";
  const first = events[0];
  if (first === undefined) throw invalid("The trace log is empty: it has no chain-start event.", { noRecord: true });
  checkEvent(first, 0);
  if (first.type !== "chain-start") {
    throw invalid(`The trace log must begin with chain-start; it begins with ${first.type}.`, { index: 0 });
  }
  const start: TraceChainStartEvent = first;
  if (!READABLE_TRACE_FORMAT_VERSIONS.includes(start.version)) {
    throw invalid(`Trace format version ${String(start.version)} is not supported (this reader knows ${READABLE_TRACE_FORMAT_VERSIONS.join(" and ")}).`, {
      version: start.version,
    });
  }

  const calls = new Map<string, { call: TraceToolCallEvent; entry: TraceCallEntry }>();
  const approvalRequests: ApprovalRequest[] = [];
  const clockReadings: number[] = [];
  let results = 0;
  let outcome: TraceOutcome | undefined;

  for (let index = 1; index < events.length; index += 1) {
    const event = events[index] as TraceEvent;
    checkEvent(event, index);
    switch (event.type) {
      case "chain-start":
        throw invalid(`The trace log of ${start.chainId} has a second chain-start (event ${index}).`, { index });
      case "tool-call": {
        if (calls.has(event.callId)) {
          throw invalid(`Call ${event.callId} is started twice (event ${index}).`, { index, callId: event.callId });
        }
        calls.set(event.callId, {
          call: event,
          entry: {
            callId: event.callId,
            seq: event.seq,
            tool: event.tool,
            args: event.args,
            argsDigest: event.argsDigest,
            ...(event.risk === undefined ? {} : { risk: event.risk }),
            state: openCallState,
            startedAt: event.startedAt,
          },
        });
        break;
      }
      case "tool-result": {
        const open = calls.get(event.callId);
        if (open === undefined) {
          throw invalid(`Call ${event.callId} has a result but was never started (event ${index}).`, {
            index,
            callId: event.callId,
          });
        }
        if (open.entry.state === "completed") {
          throw invalid(`Call ${event.callId} has two results (event ${index}).`, { index, callId: event.callId });
        }
        if (open.call.seq !== event.seq) {
          throw invalid(`Call ${event.callId} started as seq ${open.call.seq} but its result says seq ${event.seq}.`, {
            index,
            callId: event.callId,
          });
        }
        open.entry = {
          ...open.entry,
          state: "completed",
          endedAt: event.endedAt,
          durationMs: event.durationMs,
          status: event.status,
          result: event.result,
          resultSeq: results++,
        };
        break;
      }
      case "approval-request":
        approvalRequests.push(event.request);
        break;
      case "clock":
        appendReadings(clockReadings, event.readings);
        break;
      case "chain-end": {
        if (outcome !== undefined) throw invalid(`The trace log of ${start.chainId} has a second chain-end (event ${index}).`, { index });
        outcome = {
          status: event.status,
          ...(event.returnValue === undefined ? {} : { returnValue: event.returnValue }),
          ...(event.returnArtifactRef === undefined ? {} : { returnArtifactRef: event.returnArtifactRef }),
          ...(event.outputText === undefined ? {} : { outputText: event.outputText }),
          ...(event.error === undefined ? {} : { error: event.error }),
          durationMs: event.durationMs,
          stats: event.stats,
        };
        break;
      }
    }
  }

  if (!isClockReadings(clockReadings)) {
    throw invalid(`The trace log of ${start.chainId} holds more clock readings than a run records.`, { runs: (clockReadings as number[]).length / 2 });
  }
  // Stable sort: equal seqs (which a well-behaved writer never produces) keep log order.
  const entries = [...calls.values()].map((open) => open.entry).sort((a, b) => a.seq - b.seq);
  return {
    version: start.version,
    chainId: start.chainId,
    ...(start.parentChainId === undefined ? {} : { parentChainId: start.parentChainId }),
    createdAt: start.createdAt,
    source: start.source,
    sourceHash: start.sourceHash,
    policy: start.policy,
    toolbox: start.toolbox,
    seed: start.seed,
    clockStart: start.clockStart,
    ...(clockReadings.length === 0 ? {} : { clockReadings }),
    calls: entries,
    approvalRequests,
    ...(outcome === undefined ? {} : { outcome }),
  };
}

/** Appends run-length encoded readings, merging a run that continues the last one. */
function appendReadings(into: number[], readings: readonly number[]): void {
  for (let i = 0; i < readings.length; i += 2) {
    const elapsed = readings[i] as number;
    const count = readings[i + 1] as number;
    const at = into.length;
    if (at > 0 && into[at - 2] === elapsed) into[at - 1] = (into[at - 1] as number) + count;
    else into.push(elapsed, count);
  }
}

function invalid(message: string, details: Record<string, unknown>): ChainRuntimeError {
  return new ChainRuntimeError("TRACE_INVALID", message, { details });
}

const isString = (value: unknown): boolean => typeof value === "string";
const isNumber = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value);
const isObject = (value: unknown): boolean => typeof value === "object" && value !== null;
/** An epoch-milliseconds time a `Date` can hold (within ±8.64e15): what a trace's times are printed and replayed as. */
const isTime = (value: unknown): boolean => isNumber(value) && Math.abs(value as number) <= 8.64e15;

const RESULT_STATUSES: ReadonlySet<unknown> = new Set(["ok", "error", "denied"]);
const RECORD_STATUSES: ReadonlySet<unknown> = new Set(["ok", "error", "denied", "timeout"]);
const CHAIN_RUN_STATUSES: ReadonlySet<unknown> = new Set<ChainRunStatus>(["ok", "error", "timeout", "cancelled", "suspended"]);

/** True for a `ChainRunStatus`. */
export const isChainRunStatus = (value: unknown): value is ChainRunStatus => CHAIN_RUN_STATUSES.has(value);
const isRecord = (value: unknown): boolean => isObject(value) && !Array.isArray(value);
const isByteCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * True for what the invoker could have returned (an `InvocationResult`): a replay hands a
 * recorded result to the script as it is, so a tampered one (`status: "weird"`, a ref with
 * `../` in it, a negative size) must not get that far.
 */
export function isInvocationResult(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const result = value as Record<string, unknown>;
  if (!RESULT_STATUSES.has(result.status) || !isString(result.text)) return false;
  if (result.status === "ok" ? result.code !== undefined : !isString(result.code)) return false;
  if (result.structured !== undefined && !isRecord(result.structured)) return false;
  if (result.artifactRef !== undefined && !isArtifactRef(result.artifactRef)) return false;
  if (result.bytes !== undefined && !isByteCount(result.bytes)) return false;
  if (result.files === undefined) return true;
  return Array.isArray(result.files) && result.files.every(isChainFile);
}

/**
 * True for a `ChainError` as a run reports it: string `phase`, `name` and `message`, and, when
 * present, numeric `line` and `column` and string `codeFrame` and `stack`. A reader prints and
 * compares these (`trace show` marks `line` in the script); anything else must stop at the loader.
 */
export function isChainError(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const error = value as Record<string, unknown>;
  if (!isString(error.phase) || !isString(error.name) || !isString(error.message)) return false;
  for (const field of ["line", "column"] as const) if (error[field] !== undefined && !isNumber(error[field])) return false;
  for (const field of ["codeFrame", "stack"] as const) if (error[field] !== undefined && !isString(error[field])) return false;
  return true;
}

/** True for a `ToolboxFingerprint`: `{ tools: [{ name, risk, schemaDigest }, ...], digest }`, all strings. */
function isToolboxFingerprint(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const toolbox = value as Record<string, unknown>;
  return Array.isArray(toolbox.tools) && toolbox.tools.every(isToolFingerprint) && isString(toolbox.digest);
}

/** True for a `ToolFingerprint`: `{ name, risk, schemaDigest }`, all strings. */
export function isToolFingerprint(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const tool = value as Record<string, unknown>;
  return isString(tool.name) && isString(tool.risk) && isString(tool.schemaDigest);
}

/** True for what a reader prints of an `ApprovalRequest`: string `id`, `tool` and `risk`. */
export function isApprovalRequestShape(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const request = value as Record<string, unknown>;
  return isString(request.id) && isString(request.tool) && isString(request.risk);
}

function isChainFile(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const file = value as Record<string, unknown>;
  return isString(file.path) && isArtifactRef(file.artifactRef) && isString(file.mimeType) && isByteCount(file.bytes);
}

/** The fields each event type must carry, and how to check them. */
const REQUIRED_FIELDS: Readonly<Record<TraceEvent["type"], Readonly<Record<string, (value: unknown) => boolean>>>> = {
  "chain-start": {
    version: isNumber,
    chainId: isString,
    source: isString,
    sourceHash: isString,
    policy: isObject,
    toolbox: isToolboxFingerprint,
    // As run() takes them: a trace is replayed with its seed and clock.
    seed: (value) => Number.isSafeInteger(value),
    clockStart: isTime,
    createdAt: isTime,
  },
  "tool-call": {
    callId: isString,
    seq: (value) => Number.isInteger(value) && (value as number) >= 0,
    tool: isString,
    argsDigest: isSha256Hex,
    startedAt: isTime,
  },
  "tool-result": {
    callId: isString,
    seq: (value) => Number.isInteger(value) && (value as number) >= 0,
    result: isInvocationResult,
    status: (value) => RECORD_STATUSES.has(value),
    endedAt: isTime,
    durationMs: isNumber,
  },
  "approval-request": { request: isApprovalRequestShape },
  clock: { readings: isClockFrameReadings },
  "chain-end": { status: isChainRunStatus, durationMs: isNumber, stats: isObject },
};

/**
 * The fields an event type may leave out, and how to check them when present: readers print
 * them (`trace show`) and compare them (a replay), so one of another type (a number for the
 * console output, `null` for the error) is refused here, naming it, not met as a `TypeError` there.
 */
const OPTIONAL_FIELDS: Readonly<Partial<Record<TraceEvent["type"], Readonly<Record<string, (value: unknown) => boolean>>>>> = {
  "chain-start": { parentChainId: isString },
  "tool-call": { risk: isString },
  "chain-end": { returnArtifactRef: isString, outputText: isString, error: isChainError },
};

function checkEvent(event: unknown, index: number): asserts event is TraceEvent {
  if (!isTraceEvent(event)) {
    throw invalid(`Trace event ${index} is not a known event.`, {
      index,
      type: isObject(event) ? (event as { type?: unknown }).type : typeof event,
    });
  }
  const fields = event as unknown as Record<string, unknown>;
  for (const [field, check] of Object.entries(REQUIRED_FIELDS[event.type])) {
    if (!check(fields[field])) throw malformedField(event.type, index, field, "a missing or malformed");
  }
  for (const [field, check] of Object.entries(OPTIONAL_FIELDS[event.type] ?? {})) {
    if (fields[field] !== undefined && !check(fields[field])) throw malformedField(event.type, index, field, "a malformed");
  }
}

function malformedField(type: TraceEvent["type"], index: number, field: string, what: string): ChainRuntimeError {
  return invalid(`Trace event ${index} (${type}) has ${what} "${field}".`, { index, type, field });
}
