import type { ApprovalRequest } from "./approval.ts";
import type { InvocationErrorCode } from "./invocation.ts";
import type { ErrorCode } from "./errors.ts";

/** Final state of one call in a trace. `timeout` is a call whose tool ran past `callTimeoutMs`. */
export type CallRecordStatus = "ok" | "error" | "denied" | "timeout";

/** One entry of a call trace: a record exists for every call, whatever its outcome. */
export interface ChainCallRecord {
  /** 0-based order in which the host received the call. */
  readonly seq: number;
  /** Stable call id; inside a chain assigned in program order. */
  readonly callId: string;
  /** The tool's name as the script called it (also for a name no tool has: `UNKNOWN_TOOL`). */
  readonly tool: string;
  /** sha256 (hex) of the canonical JSON of the arguments. */
  readonly argsDigest: string;
  /** How the call ended: the result's `status`, or `timeout` when the tool ran past `callTimeoutMs`. */
  readonly status: CallRecordStatus;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  /** From the host receiving the call to its result, ms (gates, approval wait and tool included; 0 for one answered from a trace). */
  readonly durationMs: number;
  /** Why the call failed, in words. */
  readonly error?: string;
  /** Why the call failed, as a code. */
  readonly code?: InvocationErrorCode;
}

/** How a chain ended. */
export type ChainRunStatus = "ok" | "error" | "timeout" | "cancelled" | "suspended";

/** Where a chain failure happened. */
export type ChainErrorPhase = "compile" | "runtime" | "limit";

/**
 * The `name` of a `limit` error, which says what ended the chain: `TimeoutError`
 * (`totalTimeoutMs`), `CpuLimitError` (`cpuTimeMs`), `MemoryLimitError` (`memoryLimitMb`),
 * `CallLimitError` (a script that kept calling past its budget), `DeadlockError` (a wait nothing
 * can end), `SandboxError` (the sandbox was lost),
 * `CancelledError` (the caller's signal, or `close()` of the tool).
 */
export type ChainLimitErrorName = "TimeoutError" | "CpuLimitError" | "MemoryLimitError" | "CallLimitError" | "DeadlockError" | "SandboxError" | "CancelledError";

/** A chain failure, with positions in the model's own script. */
export interface ChainError {
  /** `compile` (the script never ran), `runtime` (it threw) or `limit` (a limit or the sandbox ended it). */
  readonly phase: ChainErrorPhase;
  /**
   * For phase `limit`, one of {@link ChainLimitErrorName}; for `compile`, `SyntaxError` or
   * `CompileError`; for `runtime`, the name of what the script threw (`TypeError`, a class of its own).
   */
  readonly name: ChainLimitErrorName | "CompileError" | "SyntaxError" | (string & {});
  /** What went wrong and, for the usual mistakes, what to write instead; meant for the model. */
  readonly message: string;
  /**
   * Line in the original script, 1-based. Every line terminator JavaScript knows ends a line
   * (`\n`, `\r\n`, `\r`, U+2028, U+2029), so a CRLF script counts like an LF one.
   */
  readonly line?: number;
  /**
   * Column in the original script, 1-based, counted in UTF-16 code units, as JavaScript string
   * indexes are: column `c` is `lineText[c - 1]`. A character outside the Basic Multilingual
   * Plane (most emoji) counts 2, a combining mark 1, a CJK character 1, whatever width each shows.
   */
  readonly column?: number;
  /** The lines around the fault, with a caret. */
  readonly codeFrame?: string;
  /** Stack with positions mapped to the original script. */
  readonly stack?: string;
}

/** Resource use of one chain. */
export interface ChainRunStats {
  /** Wall time of the sandbox run, ms (the whole chain's is `ChainRunResult.durationMs`). */
  readonly wallMs: number;
  /** CPU time the script's isolate used, ms; 0 for a run that never reached its sandbox. */
  readonly cpuMs: number;
  /** The isolate's used heap at the run's end, bytes (a pooled isolate's, shared with its earlier runs). */
  readonly heapBytes: number;
  /**
   * Calls the budget let through (`maxToolCalls` at most), failed ones included; calls refused
   * past the budget (`BUDGET_EXCEEDED`) are in `callTrace` but not counted here.
   */
  readonly toolCalls: number;
}

/** The outcome of one chain. Never thrown: every script fault is a value here. */
export interface ChainRunResult {
  /** The run's id: `ChainRunOptions.chainId`, or one made for it; names its trace. */
  readonly chainId: string;
  /**
   * `ok` (the script returned), `error` (it did not compile, threw, or hit a limit other than
   * time), `timeout` (`totalTimeoutMs` or `cpuTimeMs`), `cancelled` (the caller's signal) or
   * `suspended` (a call waits for a human: see `pendingApproval`).
   */
  readonly status: ChainRunStatus;
  /** The script's return value (JSON-compatible), when it returned. */
  readonly returnValue?: unknown;
  /** Set when the return value was larger than `maxInlineResultBytes` and was offloaded. */
  readonly returnArtifactRef?: string;
  /** Console output, bounded by `maxOutputBytes`. */
  readonly outputText: string;
  /** Why the run did not end `ok`; absent on `ok` and `suspended`, and on the run of a replay stopped at its divergence (its report says why). */
  readonly error?: ChainError;
  /**
   * Every call the host received, in order; whole whatever the outcome, up to the 1 000 records
   * a session keeps (see `droppedCallRecords`).
   */
  readonly callTrace: readonly ChainCallRecord[];
  /**
   * Calls beyond the kept trace (a flood), counted but not kept. The calls whose tool ran are
   * kept first: a record of a refused call (over budget, bad arguments, denied) gives its place
   * to one of a call that ran. The trace store, when there is one, keeps every call.
   */
  readonly droppedCallRecords?: number;
  /** The whole run, ms: compiling, the sandbox and the host's work after it. */
  readonly durationMs: number;
  /** What the run used (see {@link ChainRunStats}). */
  readonly stats: ChainRunStats;
  /** The seed of the script's `Math.random`, for replay. */
  readonly seed?: number;
  /** The virtual clock's start (epoch ms), for replay. */
  readonly clockStart?: number;
  /** Set when `status` is `"suspended"`: the request a human must decide. */
  readonly pendingApproval?: ApprovalRequest;
  /**
   * Set when cleaning up after the chain failed: the blob store could not unpin artifacts the
   * chain's results pinned (they stay pinned, out of the store's `gc`, until unpinned). The run
   * itself ended as `status` says; its calls, results and trace are unaffected.
   */
  readonly cleanupError?: ChainCleanupError;
  /**
   * Set when the run ended `ok` but something in it is likely a mistake the model should hear
   * about (see {@link ChainRunWarning}); the summary the model reads prints each one.
   */
  readonly warnings?: readonly ChainRunWarning[];
}

/**
 * Something in a run that ended `ok` that is likely a mistake; `code` tells which (see
 * {@link CallsNotAwaitedWarning} and {@link UnhandledRejectionWarning}).
 */
export type ChainRunWarning = CallsNotAwaitedWarning | UnhandledRejectionWarning;

/**
 * `CALLS_NOT_AWAITED`: the script returned while some of its calls were unanswered (a `forEach`
 * with an async callback, a promise never awaited): their results never reached the script, and
 * the ones still running were cancelled (a tool may have acted before it stopped).
 */
export interface CallsNotAwaitedWarning {
  readonly code: "CALLS_NOT_AWAITED";
  /** What happened and how to fix it, for the model. */
  readonly message: string;
  /** The `seq` of each call concerned, in `callTrace`. */
  readonly seqs: readonly number[];
}

/**
 * `UNHANDLED_REJECTION`: a promise of the script was rejected with nothing handling it (an async
 * function called without `await` that threw, a `.then` callback that threw): the error never
 * reached the script's result, so the run looks fine while part of it failed. One warning per
 * rejection, at most 5 a run; as in every JavaScript runtime, a rejection handled only later
 * (`const p = f(); await tools.x(); await p`) is reported too. The in-process driver reports
 * only rejections made before the script's first `await` ends (the process driver, the default,
 * reports all).
 */
export interface UnhandledRejectionWarning {
  readonly code: "UNHANDLED_REJECTION";
  /** The rejection's error (name and message, or the value) and how to fix it, for the model. */
  readonly message: string;
  /** Where the error was made in the original script, 1-based (see {@link ChainError.line}); absent when unknown. */
  readonly line?: number;
  /** Column of {@link line}, 1-based, in UTF-16 code units (see {@link ChainError.column}). */
  readonly column?: number;
}

/** What failed while cleaning up after a chain (see {@link ChainRunResult.cleanupError}). */
export interface ChainCleanupError {
  /** The `ChainRuntimeError` code: `STORE_FAILED`. */
  readonly code: ErrorCode;
  readonly message: string;
}
