import type { ArtifactRef } from "./artifact-ref.ts";

/** One request to run a tool: what the model (or a script) asked for. */
export interface ToolCall {
  /** The caller's id for the call (the provider's tool-call id); generated when absent. */
  readonly id?: string;
  /** The tool to run, looked up in the invoker's toolbox. */
  readonly name: string;
  /** An object, or a JSON string of one (as some providers send them). */
  readonly arguments: unknown;
  /**
   * Set when the caller already refused the call before it reached the host (a script handed
   * over a value that is not plain data). The invoker still counts it against the budget and
   * records it, then returns this failure without looking further.
   */
  readonly rejection?: InvocationFailure;
}

/** A file a tool produced, kept in the blob store and named as the script sees it. */
export interface ChainFile {
  /** e.g. `/workspace/media/chart_0.png` */
  readonly path: string;
  readonly artifactRef: ArtifactRef;
  readonly mimeType: string;
  readonly bytes: number;
}

/**
 * Why a call did not succeed. Stable; a script or agent may branch on it.
 *
 * - `BUDGET_EXCEEDED`: the session's `maxToolCalls` was used up.
 * - `UNKNOWN_TOOL`: no tool of that name.
 * - `NOT_CALLABLE`: a hosted or provider-defined tool, `run_chain` itself, or a tool whose
 *   `inputSchema` is not a valid JSON Schema (a fault of its definition, not of the call).
 * - `INVALID_ARGUMENTS`: arguments not an object, unparseable JSON, or invalid for the schema.
 * - `APPROVAL_DENIED`, `APPROVAL_TIMEOUT`, `APPROVAL_SKIPPED`: the approval gate said no.
 * - `ARTIFACT_NOT_FOUND`: an `{ $artifact }` argument named a ref the store lacks.
 * - `CANCELLED`: the chain or caller cancelled before or during the call.
 * - `TIMEOUT`: `execute` ran past `callTimeoutMs`.
 * - `TOOL_ERROR`: `execute` threw.
 * - `TOOL_FAILED`: the tool returned `isError: true`.
 * - `RESULT_INVALID`: the tool returned something that is not a result (undefined, cyclic, ...).
 * - `BRIDGE_ERROR`: the script handed over a value that is not plain data, or one too large.
 * - `STORE_FAILED`: the blob store failed while offloading or resolving.
 * - `IN_DOUBT`: a resumed call whose outcome was never recorded.
 */
export type InvocationErrorCode = (typeof INVOCATION_ERROR_CODES)[number];

/** Every {@link InvocationErrorCode}, in the order the docs list them. */
export const INVOCATION_ERROR_CODES = [
  "BUDGET_EXCEEDED",
  "UNKNOWN_TOOL",
  "NOT_CALLABLE",
  "INVALID_ARGUMENTS",
  "APPROVAL_DENIED",
  "APPROVAL_TIMEOUT",
  "APPROVAL_SKIPPED",
  "ARTIFACT_NOT_FOUND",
  "CANCELLED",
  "TIMEOUT",
  "TOOL_ERROR",
  "TOOL_FAILED",
  "RESULT_INVALID",
  "BRIDGE_ERROR",
  "STORE_FAILED",
  "IN_DOUBT",
] as const;

const CODES: ReadonlySet<string> = new Set(INVOCATION_ERROR_CODES);

/** True when `value` is one of the {@link InvocationErrorCode}s. */
export function isInvocationErrorCode(value: unknown): value is InvocationErrorCode {
  return typeof value === "string" && CODES.has(value);
}

/** A call that ran and succeeded. */
export interface InvocationSuccess {
  /** The call ran and its tool did not report a failure. */
  readonly status: "ok";
  /** The result as text: inline when small, a preview when offloaded. */
  readonly text: string;
  /** The tool's `structuredContent`, when small enough to stay inline. */
  readonly structured?: Readonly<Record<string, unknown>>;
  /** Set when the full result was offloaded to the blob store. */
  readonly artifactRef?: ArtifactRef;
  /** Size in bytes of the full result, when it was offloaded. */
  readonly bytes?: number;
  /** Media the tool produced. */
  readonly files?: readonly ChainFile[];
}

/** A call that failed or was refused. `text` says what happened and how to fix it. */
export interface InvocationFailure {
  /** `denied` when the call needed approval and did not get it (denied, skipped, timed out, no handler); `error` otherwise. */
  readonly status: "error" | "denied";
  /** What happened and how to fix it, in words a model can act on. */
  readonly text: string;
  /** Why, as a stable code to branch on (see {@link InvocationErrorCode}). */
  readonly code: InvocationErrorCode;
  /** The tool's `structuredContent` when it reported its own failure. */
  readonly structured?: Readonly<Record<string, unknown>>;
  /**
   * Set when the tool's own failure (`TOOL_FAILED`) was larger than `maxInlineResultBytes` and was
   * offloaded to the blob store, as a result would be: `text` is then a preview.
   */
  readonly artifactRef?: ArtifactRef;
  /** Size in bytes of the full failure, when it was offloaded. */
  readonly bytes?: number;
}

/** What the invoker hands back for every call: never a throw. */
export type InvocationResult = InvocationSuccess | InvocationFailure;

/** `"ok"`, `"error"` or `"denied"`. */
export type InvocationStatus = InvocationResult["status"];
