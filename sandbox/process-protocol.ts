/**
 * The messages between the host and a sandbox child process (see `process-driver.ts`). The
 * per-call traffic is the bridge's own frames (`tool-call`, `tool-result`, `console-log` from
 * `src/bridge/protocol.ts`), passed through unchanged except that a `tool-result` may carry its
 * large text apart as UTF-8 bytes ({@link ResultMessage}); the control messages below start a
 * child, start and cancel a chain, and report its outcome. All travel in the codec's envelope
 * (`src/bridge/codec.ts`: length prefix, msgpack, `PROTOCOL_VERSION`).
 *
 * ```
 *  host                                             child
 *  child-init {memoryLimitMb, preludeSource, …} ──▶ warm an isolate
 *            ◀── child-ready
 *  chain-run {request fields}                   ──▶ IsolateRunner.run
 *            ◀── tool-call | console-log          (any number, as they happen)
 *  tool-result                                  ──▶
 *  chain-cancel                                 ──▶ (request.signal aborted)
 *            ◀── chain-outcome {outcome}
 *            ◀── child-ready                      (the next context is prepared)
 * ```
 *
 * No message names a run: a child runs one chain at a time and the pipe keeps order, so a
 * `tool-result` the host sent before it read `chain-outcome` reaches the child before the next
 * `chain-run` and is dropped there, never delivered to the wrong chain.
 * @module
 */
import { isFrame } from "../src/bridge/codec.ts";
import { FRAME_KIND, type CallFrame, type LogFrame, type ResultFrame } from "../src/bridge/protocol.ts";
import type { SandboxLimits, SandboxRunOutcome, SandboxRunRequest } from "./sandbox-driver.ts";

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
export interface ChainRunMessage extends Pick<SandboxRunRequest, "chainId" | "script" | "scriptName" | "toolNames" | "maxToolCalls" | "limits" | "seed" | "clockStart"> {
  readonly kind: typeof PROCESS_MESSAGE_KIND.run;
}

/** host → child: stop the chain in progress (it ends `cancelled`). */
export interface ChainCancelMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.cancel;
}

/** child → host: how the chain ended, as the child's runner reported it. */
export interface ChainOutcomeMessage {
  readonly kind: typeof PROCESS_MESSAGE_KIND.outcome;
  readonly outcome: SandboxRunOutcome;
}

/**
 * host → child: a call's result, the bridge's `tool-result` frame plus, when the result's text is
 * sent apart from its JSON (see `src/bridge/wire-result.ts`), that text as UTF-8 bytes: msgpack
 * carries bytes as they are, and the child turns them into a string with Node's UTF-8 decoder
 * (~0.2 ms per MiB here) instead of msgpackr's string extraction (~1.1 ms per MiB). The host
 * sends only well-formed text this way, so the bytes decode to the same string.
 */
export interface ResultMessage extends ResultFrame {
  readonly textUtf8?: Uint8Array;
}

/** Everything the host sends. */
export type HostMessage = ChildInitMessage | ChainRunMessage | ChainCancelMessage | ResultMessage;

/** Everything a child sends. */
export type ChildMessage = ChildReadyMessage | ChainOutcomeMessage | CallFrame | LogFrame;

const OUTCOME_STATUSES: ReadonlySet<unknown> = new Set(["ok", "error", "timeout", "cancelled"]);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;
const isCount = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value) && value >= 0;

/** True for a well-formed message from the host. */
export function isHostMessage(value: unknown): value is HostMessage {
  if (!isRecord(value)) return false;
  switch (value["kind"]) {
    case FRAME_KIND.result:
      return isFrame(value) && (value["textUtf8"] === undefined || value["textUtf8"] instanceof Uint8Array);
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
        typeof value["clockStart"] === "number"
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
    case FRAME_KIND.call:
    case FRAME_KIND.log:
      return isFrame(value);
    case PROCESS_MESSAGE_KIND.ready:
      return true;
    case PROCESS_MESSAGE_KIND.outcome:
      return isOutcome(value["outcome"]);
    default:
      return false;
  }
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
  const error = value["error"];
  if (error === undefined) return true;
  return (
    isRecord(error) &&
    (error["phase"] === "runtime" || error["phase"] === "limit") &&
    typeof error["name"] === "string" &&
    typeof error["message"] === "string" &&
    (error["stack"] === undefined || typeof error["stack"] === "string")
  );
}
