/**
 * The bridge protocol: the frames that travel between the script's isolate and the host. This
 * file is the single definition both sides import (the prelude bundles it into the isolate, the
 * host drivers import it directly), so the two cannot drift. It must stay runtime-neutral: no
 * Node imports, no DOM, nothing but types and constants.
 *
 * ```
 *  isolate (prelude)                                host (sandbox driver)
 *  tools.x(args) ── call  {callIndex, tool, argsJson} ──▶ onToolCall(...)
 *                ◀── result {callIndex, resultJson} ──── InvocationResult as JSON
 *  console.log   ── log   {level, text} ─────────────────▶ onLog(...)
 *  return / throw ── done {returnJson} | {error} ────────▶ SandboxRunOutcome
 * ```
 *
 * Every value inside a frame is a string or a number: arguments, results and return values
 * cross as JSON text, serialised on the sending side; one exception, for speed: a result's large
 * `text` crosses apart from its JSON, as the string itself (see `wire-result.ts`). Inside one
 * process the frames travel as positional callback arguments (see {@link FRAME_KIND}); as bytes
 * they are the objects below, encoded by `codec.ts` (the process driver's pipe carries calls and
 * results in batches of its own, `sandbox/process-protocol.ts`, and console lines as these frames).
 *
 * Batching inside one process: calls the script makes in the same microtask turn leave the
 * isolate as one `tool-calls` frame, and results that reach the host in the same tick enter it
 * through one `resolve` of the bridge (see {@link BRIDGE_OP}). Order is kept: the prelude sends
 * queued calls before any later console line or the done frame.
 *
 * A call the prelude refuses (arguments that are not plain data or are too large) still crosses,
 * as a call frame with `refusal` set and `argsJson` `"{}"`: it takes its `callIndex` and a unit
 * of budget like any call, and the host answers it (with `BRIDGE_ERROR`), so it is traced.
 *
 * Bump {@link PROTOCOL_VERSION} on any change to a frame's shape or meaning.
 * @module
 */

/** Version of the frame shapes below. Both sides refuse frames of another version. */
export const PROTOCOL_VERSION = 4;

/**
 * The `kind` of every frame, in noun-verb style. Inside one process the isolate sends frames as
 * positional arguments of one callback, `send(kind, ...fields)`, in this order:
 * - `tool-call`: `callIndex, tool, argsJson`, then `refusal` when the prelude refused the call
 * - `tool-calls`: one array of 4 slots per call (see {@link LOCAL_FRAME_KIND})
 * - `console-log`: `level, text`
 * - `chain-done`: `returnJson` (or `undefined`), then on failure `name, message, stack`
 * - `clock-readings`: one array `[elapsed, count, ...]` (see `prelude/virtual-clock.ts`)
 *
 * and the host answers calls through the bridge function (see {@link BRIDGE_OP}).
 */
export const FRAME_KIND = Object.freeze({
  /** isolate → host: a `tools.*` call. */
  call: "tool-call",
  /** host → isolate: the answer to one call. */
  result: "tool-result",
  /** isolate → host: one console line. */
  log: "console-log",
  /** isolate → host: the script settled. */
  done: "chain-done",
  /**
   * isolate → host: the script's clock readings since the last such frame, run-length encoded
   * (`[elapsed ms, count, ...]`), sent before the calls or the end that follow them.
   */
  clock: "clock-readings",
} as const);

/**
 * Frame kinds that exist only inside one process (positional callback arguments), never on a
 * wire or on disk, so they have no object shape below.
 */
export const LOCAL_FRAME_KIND = Object.freeze({
  /**
   * isolate → host: several calls of one microtask turn, as one array
   * `[callIndex, tool, argsJson, refusal, callIndex, tool, ...]` (4 slots per call; `refusal` is
   * `undefined` for a call that was not refused).
   */
  calls: "tool-calls",
} as const);

/** One of {@link FRAME_KIND}'s values. */
export type FrameKind = (typeof FRAME_KIND)[keyof typeof FRAME_KIND];

/** Console levels the prelude captures. */
export type LogLevel = "log" | "info" | "warn" | "error" | "debug";

/** isolate → host: the script called `tools[tool](args)`. */
export interface CallFrame {
  readonly kind: typeof FRAME_KIND.call;
  /** 0-based, assigned inside the isolate in program order; only calls that were sent count. */
  readonly callIndex: number;
  readonly tool: string;
  /** The arguments as JSON text (an object; `{}` when the script passed none or the call was refused). */
  readonly argsJson: string;
  /** Why the prelude refused the call (arguments not plain data, too large...); absent otherwise. */
  readonly refusal?: string;
}

/** host → isolate: the outcome of call `callIndex`, an `InvocationResult` as JSON text. */
export interface ResultFrame {
  readonly kind: typeof FRAME_KIND.result;
  readonly callIndex: number;
  readonly resultJson: string;
}

/** isolate → host: one console call, already formatted and bounded. */
export interface LogFrame {
  readonly kind: typeof FRAME_KIND.log;
  readonly level: LogLevel;
  readonly text: string;
}

/** Runs of equal clock readings recorded per run (see `prelude/virtual-clock.ts`); later readings are not recorded. */
export const MAX_CLOCK_READINGS = 10_000;

/** isolate → host: clock readings, `[elapsed ms, count, ...]` (see {@link FRAME_KIND}). */
export interface ClockFrame {
  readonly kind: typeof FRAME_KIND.clock;
  readonly readings: readonly number[];
}

/**
 * True for clock readings as the prelude sends and a replay takes them: pairs of a whole number
 * of milliseconds (>= 0) and a count (>= 1), at most {@link MAX_CLOCK_READINGS} pairs.
 */
export function isClockReadings(value: unknown): value is readonly number[] {
  if (!Array.isArray(value) || value.length % 2 !== 0 || value.length > 2 * MAX_CLOCK_READINGS) return false;
  for (let i = 0; i < value.length; i += 2) {
    const elapsed: unknown = value[i];
    const count: unknown = value[i + 1];
    if (!Number.isSafeInteger(elapsed) || (elapsed as number) < 0 || !Number.isSafeInteger(count) || (count as number) < 1) return false;
  }
  return true;
}

/** True for the readings of one clock frame: well-formed (see {@link isClockReadings}) and not empty. */
export function isClockFrameReadings(value: unknown): value is readonly number[] {
  return isClockReadings(value) && value.length > 0;
}

/** A thrown value as it leaves the isolate. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/**
 * isolate → host: the script's promise settled. Exactly one of `returnJson` / `error` is set,
 * or neither when the script returned `undefined`.
 */
export interface DoneFrame {
  readonly kind: typeof FRAME_KIND.done;
  /** JSON text of the return value; absent when the script returned `undefined`. */
  readonly returnJson?: string;
  readonly error?: WireError;
}

/** Any frame. */
export type Frame = CallFrame | ResultFrame | LogFrame | DoneFrame | ClockFrame;

/** Frames the isolate sends. */
export type IsolateFrame = CallFrame | LogFrame | DoneFrame | ClockFrame;

/** A frame on the wire of a process boundary: the version tag plus the frame. */
export interface VersionedFrame {
  readonly v: typeof PROTOCOL_VERSION;
  readonly frame: Frame;
}

/** What the prelude receives at the start of a run, as JSON text. */
export interface PreludeRunConfig {
  /**
   * Names installed on `tools`. Absent: the names staged in `BRIDGE_GLOBALS.tools` when the
   * context was prepared (the host leaves them out only when it staged the same names).
   */
  readonly toolNames?: readonly string[];
  /** `budget.total`. */
  readonly maxToolCalls: number;
  /** Seed of `Math.random`. */
  readonly seed: number;
  /** Start of the virtual clock, epoch ms. */
  readonly clockStart: number;
  /** Console bytes forwarded before the truncation marker. */
  readonly maxOutputBytes: number;
  /** Largest JSON text of one call's arguments, UTF-8 bytes. */
  readonly maxArgumentBytes: number;
  /** Clock readings to read back first (a replay), run-length encoded as the clock frames carry them. */
  readonly clockReplay?: readonly number[];
  /** Epoch ms the clock reads on from once those readings run out, when later than the recorded time (a resume). */
  readonly clockLiveAt?: number;
}

/** Most values one call's arguments may hold; the prelude refuses more in the isolate (see argument-limits.ts). */
export { MAX_ARGUMENT_NODES } from "../kernel/argument-limits.ts";

/** The line sent once when console output passes `maxOutputBytes`; later output is dropped. */
export const OUTPUT_TRUNCATED_MARKER = "[isochain: output truncated at maxOutputBytes]";

/**
 * Names the prelude and the in-process driver share on the isolate's global object during
 * setup. Each is removed before any script code runs.
 */
export const BRIDGE_GLOBALS = Object.freeze({
  /** host callback the prelude captures and deletes: `send(kind, ...fields)`. */
  send: "__isochain_send",
  /**
   * the prelude's bridge function; the prelude script's completion value takes it off the
   * global, so the host holds the only reference (see {@link BRIDGE_OP}).
   */
  bridge: "__isochain_bridge",
  /** prelude function the compiled script calls once, which then deletes itself: `start(fn)`. */
  start: "__isochain_start",
  /**
   * optional: a JSON array of tool names, set before the prelude runs, which captures and
   * deletes it and builds their `tools` object then, off the run's critical path (see
   * {@link PreludeRunConfig.toolNames}).
   */
  tools: "__isochain_tools",
} as const);

/**
 * Operations of the prelude's bridge function, `bridge(op, a, b, c)`, which only the host can call
 * (it never sits on the script's global object):
 * - `configure`: `a` = {@link PreludeRunConfig} as JSON text; sent before the script starts.
 * - `resolve`: one result, `a` = callIndex, `b` = the `InvocationResult` as JSON text, `c` = its
 *   `text` when sent apart (see `wire-result.ts`); or a batch, `a` = the callIndexes joined
 *   with `,`, `b` = a JSON array of the results in the same order, and when some texts are sent
 *   apart, `c` = those texts concatenated in order, each such result's entry in `a` written
 *   `callIndex:textLength`.
 * - `probe`: returns `"not-started"`, `"done"`, or `"<framesSent>,<resultsReceived>"`.
 */
export const BRIDGE_OP = Object.freeze({
  configure: 1,
  resolve: 2,
  probe: 3,
} as const);
