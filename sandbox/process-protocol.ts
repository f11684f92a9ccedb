/**
 * The messages between the host and a sandbox child process (see `process-driver.ts`): the
 * control messages start a child, start and cancel a chain, and report its outcome; the
 * per-call traffic travels in batches, {@link ToolCallsMessage} (every call of one entry into
 * the isolate) and {@link ToolResultsMessage} (every result the host has in one tick), each a
 * flat array of positional fields rather than one object per call: with 50 parallel calls that
 * is one msgpack message each way instead of 50, and no key strings to write and read per call
 * (measured: packing 50 results 78 -> 31 µs, unpacking 50 calls 63 -> 12 µs). Console lines are
 * the bridge's own `console-log` frame. All travel in the codec's envelope
 * (`src/bridge/codec.ts`: length prefix, msgpack, `PROTOCOL_VERSION`).
 *
 * ```
 *  host                                             child
 *  child-init {memoryLimitMb, preludeSource, …} ──▶ warm an isolate
 *            ◀── child-ready
 *  chain-run {request fields}                   ──▶ IsolateRunner.run
 *            ◀── tool-calls | console-log         (any number, as they happen)
 *  tool-results                                 ──▶
 *  chain-cancel                                 ──▶ (request.signal aborted)
 *            ◀── chain-return-part {text}         (only a return value too large for one frame, in pieces)
 *            ◀── chain-outcome {outcome}
 *            ◀── child-ready                      (the next context is prepared)
 * ```
 *
 * No message names a run: a child runs one chain at a time and the pipe keeps order, so a
 * result the host sent before it read `chain-outcome` reaches the child before the next
 * `chain-run` and is dropped there, never delivered to the wrong chain.
 * @module
 */
import { isFrame, MAX_FRAME_BYTES } from "../src/bridge/codec.ts";
import { FRAME_KIND, isClockReadings, type ClockFrame, type LogFrame } from "../src/bridge/protocol.ts";
import { MAX_UNHANDLED_REJECTIONS, type SandboxError, type SandboxLimits, type SandboxRunOutcome, type SandboxRunRequest } from "./sandbox-driver.ts";
import { isSpinWaitUs } from "./spin-wait.ts";

/** The `kind` of every control message. */
export const PROCESS_MESSAGE_KIND = Object.freeze({
  /** host → child, first message: how to build isolates. */
  init: "child-init",
  /** child → host: the child has a warm isolate with its next context prepared (sent at start and after each chain). */
  ready: "child-ready",
  /** host → child: run one chain. */
  run: "chain-run",
  /** host → child: the chain's signal aborted. */
  cancel: "chain-cancel",
  /** child → host: the chain ended. */
  outcome: "chain-outcome",
  /** child → host: one piece of a return value too large for one frame, sent just before its `chain-outcome`. */
  returnPart: "chain-return-part",
  /** child → host: the calls of one entry into the isolate. */
  calls: "tool-calls",
  /** host → child: results, as many as the host had in one tick. */
  results: "tool-results",
} as const);

/** host → child: the first message a child receives. */
export interface ChildInitMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.init;
  /** Heap limit of the isolate the child keeps warm, MiB. */
  readonly memoryLimitMb: number;
  /** Runs an isolate serves before the child replaces it. */
  readonly maxRunsPerIsolate: number;
  /** The prelude, built once by the host, so children never run esbuild. */
  readonly preludeSource: string;
}

/** child → host: ready for chains. */
export interface ChildReadyMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.ready;
}

/** host → child: the serialisable fields of a `SandboxRunRequest`. */
export interface ChainRunMessage extends Pick<SandboxRunRequest, "chainId" | "script" | "scriptName" | "toolNames" | "maxToolCalls" | "limits" | "seed" | "clockStart" | "clockReplay" | "clockLiveAt" | "budgetSpentMs"> {
  readonly kind: typeof PROCESS_MESSAGE_KIND.run;
  /** Budget of the child's spin after each batch of calls, µs (see spin-wait.ts); 0 or absent: none. */
  readonly spinWaitUs?: number;
}

/** host → child: stop the chain in progress (it ends `cancelled`). */
export interface ChainCancelMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.cancel;
}

/**
 * child → host: how the chain ended, as the child's runner reported it. A return value too large
 * for one frame comes first as {@link ChainReturnPartMessage}s, in order, and the outcome then
 * holds no `returnJson` but `returnParts`, their number.
 */
export interface ChainOutcomeMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.outcome;
  readonly outcome: SandboxRunOutcome;
  /** How many `chain-return-part` messages before this one make up `outcome.returnJson`. */
  readonly returnParts?: number;
}

/** child → host: a piece of the run's return value (JSON text), cut between UTF-16 code points. */
export interface ChainReturnPartMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.returnPart;
  readonly text: string;
}

/**
 * Length of each piece of a return value sent in parts, UTF-16 units: at most 3 bytes of UTF-8
 * each, so a piece stays under {@link MAX_FRAME_BYTES} whatever its characters.
 */
export const RETURN_PART_CHARS = Math.floor((MAX_FRAME_BYTES - 64 * 1024) / 3);

/**
 * `text` cut into pieces of at most {@link RETURN_PART_CHARS} units, never between the two
 * halves of a surrogate pair (each piece must be well-formed to cross as UTF-8).
 */
export function splitReturnJson(text: string, partChars = RETURN_PART_CHARS): string[] {
  const parts: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + partChars, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff && end - 1 > start) end--;
    parts.push(text.slice(start, end));
    start = end;
  }
  return parts;
}

/**
 * child → host: tool calls, {@link CALL_FIELDS} slots per call in `calls`:
 * `callIndex, tool, argsJson, refusal` (`refusal` `null` unless the prelude refused the call; see
 * the bridge's `CallFrame` for each field's meaning).
 */
export interface ToolCallsMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.calls;
  readonly calls: readonly (number | string | null)[];
}

/** Slots per call in {@link ToolCallsMessage.calls}. */
export const CALL_FIELDS = 4;

/**
 * host → child: call results, {@link RESULT_FIELDS} slots per result in `results`:
 * `callIndex, resultJson, textUtf8`. `resultJson` is the `InvocationResult` as JSON, or `null` for
 * a call the host never answers (see `neverAnswered`: the child stops waiting for it); `textUtf8`
 * is `null`, or, when the result's large text is sent apart from its JSON (see
 * `src/bridge/wire-result.ts`, where `resultJson` then holds `"text":""`), that text as UTF-8
 * bytes: msgpack carries bytes as they are, and the child turns them into a string with Node's
 * UTF-8 decoder (~0.2 ms per MiB here) instead of msgpackr's string extraction (~1.1 ms per
 * MiB). The host sends only well-formed text this way, so the bytes decode to the same string.
 */
export interface ToolResultsMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.results;
  readonly results: readonly (number | string | Uint8Array | null)[];
  /** The child's spin budget from now on, µs (see {@link ChainRunMessage.spinWaitUs}); absent: unchanged. */
  readonly spinWaitUs?: number;
}

/** Slots per result in {@link ToolResultsMessage.results}. */
export const RESULT_FIELDS = 3;

/** Room kept in a batch's frame for its envelope and field headers, bytes. */
const BATCH_ENVELOPE_BYTES = 64 * 1024;
/** Strings up to this length count 3 bytes per UTF-16 unit; longer ones their exact UTF-8 length. */
const BOUND_BY_LENGTH_MAX = 1024 * 1024;

/** One batch of a split: `fields` slots per entry; `oversized` for a single entry too large to send. */
export interface BatchPart<T> {
  readonly entries: T[];
  readonly oversized: boolean;
}

/**
 * Splits a flat batch (`fields` slots per entry) into batches that cannot pass the codec's frame
 * limit once encoded, so no send fails after its batch was packed (a failed pack costs a copy
 * of everything and leaves msgpackr's buffer that large). Sizes are bounded from above: a string
 * counts 3 bytes per UTF-16 unit (its exact UTF-8 length past 1 Mi units), bytes their length. An
 * entry too large on its own comes back alone with `oversized` set, for the sender to replace with
 * an error. One part, the batch itself, in the usual case.
 */
export function splitBatch<T>(flat: readonly T[], fields: number): BatchPart<T>[] {
  const budget = MAX_FRAME_BYTES - BATCH_ENVELOPE_BYTES;
  const parts: BatchPart<T>[] = [];
  let start = 0;
  let size = 0;
  for (let i = 0; i < flat.length; i += fields) {
    let entry = 0;
    for (let j = i; j < i + fields; j++) entry += encodedSizeBound(flat[j]);
    if (entry > budget) {
      if (i > start) parts.push({ entries: flat.slice(start, i), oversized: false });
      parts.push({ entries: flat.slice(i, i + fields), oversized: true });
      start = i + fields;
      size = 0;
    } else if (size + entry > budget) {
      parts.push({ entries: flat.slice(start, i), oversized: false });
      start = i;
      size = entry;
    } else {
      size += entry;
    }
  }
  if (start === 0 && parts.length === 0) return [{ entries: flat as T[], oversized: false }];
  if (start < flat.length) parts.push({ entries: flat.slice(start), oversized: false });
  return parts;
}

/** An upper bound of the msgpack size of one field. */
function encodedSizeBound(value: unknown): number {
  if (typeof value === "string") return 5 + (value.length <= BOUND_BY_LENGTH_MAX ? value.length * 3 : Buffer.byteLength(value, "utf8"));
  if (value instanceof Uint8Array) return 5 + value.byteLength;
  return 9;
}

/** Everything the host sends. */
export type HostMessage = ChildInitMessage | ChainRunMessage | ChainCancelMessage | ToolResultsMessage;

/** Everything a child sends. */
export type ChildMessage = ChildReadyMessage | ChainOutcomeMessage | ChainReturnPartMessage | ToolCallsMessage | LogFrame | ClockFrame;

const OUTCOME_STATUSES: ReadonlySet<unknown> = new Set(["ok", "error", "timeout", "cancelled"]);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const isCount = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value) && value >= 0;
const isIndex = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;

/** True for a well-formed message from the host. */
export function isHostMessage(value: unknown): value is HostMessage {
  if (!isRecord(value)) return false;
  switch (value["kind"]) {
    case PROCESS_MESSAGE_KIND.results:
      return isResults(value["results"]) && (value["spinWaitUs"] === undefined || isSpinWaitUs(value["spinWaitUs"]));
    case PROCESS_MESSAGE_KIND.cancel:
      return true;
    case PROCESS_MESSAGE_KIND.run:
      return (
        typeof value["chainId"] === "string" &&
        typeof value["script"] === "string" &&
        typeof value["scriptName"] === "string" &&
        Array.isArray(value["toolNames"]) &&
        value["toolNames"].every((name) => typeof name === "string") &&
        isCount(value["maxToolCalls"]) &&
        isLimits(value["limits"]) &&
        typeof value["seed"] === "number" &&
        typeof value["clockStart"] === "number" &&
        (value["clockReplay"] === undefined || isClockReadings(value["clockReplay"])) &&
        (value["clockLiveAt"] === undefined || Number.isSafeInteger(value["clockLiveAt"])) &&
        (value["budgetSpentMs"] === undefined || (typeof value["budgetSpentMs"] === "number" && value["budgetSpentMs"] >= 0 && value["budgetSpentMs"] < Number.MAX_SAFE_INTEGER)) &&
        (value["spinWaitUs"] === undefined || isSpinWaitUs(value["spinWaitUs"]))
      );
    case PROCESS_MESSAGE_KIND.init:
      return isCount(value["memoryLimitMb"]) && isCount(value["maxRunsPerIsolate"]) && typeof value["preludeSource"] === "string";
    default:
      return false;
  }
}

/** True for a well-formed message from a child. */
export function isChildMessage(value: unknown): value is ChildMessage {
  if (!isRecord(value)) return false;
  switch (value["kind"]) {
    case PROCESS_MESSAGE_KIND.calls:
      return isCalls(value["calls"]);
    case FRAME_KIND.log:
    case FRAME_KIND.clock:
      return isFrame(value);
    case PROCESS_MESSAGE_KIND.ready:
      return true;
    case PROCESS_MESSAGE_KIND.outcome:
      return isOutcome(value["outcome"]) && (value["returnParts"] === undefined || (Number.isSafeInteger(value["returnParts"]) && (value["returnParts"] as number) > 0));
    case PROCESS_MESSAGE_KIND.returnPart:
      return typeof value["text"] === "string";
    default:
      return false;
  }
}

function isCalls(value: unknown): boolean {
  if (!Array.isArray(value) || value.length === 0 || value.length % CALL_FIELDS !== 0) return false;
  for (let i = 0; i < value.length; i += CALL_FIELDS) {
    const refusal: unknown = value[i + 3];
    if (!isIndex(value[i]) || typeof value[i + 1] !== "string" || typeof value[i + 2] !== "string") return false;
    if (refusal !== null && typeof refusal !== "string") return false;
  }
  return true;
}

function isResults(value: unknown): boolean {
  if (!Array.isArray(value) || value.length === 0 || value.length % RESULT_FIELDS !== 0) return false;
  for (let i = 0; i < value.length; i += RESULT_FIELDS) {
    const text: unknown = value[i + 2];
    if (!isIndex(value[i]) || (typeof value[i + 1] !== "string" && value[i + 1] !== null)) return false;
    if (text !== null && !(text instanceof Uint8Array)) return false;
  }
  return true;
}

function isLimits(value: unknown): value is SandboxLimits {
  return (
    isRecord(value) &&
    isCount(value["memoryLimitMb"]) &&
    isCount(value["cpuTimeMs"]) &&
    isCount(value["totalTimeoutMs"]) &&
    isCount(value["maxOutputBytes"]) &&
    isCount(value["maxArgumentBytes"])
  );
}

function isOutcome(value: unknown): value is SandboxRunOutcome {
  if (!isRecord(value) || !OUTCOME_STATUSES.has(value["status"])) return false;
  if (!isCount(value["wallMs"]) || !isCount(value["cpuMs"]) || !isCount(value["heapBytes"])) return false;
  if (value["returnJson"] !== undefined && typeof value["returnJson"] !== "string") return false;
  const unanswered = value["unansweredCalls"];
  if (unanswered !== undefined && !(Array.isArray(unanswered) && unanswered.every(isIndex))) return false;
  const rejections = value["unhandledRejections"];
  if (rejections !== undefined && !(Array.isArray(rejections) && rejections.length <= MAX_UNHANDLED_REJECTIONS && rejections.every(isSandboxError))) {
    return false;
  }
  const error = value["error"];
  return error === undefined || isSandboxError(error);
}

function isSandboxError(error: unknown): error is SandboxError {
  return (
    isRecord(error) &&
    (error["phase"] === "runtime" || error["phase"] === "limit") &&
    typeof error["name"] === "string" &&
    typeof error["message"] === "string" &&
    (error["stack"] === undefined || typeof error["stack"] === "string")
  );
}
