import { readErrorFields } from "./error-fields.ts";

/**
 * The one catalogue of errors isochain throws. Thrown only for programmer and configuration
 * mistakes; per-call and per-chain outcomes are values (`InvocationResult`, `ChainRunResult`).
 *
 * Each code is stable: match on `error.code`, never on the message.
 */
export const ERROR_CODES = Object.freeze({
  POLICY_INVALID:
    "A ChainPolicy field is out of range, approvalTimeoutMs is not below callTimeoutMs, or another limit option (an invoker session's maxTraceRecords, a ToolManager's maxCallsPerRound) is out of range.",
  TOOL_NAME_TAKEN: "The tool name is reserved by isochain (run_chain) and cannot be added to a toolbox.",
  TOOL_INVALID: "A tool definition is malformed: a missing name, description, inputSchema or execute, or a schema the validator cannot compile or nests past the bound.",
  ARTIFACT_NOT_FOUND: "A blob store has no blob for that artifact ref.",
  ARTIFACT_REF_INVALID: "A string is not a well-formed artifact ref.",
  STORE_FAILED: "A blob, trace or approval store failed to read or write.",
  SKILL_INVALID: "A skill folder or file is malformed.",
  APPROVAL_NOT_FOUND: "No pending approval request has that id.",
  CHAIN_CLOSED: "The ToolChainTool was closed; create a new one.",
  SANDBOX_FAILED: "The sandbox could not start or crashed outside a chain, or the driver option names no known driver.",
  TRACE_NOT_FOUND: "No trace has that chain id.",
  TRACE_INVALID: "A trace file is malformed or of an unknown version.",
  REPLAY_FAILED: "A replay could not run (missing tool, unreadable trace).",
  CLI_USAGE: "The command line is malformed.",
  ARGUMENT_INVALID:
    "An argument or option of a public function or constructor is malformed or out of range (a gc age, a poll interval, an approval decision or request, an approvalMode, a chainId already running, a pool size).",
  COMPILE_FAILED: "The script compiler (esbuild) could not run, or returned a malformed source map; script syntax errors are never thrown but returned as a compile ChainError.",
  BRIDGE_FRAME_INVALID: "A bridge frame is malformed, too large, or of another protocol version.",
} as const);

/** A stable error code from {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

const BRAND = Symbol.for("isochain.ChainRuntimeError");

/** Options of a {@link ChainRuntimeError}. */
export interface ChainRuntimeErrorOptions {
  /** Machine-readable facts about the failure (field names, limits, ids). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** The underlying error, kept as the standard `Error#cause`. */
  readonly cause?: unknown;
}

/**
 * The error isochain throws. Branded with `Symbol.for`, so {@link isChainRuntimeError} works
 * across duplicate copies of the package.
 */
export class ChainRuntimeError extends Error {
  /** Stable code; see {@link ERROR_CODES}. */
  readonly code: ErrorCode;
  /**
   * Machine-readable facts about the failure, frozen; `{}` when there are none. Which fields
   * depends on the code: `argument` (the option refused) for `ARGUMENT_INVALID`, `field` for
   * `POLICY_INVALID`, `chainId` (and `resumedAs`, the chain a trace was already resumed as) for
   * `REPLAY_FAILED`, `store` and `dir` for a CLI store, and so on; the message says the same in words.
   */
  readonly details: Readonly<Record<string, unknown>>;

  /**
   * @param code - the stable code a caller branches on
   * @param message - what happened, where, and what to do instead
   * @param options - `details` (copied and frozen) and `cause` (kept as `Error#cause`)
   */
  constructor(code: ErrorCode, message: string, options: ChainRuntimeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ChainRuntimeError";
    this.code = code;
    this.details = Object.freeze({ ...options.details });
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/** True for a {@link ChainRuntimeError}, from this or any other copy of isochain. */
export function isChainRuntimeError(value: unknown): value is ChainRuntimeError {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/**
 * The message of any thrown value, for errors that must become text. Never throws: a value
 * whose getters, `toJSON`, `toString` or proxy traps throw (even by rethrowing itself) is
 * described as far as it can be read, else as "an unprintable value".
 */
export function describeThrown(value: unknown): string {
  if (typeof value === "string") return value;
  const error = readErrorFields(value);
  if (error === "unreadable") return "an Error whose message cannot be read";
  if (error !== undefined) {
    if (typeof error.message === "string" && error.message !== "") return error.message;
    return typeof error.name === "string" && error.name !== "" ? error.name : "Error";
  }
  try {
    const text = JSON.stringify(value);
    if (text !== undefined) return text;
  } catch {
    // fall through: cyclic or hostile value
  }
  try {
    return typeof value === "bigint" ? `${value}n` : String(value);
  } catch {
    return "an unprintable value";
  }
}
