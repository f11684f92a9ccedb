/**
 * The shape check every function that takes a {@link ChainTrace} from its caller runs first. A
 * trace may come from a file, an exported JSON or a hand-made object; what is not one must be a
 * `TRACE_INVALID` naming the field, never a `TypeError` from deep inside a replay. Nor is a trace
 * object of a format version this reader does not fold one: it is refused as loading the same
 * trace from a file is (see `foldTraceEvents`), with the same words.
 * @module
 */
import { ChainRuntimeError, describeThrown, isSha256Hex, knownPolicyFields, recordedChainPolicy, resolveChainPolicy } from "../kernel/index.ts";
import { READABLE_TRACE_FORMAT_VERSIONS, type ChainTrace, type TraceCallState } from "./chain-trace.ts";
import { isClockReadings } from "../bridge/protocol.ts";
import { isApprovalRequestShape, isChainError, isChainRunStatus, isInvocationResult, isToolFingerprint } from "./fold-trace-events.ts";
import { isTraceChainId } from "./trace-store.ts";

const CALL_STATES: ReadonlySet<unknown> = new Set<TraceCallState>(["started", "completed", "in-doubt"]);

/**
 * Throws `TRACE_INVALID` unless `trace` has the shape of a {@link ChainTrace} (the fields a
 * replay, a resume or an export reads; not every value inside `args` and results) and a `version`
 * in `READABLE_TRACE_FORMAT_VERSIONS`. An unknown version is named before any other field: a
 * newer format may well have another shape, and the version is then the reason.
 * @param where - who asks, for the message (e.g. `"replay()"`).
 */
export function checkChainTrace(trace: unknown, where: string): asserts trace is ChainTrace {
  checkTraceVersion(trace, where);
  const problem = chainTraceProblem(trace);
  if (problem !== undefined) {
    throw new ChainRuntimeError("TRACE_INVALID", `${where}: not a chain trace: ${problem}. Load one with a TraceStore or loadTraceFile.`, {
      details: { problem },
    });
  }
}

/**
 * Throws `TRACE_INVALID` (`details.version`) when `trace.version` is a number this reader does not
 * fold. A `version` that is not a number at all is a shape problem, left to {@link chainTraceProblem}.
 */
function checkTraceVersion(trace: unknown, where: string): void {
  if (!isObject(trace) || typeof trace.version !== "number" || READABLE_TRACE_FORMAT_VERSIONS.includes(trace.version)) return;
  throw new ChainRuntimeError(
    "TRACE_INVALID",
    `${where}: Trace format version ${String(trace.version)} is not supported (this reader knows ${READABLE_TRACE_FORMAT_VERSIONS.join(" and ")}). ` +
      "Read it with the isochain version that wrote it.",
    { details: { version: trace.version } },
  );
}

/**
 * What makes `trace` not a {@link ChainTrace} (the field, and what it should be), or `undefined`
 * when it has the shape. For a caller that words its own refusal, e.g. `loadTraceFile` naming
 * the file; the version is not checked here (see {@link checkChainTrace}).
 */
export function chainTraceProblem(trace: unknown): string | undefined {
  if (!isObject(trace)) return `got ${describe(trace)}`;
  for (const key of ["chainId", "source", "sourceHash"] as const) if (typeof trace[key] !== "string") return `${key} is ${describe(trace[key])}, not a string`;
  // A store names files by it, and it is printed: no chain could have had another.
  if (!isTraceChainId(trace.chainId)) return `chainId ${jsonOneLine(String(trace.chainId).slice(0, 140))} is not 1 to 128 letters, digits, "_" or "-"`;
  for (const key of ["version", "createdAt", "seed", "clockStart"] as const) if (typeof trace[key] !== "number") return `${key} is ${describe(trace[key])}, not a number`;
  if (!Number.isSafeInteger(trace.seed)) return `seed is ${String(trace.seed)}, not an integer`;
  for (const key of ["createdAt", "clockStart"] as const) {
    const time = trace[key] as number;
    if (!(Math.abs(time) <= 8.64e15)) return `${key} is ${String(time)}, not a time a Date can hold (epoch milliseconds within ±8.64e15)`;
  }
  if (!isObject(trace.policy)) return `policy is ${describe(trace.policy)}, not an object`;
  try {
    resolveChainPolicy(recordedChainPolicy(knownPolicyFields(trace.policy)));
  } catch (error) {
    // The reason is a sentence of its own; the problem is a clause the caller ends.
    return `its policy is not one a chain could have run under: ${describeThrown(error).replace(/\.+$/, "")}`;
  }
  const toolbox = trace.toolbox;
  if (!isObject(toolbox) || !Array.isArray(toolbox.tools) || typeof toolbox.digest !== "string") return "toolbox is not { tools: [], digest }";
  for (const [index, tool] of toolbox.tools.entries()) if (!isToolFingerprint(tool)) return `toolbox.tools[${index}] is not { name, risk, schemaDigest } (strings)`;
  if (!Array.isArray(trace.calls)) return `calls is ${describe(trace.calls)}, not an array`;
  for (const [index, call] of trace.calls.entries()) {
    if (!isObject(call) || typeof call.callId !== "string" || typeof call.tool !== "string" || typeof call.seq !== "number" || typeof call.state !== "string") {
      return `calls[${index}] is not { callId, seq, tool, state, ... }`;
    }
    if (!CALL_STATES.has(call.state)) return `calls[${index}].state is ${JSON.stringify(call.state)}, not "started", "completed" or "in-doubt"`;
    if (!isSha256Hex(call.argsDigest)) {
      return `calls[${index}].argsDigest is ${describe(call.argsDigest)}, not a sha256 digest (64 lowercase hex digits)`;
    }
    if (call.resultSeq !== undefined && !(Number.isSafeInteger(call.resultSeq) && (call.resultSeq as number) >= 0)) return `calls[${index}].resultSeq is not an integer >= 0`;
    // A replay hands a recorded result to the script as it is: it must be one the invoker could
    // have returned (as a trace file's results are checked when it is folded).
    if ((call.state === "completed" || call.result !== undefined) && !isInvocationResult(call.result)) {
      return `calls[${index}].result is not a result the invoker could have returned ({ status: "ok" | "error" | "denied", text, ... })`;
    }
  }
  if (!Array.isArray(trace.approvalRequests)) return `approvalRequests is ${describe(trace.approvalRequests)}, not an array`;
  for (const [index, request] of trace.approvalRequests.entries()) {
    if (!isApprovalRequestShape(request)) return `approvalRequests[${index}] is not { id, tool, risk, args, ... } (id, tool and risk strings)`;
  }
  const outcome = outcomeProblem(trace.outcome);
  if (outcome !== undefined) return outcome;
  if (trace.parentChainId !== undefined && typeof trace.parentChainId !== "string") return `parentChainId is ${describe(trace.parentChainId)}, not a string`;
  if (trace.clockReadings !== undefined && !isClockReadings(trace.clockReadings)) {
    return "clockReadings is not [elapsed ms, count, ...] (whole numbers, counts of at least 1, at most 10 000 pairs)";
  }
  return undefined;
}

/** What makes `outcome` not a `TraceOutcome` (absent is fine: the chain has not ended), or `undefined`. */
function outcomeProblem(outcome: unknown): string | undefined {
  if (outcome === undefined) return undefined;
  if (!isObject(outcome) || !isChainRunStatus(outcome.status)) return 'outcome is not { status: "ok" | "error" | "timeout" | "cancelled" | "suspended", ... }';
  if (typeof outcome.durationMs !== "number" || !Number.isFinite(outcome.durationMs)) return `outcome.durationMs is ${describe(outcome.durationMs)}, not a finite number`;
  for (const key of ["outputText", "returnArtifactRef"] as const) {
    if (outcome[key] !== undefined && typeof outcome[key] !== "string") return `outcome.${key} is ${describe(outcome[key])}, not a string`;
  }
  if (outcome.error !== undefined && !isChainError(outcome.error)) {
    return "outcome.error is not { phase, name, message, line?, column? } (phase, name and message strings; line and column numbers)";
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : typeof value === "string" ? "a string" : String(typeof value === "number" ? "a number" : typeof value);
}

/**
 * `value` as a JSON (and JavaScript) string literal with every line terminator escaped (JSON
 * leaves U+2028 and U+2029 raw): a quoted value from a trace, which is input, stays on one line,
 * in a message or in the comment of a generated file.
 */
export function jsonOneLine(value: unknown): string {
  return JSON.stringify(String(value)).replace(/[\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16)}`);
}
