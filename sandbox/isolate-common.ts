/**
 * What the two isolate runners share: the asynchronous {@link IsolateRunner} (the isolate runs
 * on its own thread; the host never waits on script code) and the synchronous
 * {@link SyncIsolateRunner} (the isolate runs on the caller's thread, one bounded stretch at a
 * time). Both speak the same bridge to the same prelude, cache compiled scripts the same way and
 * turn the same frames into calls, console lines and outcomes; only how they enter the isolate
 * and how they learn that it is idle differ.
 * @module
 */
import type ivm from "isolated-vm";
import { BRIDGE_GLOBALS, BRIDGE_OP, isClockFrameReadings, OUTPUT_TRUNCATED_MARKER, type LogLevel, type PreludeRunConfig } from "../src/bridge/protocol.ts";
import { toWireResult, type WireResult } from "../src/bridge/wire-result.ts";
import { describeThrown, type InvocationResult } from "../src/kernel/index.ts";
import { boundStack, clipText, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS } from "../src/kernel/bound-error-text.ts";
import { boundLogLine } from "./output-cap.ts";
import { LIMIT_HINTS } from "./limits.ts";
import { MAX_CALLS_PAST_BUDGET, MAX_UNHANDLED_REJECTIONS, type SandboxError, type SandboxLimits, type SandboxRunOutcome, type SandboxRunRequest, type SandboxToolCall } from "./sandbox-driver.ts";

/** The prelude's bridge function: `(op, a?, b?, c?)`, see `BRIDGE_OP`. */
export type Bridge = (op: number, a?: string | number, b?: string, c?: string) => unknown;

/** One field of a frame as it arrives from the prelude's `send`. */
export type FrameField = string | number | undefined | FrameField[];

/** A fresh context with the prelude installed, and the host's handle on its bridge. */
export interface PreparedContext {
  readonly context: ivm.Context;
  readonly bridge: ivm.Reference<Bridge>;
  /** Tool names whose `tools` object the prelude built as it loaded (`BRIDGE_GLOBALS.tools`). */
  readonly stagedTools?: readonly string[];
}

/**
 * A call's result already serialised for the bridge (a {@link WireResult}: the JSON text of an
 * `InvocationResult`, and its large `text` apart), which an {@link IsolateRunRequest}'s
 * `onToolCall` may resolve to when it already holds it (a sandbox child gets it over the wire):
 * it goes into the isolate as it is, with no parse and re-stringify. `resultJson` must be that
 * JSON; the script sees a `BRIDGE_ERROR` result when it is not (and so does every result that
 * entered the isolate in the same batch).
 */
export interface SerializedToolResult extends WireResult {
  readonly resultJson: string;
}

/** What a runner's `run` takes: a {@link SandboxRunRequest} whose `onToolCall` may also resolve to JSON text. */
export interface IsolateRunRequest extends Omit<SandboxRunRequest, "onToolCall"> {
  readonly onToolCall: (call: SandboxToolCall, signal: AbortSignal) => Promise<InvocationResult | SerializedToolResult>;
  /**
   * Called by the synchronous runner once the frames of one entry into the isolate were handed
   * to `onToolCall` / `onLog`: a batch boundary, where a transport writes what it queued instead
   * of waiting for the end of the tick. Must not throw.
   */
  readonly onFramesHandled?: () => void;
}

/** Options of an isolate runner. */
export interface IsolateRunnerOptions {
  /** Heap limit of the isolate, MiB (isolated-vm's minimum is 8). */
  readonly memoryLimitMb: number;
  /** The prelude to install in each context. @defaultValue the bundled prelude */
  readonly preludeSource?: string;
  /**
   * Asynchronous drive only: how long the host's event loop is kept turning after each hand-off
   * to the isolate, µs, while a core is free for it (see `sandbox/spin-wait.ts`); 0 lets the
   * host thread sleep at once. @defaultValue 1000 (`DEFAULT_SPIN_WAIT_US`)
   */
  readonly spinWaitUs?: number;
}

/** What an {@link IsolatePool} lends: one isolate that runs one script at a time in a fresh context. */
export interface PooledRunner {
  /** The isolate's heap limit, MiB. */
  readonly memoryLimitMb: number;
  /** Runs completed in this isolate. */
  readonly runs: number;
  /** True once the isolate is gone; the owner must drop the runner. */
  readonly isDisposed: boolean;
  /** True while a run is in progress. */
  readonly isBusy: boolean;
  /** Used heap at the end of the last run, bytes. */
  readonly heapBytes: number;
  /** Creates the next run's context off the critical path; rejects when the isolate is disposed. */
  prepare(): Promise<void>;
  /** Runs one script; never rejects for anything the script does. */
  run(request: IsolateRunRequest): Promise<SandboxRunOutcome>;
  /** Disposes the isolate; a run in progress ends as a crash. Idempotent. */
  dispose(): void;
}

/** Why the host ended a run early. */
export type KillReason = "timeout" | "cpu" | "memory" | "calls" | "cancelled" | "crash";

/** An outcome before its measurements are added. */
export type Settled = Omit<SandboxRunOutcome, "wallMs" | "cpuMs" | "heapBytes">;

/** The file name the prelude is compiled under (it shows in stacks of prelude faults). */
export const PRELUDE_FILENAME = "isochain:prelude";

/** V8's code cache of the prelude, with the source it was made from. */
let preludeCodeCache: { readonly source: string; readonly data: ivm.ExternalCopy<ArrayBuffer> } | undefined;

/**
 * Compiles the prelude in a new `isolate`, from V8's code cache when an earlier isolate of this
 * process made one for the same source: a new isolate with its prelude compiled takes ~1.0 ms
 * instead of ~1.4 ms here (the prelude's parse and compile, 0.43 ms, becomes 0.07). The first
 * isolate makes the cache; one V8 refuses (another build or flags) is replaced by a new one, made
 * by the same compile. Only isochain's own prelude goes through here, never script code.
 */
export function compilePrelude(isolate: ivm.Isolate, source: string): ivm.Script {
  const cached = preludeCodeCache?.source === source ? preludeCodeCache.data : undefined;
  // isolated-vm sets `cachedData` on the script it returns; its typings leave that off `Script`.
  const script: ivm.Script & ivm.CachedDataResult = isolate.compileScriptSync(source, {
    filename: PRELUDE_FILENAME,
    ...(cached === undefined ? {} : { cachedData: cached }),
    // With cached data as well, V8 makes new data only when it refused the old.
    produceCachedData: true,
  });
  if (script.cachedData !== undefined) preludeCodeCache = { source, data: script.cachedData };
  return script;
}

/** Console levels the prelude may name. */
export const LOG_LEVELS: ReadonlySet<string> = new Set(["log", "info", "warn", "error", "debug"]);

/** Compiled scripts kept per isolate (least recently compiled first out of the cache when full). */
const SCRIPT_CACHE_SIZE = 32;
/** Scripts remembered as run once without being cached (see {@link ScriptCache.seenBefore}). */
const SEEN_ONCE_SIZE = 8;

/**
 * Compiled scripts of one isolate by source text (with the file name they were compiled
 * under): a warm chain runs its cached `Script` instead of compiling again.
 */
export class ScriptCache {
  readonly #isolate: ivm.Isolate;
  readonly #scripts = new Map<string, { readonly name: string; readonly script: ivm.Script }>();
  readonly #seenOnce: string[] = [];

  constructor(isolate: ivm.Isolate) {
    this.#isolate = isolate;
  }

  /** The cached script of `request`, if it was compiled under the same name. */
  get(request: Pick<SandboxRunRequest, "script" | "scriptName">): ivm.Script | undefined {
    const cached = this.#scripts.get(request.script);
    return cached !== undefined && cached.name === request.scriptName ? cached.script : undefined;
  }

  /**
   * True when `request`'s script already ran in this isolate without being cached: a second
   * sighting, worth compiling into the cache. Otherwise records this first sighting (the last
   * {@link SEEN_ONCE_SIZE} are remembered) and returns false.
   */
  seenBefore(request: Pick<SandboxRunRequest, "script">): boolean {
    const seen = this.#seenOnce;
    const index = seen.indexOf(request.script);
    if (index >= 0) {
      seen.splice(index, 1);
      return true;
    }
    seen.push(request.script);
    if (seen.length > SEEN_ONCE_SIZE) seen.shift();
    return false;
  }

  /** Compiles `request`'s script on the isolate's thread (cached), or returns the compile error as a runtime fault. */
  async compile(request: Pick<SandboxRunRequest, "script" | "scriptName">): Promise<ivm.Script | SandboxError> {
    const cached = this.get(request);
    if (cached !== undefined) return cached;
    try {
      return this.#store(request, await this.#isolate.compileScript(wrapScript(request.script), { filename: request.scriptName }));
    } catch (error) {
      return this.#compileError(error);
    }
  }

  /** {@link compile} on the caller's thread. */
  compileSync(request: Pick<SandboxRunRequest, "script" | "scriptName">): ivm.Script | SandboxError {
    const cached = this.get(request);
    if (cached !== undefined) return cached;
    try {
      return this.#store(request, this.#isolate.compileScriptSync(wrapScript(request.script), { filename: request.scriptName }));
    } catch (error) {
      return this.#compileError(error);
    }
  }

  #compileError(error: unknown): SandboxError {
    if (this.#isolate.isDisposed) return { phase: "limit", name: "SandboxError", message: "the isolate was disposed during the run" };
    return thrownToError(error);
  }

  #store(request: Pick<SandboxRunRequest, "script" | "scriptName">, script: ivm.Script): ivm.Script {
    const previous = this.#scripts.get(request.script);
    if (previous !== undefined) {
      previous.script.release();
      this.#scripts.delete(request.script);
    } else if (this.#scripts.size >= SCRIPT_CACHE_SIZE) {
      const oldest = this.#scripts.keys().next().value;
      if (oldest !== undefined) {
        this.#scripts.get(oldest)?.script.release();
        this.#scripts.delete(oldest);
      }
    }
    this.#scripts.set(request.script, { name: request.scriptName, script });
    return script;
  }
}

/** The script as the isolate compiles it: handed to the prelude's `start`; it keeps its own lines (2.. of the wrapper). */
export function wrapScript(script: string): string {
  return `${BRIDGE_GLOBALS.start}(${script}\n)`;
}

/**
 * Turns a call frame's fields into a {@link SandboxToolCall}, or `undefined` for a malformed
 * frame. Arguments past `maxArgumentBytes` become a refused call (the prelude checks too; this
 * is the host's own check).
 */
export function callFromFrame(
  callIndex: FrameField,
  tool: FrameField,
  argsJson: FrameField,
  refusal: FrameField,
  maxArgumentBytes: number,
): SandboxToolCall | undefined {
  if (!isCallIndex(callIndex) || typeof tool !== "string" || typeof argsJson !== "string") return undefined;
  // The prelude's refusals are a line; a forged one of any size would be traced whole.
  if (typeof refusal === "string") return { callIndex, tool, argsJson: "{}", refusal: clipText(refusal, MAX_ERROR_MESSAGE_CHARS) };
  if (argsJson.length > maxArgumentBytes / 3 && Buffer.byteLength(argsJson) > maxArgumentBytes) {
    return { callIndex, tool, argsJson: "{}", refusal: `tools.${tool}: arguments exceed ${maxArgumentBytes} bytes.` };
  }
  return { callIndex, tool, argsJson };
}

/** The outcome a `done` frame carries: `a` the return value's JSON, or `b`/`c`/`d` an error's name, message, stack. */
export function settledFromDone(a: FrameField, b: FrameField, c: FrameField, d: FrameField): Settled {
  if (typeof b === "string") {
    // A script can throw { name, message, stack } of any size: cut here, where the runner first
    // holds them (the sandbox child would otherwise have to send them whole; see bound-error-text.ts).
    // And well-formed: a lone surrogate would come out of each codec on the way (the process
    // channel, a trace file) differently, so the result and its stored trace would disagree.
    const error: SandboxError = {
      phase: "runtime",
      name: clipText(b, MAX_ERROR_NAME_CHARS).toWellFormed(),
      message: typeof c === "string" ? clipText(c, MAX_ERROR_MESSAGE_CHARS).toWellFormed() : "",
      ...(typeof d === "string" ? { stack: boundStack(d).toWellFormed() } : {}),
    };
    return { status: "error", error };
  }
  const unansweredCalls = callIndexesFrom(c);
  return { status: "ok", ...(typeof a === "string" ? { returnJson: a } : {}), ...(unansweredCalls ? { unansweredCalls } : {}) };
}

/**
 * The call indexes of a done frame's list (see the prelude's `finish`): the calls the script had
 * not seen answered when it returned. Entries that are not call indexes are dropped.
 */
function callIndexesFrom(field: FrameField): number[] | undefined {
  if (!Array.isArray(field) || field.length === 0) return undefined;
  const indexes: number[] = [];
  for (const entry of field) if (isCallIndex(entry)) indexes.push(entry);
  return indexes.length > 0 ? indexes : undefined;
}

/** A call index the prelude can have given: a non-negative safe integer (anything else is a forged frame, dropped). */
function isCallIndex(value: FrameField): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** Dispatches one call to the host; the answer (or a `TOOL_ERROR` for a rejection) goes to `deliver`. */
export function dispatchCall(
  request: IsolateRunRequest,
  call: SandboxToolCall,
  signal: AbortSignal,
  deliver: (callIndex: number, result: InvocationResult | SerializedToolResult) => void,
): void {
  let answer: Promise<InvocationResult | SerializedToolResult>;
  try {
    answer = request.onToolCall(call, signal);
  } catch (error) {
    answer = Promise.reject(error as Error);
  }
  answer.then(
    (value) => deliverSafely(deliver, call.callIndex, value),
    (error: unknown) => deliverSafely(deliver, call.callIndex, { status: "error", code: "TOOL_ERROR", text: describeThrown(error) }),
  );
}

/**
 * `deliver`, which must not throw; if it ever did, the throw would be an unhandled rejection,
 * which ends the host process. The run then misses a result, and its watchdog ends it.
 */
function deliverSafely(
  deliver: (callIndex: number, result: InvocationResult | SerializedToolResult) => void,
  callIndex: number,
  result: InvocationResult | SerializedToolResult,
): void {
  try {
    deliver(callIndex, result);
  } catch {
    // see above
  }
}

/** Forwards clock readings to `onClock`; a frame that is not well-formed readings is dropped. */
export function forwardClock(request: Pick<SandboxRunRequest, "onClock"> | undefined, readings: unknown): void {
  if (!isClockFrameReadings(readings)) return;
  try {
    request?.onClock?.(readings);
  } catch {
    // a failing listener must not break the run
  }
}

/**
 * Forwards a console line to `onLog` within the host's own cap (UTF-8 bytes; the line that
 * crosses it is cut, see `output-cap.ts`); returns the bytes now counted.
 */
export function forwardLog(request: IsolateRunRequest | undefined, level: FrameField, text: FrameField, counted: number, cap: number): number {
  if (typeof level !== "string" || !LOG_LEVELS.has(level) || typeof text !== "string") return counted;
  const line = boundLogLine(text, counted, cap, OUTPUT_TRUNCATED_MARKER.length);
  if (line === undefined) return counted;
  try {
    // A lone surrogate becomes U+FFFD here, as UTF-8 (the sandbox pipe, a terminal, a file) would
    // make it anyway: one output on both drivers.
    request?.onLog?.(level as LogLevel, line.text.isWellFormed() ? line.text : line.text.toWellFormed());
    if (line.cut) request?.onLog?.(level as LogLevel, OUTPUT_TRUNCATED_MARKER);
  } catch {
    // a failing log listener must not break the run
  }
  return line.counted;
}

/** Arguments of one `resolve` of the bridge (see `BRIDGE_OP`). */
export type ResolveArgs = [op: number, indexes: number | string, resultsJson: string, texts?: string];

/**
 * Most UTF-16 units of JSON and text one `resolve` carries when it holds more than one result
 * (32 Mi, 64 MiB): results past it wait for the next `resolve`. A batch is joined into one
 * JSON array and one string of texts, and V8 refuses strings past ~2^29 units with a
 * `RangeError`: 30 parallel calls returning 20 MiB each, inline, would otherwise throw on the
 * host. One result alone is never split (it already is a string).
 */
export const MAX_BATCH_UNITS = 32 * 1024 * 1024;

/**
 * Results waiting to enter the isolate together, in the order they settled, and the bridge
 * arguments that carry them in one `resolve`: a large `text` goes apart from the JSON (see
 * `src/bridge/wire-result.ts`), also inside a batch. {@link take} takes the oldest results
 * that fit in {@link MAX_BATCH_UNITS}; the owner calls it again while {@link length} is not 0.
 */
export class ResultQueue {
  #indexes: number[] = [];
  #jsons: string[] = [];
  /** The texts sent apart, by position; undefined until one is. */
  #texts: (string | undefined)[] | undefined;
  /** UTF-16 units of JSON and text queued. */
  #units = 0;

  /** Results queued. */
  get length(): number {
    return this.#indexes.length;
  }

  /** Queues the result of call `callIndex`. */
  push(callIndex: number, result: InvocationResult | SerializedToolResult): void {
    const wire = isSerialized(result) ? result : toWireResult(result);
    if (wire.text !== undefined) {
      this.#texts ??= [];
      this.#texts[this.#indexes.length] = wire.text;
    }
    this.#indexes.push(callIndex);
    this.#jsons.push(wire.resultJson);
    this.#units += wire.resultJson.length + (wire.text?.length ?? 0);
  }

  /** Drops everything queued. */
  clear(): void {
    this.#indexes = [];
    this.#jsons = [];
    this.#texts = undefined;
    this.#units = 0;
  }

  /**
   * The `resolve` arguments for the oldest queued results that fit in one batch (all of them,
   * unless they pass {@link MAX_BATCH_UNITS}), which are dropped; `undefined` when empty.
   */
  take(): ResolveArgs | undefined {
    if (this.#indexes.length === 0) return undefined;
    if (this.#units > MAX_BATCH_UNITS && this.#indexes.length > 1) return this.#takeSome();
    const indexes = this.#indexes;
    const jsons = this.#jsons;
    const texts = this.#texts;
    this.clear();
    return resolveArgs(indexes, jsons, texts);
  }

  /** {@link take} when the queue is over the batch bound: the longest prefix within it, at least one result. */
  #takeSome(): ResolveArgs {
    let count = 0;
    let units = 0;
    for (; count < this.#indexes.length; count++) {
      const size = (this.#jsons[count] as string).length + (this.#texts?.[count]?.length ?? 0);
      if (count > 0 && units + size > MAX_BATCH_UNITS) break;
      units += size;
    }
    const indexes = this.#indexes.slice(0, count);
    const jsons = this.#jsons.slice(0, count);
    const texts = this.#texts?.slice(0, count);
    this.#indexes = this.#indexes.slice(count);
    this.#jsons = this.#jsons.slice(count);
    this.#texts = this.#texts?.slice(count);
    this.#units -= units;
    return resolveArgs(indexes, jsons, texts);
  }
}

/** The `resolve` arguments of one batch. */
function resolveArgs(indexes: number[], jsons: string[], texts: (string | undefined)[] | undefined): ResolveArgs {
  if (indexes.length === 1) {
    const text = texts?.[0];
    const index = indexes[0] as number;
    const json = jsons[0] as string;
    return text === undefined ? [BRIDGE_OP.resolve, index, json] : [BRIDGE_OP.resolve, index, json, text];
  }
  const results = `[${jsons.join(",")}]`;
  if (texts === undefined) return [BRIDGE_OP.resolve, indexes.join(","), results];
  let entries = "";
  let joined = "";
  for (let i = 0; i < indexes.length; i++) {
    const text = texts[i];
    if (i > 0) entries += ",";
    if (text === undefined) {
      entries += String(indexes[i]);
    } else {
      entries += `${String(indexes[i])}:${String(text.length)}`;
      joined += text;
    }
  }
  return [BRIDGE_OP.resolve, entries, results, joined];
}

function isSerialized(result: InvocationResult | SerializedToolResult): result is SerializedToolResult {
  return typeof result === "object" && result !== null && !("status" in result) && typeof (result as SerializedToolResult).resultJson === "string";
}

/** True when `a` holds the same names as `b`, in the same order (`a` undefined: false). */
export function sameNames(a: readonly string[] | undefined, b: readonly string[]): boolean {
  if (a === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The names to stage for the next context (see `BRIDGE_GLOBALS.tools`): a copy of `names` when
 * the prelude can build their `tools` object, that is when they are distinct strings; else
 * `undefined` (nothing is staged, and a run configures its names as it always could). A list the
 * prelude refused would leave every later run of the isolate configured for tools never built.
 */
export function stageableToolNames(names: readonly unknown[]): readonly string[] | undefined {
  const seen = new Set<string>();
  for (const name of names) {
    if (typeof name !== "string" || seen.has(name)) return undefined;
    seen.add(name);
  }
  return [...seen];
}

/** The last configuration's JSON without its per-run fields, and what it was made of. */
let configCache:
  | { toolNames: readonly string[]; staged: boolean; maxToolCalls: number; maxOutputBytes: number; maxArgumentBytes: number; head: string }
  | undefined;

/**
 * The prelude's configuration of `request` as JSON, without the tool names when `prepared` has
 * the same ones staged. A tool's runs share all of it but the seed and the clock, so the rest is
 * serialised once (kept with a copy of the names it was made from) and those two numbers
 * appended: a few µs off each run's critical path, more with many tools.
 */
export function configJson(request: IsolateRunRequest, prepared: PreparedContext): string {
  const { toolNames, maxToolCalls, seed, clockStart, clockReplay, clockLiveAt } = request;
  const { maxOutputBytes, maxArgumentBytes } = request.limits;
  const staged = prepared.stagedTools !== undefined && sameNames(prepared.stagedTools, toolNames);
  const names = staged ? {} : { toolNames };
  if (!Number.isFinite(seed) || !Number.isFinite(clockStart) || clockReplay !== undefined || clockLiveAt !== undefined) {
    const config: PreludeRunConfig = {
      ...names,
      maxToolCalls,
      seed,
      clockStart,
      maxOutputBytes,
      maxArgumentBytes,
      ...(clockReplay ? { clockReplay } : {}),
      ...(clockLiveAt === undefined ? {} : { clockLiveAt }),
    };
    return JSON.stringify(config);
  }
  let cached = configCache;
  if (
    cached === undefined ||
    cached.staged !== staged ||
    !sameNames(cached.toolNames, toolNames) ||
    cached.maxToolCalls !== maxToolCalls ||
    cached.maxOutputBytes !== maxOutputBytes ||
    cached.maxArgumentBytes !== maxArgumentBytes
  ) {
    const head = JSON.stringify({ ...names, maxToolCalls, maxOutputBytes, maxArgumentBytes } satisfies Omit<PreludeRunConfig, "seed" | "clockStart">);
    cached = { toolNames: [...toolNames], staged, maxToolCalls, maxOutputBytes, maxArgumentBytes, head: head.slice(0, -1) };
    configCache = cached;
  }
  // A finite number's JSON is its string form.
  return `${cached.head},"seed":${seed},"clockStart":${clockStart}}`;
}

/** Drops every host handle into a finished context so the isolate can collect it. */
export function releaseContext(prepared: PreparedContext): void {
  for (const handle of [prepared.bridge, prepared.context]) {
    try {
      handle.release();
    } catch {
      // already gone with the isolate
    }
  }
}

/** A value thrown inside the isolate (or by isolated-vm) as a runtime {@link SandboxError}. */
export function thrownToError(error: unknown): SandboxError {
  const thrown = error as { name?: unknown; message?: unknown; stack?: unknown };
  return {
    phase: "runtime",
    name: typeof thrown.name === "string" ? thrown.name : "Error",
    message: typeof thrown.message === "string" ? thrown.message : describeThrown(error),
    ...(typeof thrown.stack === "string" ? { stack: thrown.stack } : {}),
  };
}

/** What isolated-vm says of a rejection with an object that is not an Error (it does not copy such a value out). */
const NOT_AN_ERROR_OBJECT = "An object was thrown from supplied code within isolated-vm";

/** Where isolated-vm's copy of an error's stack leaves the isolate: the host frames after it are not the script's. */
const ISOLATE_BOUNDARY_FRAME = "\n    at (<isolated-vm boundary>)";

/**
 * Adds `reason` to a run's unhandled rejections (kept in `list`, created on the first): what
 * isolated-vm reports when a task on the isolate ends with a promise rejected and no handler on
 * it. An Error keeps its name, message and the isolate's part of its stack, each bounded as a
 * thrown error's are; a primitive is described; an object that is not an Error is said to be one
 * (isolated-vm does not copy it out). Past {@link MAX_UNHANDLED_REJECTIONS} it is dropped.
 */
export function noteRejection(list: SandboxError[] | undefined, reason: unknown): SandboxError[] {
  const kept = list ?? [];
  if (kept.length >= MAX_UNHANDLED_REJECTIONS) return kept;
  let error: SandboxError;
  if (reason instanceof Error && !reason.message.startsWith(NOT_AN_ERROR_OBJECT)) {
    const stack = typeof reason.stack === "string" ? reason.stack.split(ISOLATE_BOUNDARY_FRAME, 1)[0] : undefined;
    error = {
      phase: "runtime",
      name: clipText(String(reason.name), MAX_ERROR_NAME_CHARS).toWellFormed(),
      message: clipText(reason.message, MAX_ERROR_MESSAGE_CHARS).toWellFormed(),
      ...(stack === undefined ? {} : { stack: boundStack(stack).toWellFormed() }),
    };
  } else {
    const value = typeof reason === "string" ? JSON.stringify(clipText(reason, MAX_ERROR_MESSAGE_CHARS)) : describeThrown(reason);
    const what = reason instanceof Error ? "an object that is not an Error (its fields cannot be shown: reject with an Error)" : `a value that is not an Error: ${value}`;
    error = { phase: "runtime", name: "", message: what.toWellFormed() };
  }
  kept.push(error);
  return kept;
}

/**
 * The outcome a runner hands over as a run closes: what settled it (or, should nothing have, a
 * `SandboxError` saying so), the promise rejections it left unhandled, and its measurements.
 */
export function closingOutcome(
  settled: Settled | undefined,
  rejections: readonly SandboxError[] | undefined,
  wallMs: number,
  cpuMs: number,
  heapBytes: number,
): SandboxRunOutcome {
  return {
    ...(settled ?? { status: "error", error: { phase: "limit", name: "SandboxError", message: "the run ended without an outcome" } }),
    ...(rejections === undefined ? {} : { unhandledRejections: rejections }),
    wallMs,
    cpuMs,
    heapBytes,
  };
}

/** An outcome for a run that could not start (no context, no isolate). */
export function sandboxFailure(message: string): SandboxRunOutcome {
  return { status: "error", error: { phase: "limit", name: "SandboxError", message }, wallMs: 0, cpuMs: 0, heapBytes: 0 };
}

/** The outcome of a run the host ended for `reason`. */
export function killOutcome(reason: KillReason, limits: SandboxLimits, maxToolCalls = 0): Settled {
  switch (reason) {
    case "calls":
      return {
        status: "error",
        error: {
          phase: "limit",
          name: "CallLimitError",
          message: `the script made ${maxToolCalls + MAX_CALLS_PAST_BUDGET} tool calls, ${MAX_CALLS_PAST_BUDGET} past its budget (maxToolCalls ${maxToolCalls}). ${LIMIT_HINTS.calls}`,
        },
      };
    case "timeout":
      return {
        status: "timeout",
        error: { phase: "limit", name: "TimeoutError", message: `the chain ran past totalTimeoutMs (${limits.totalTimeoutMs} ms). ${LIMIT_HINTS.timeout}` },
      };
    case "cpu":
      return {
        status: "timeout",
        error: { phase: "limit", name: "CpuLimitError", message: `the script used more than cpuTimeMs (${limits.cpuTimeMs} ms) of CPU. ${LIMIT_HINTS.cpu}` },
      };
    case "memory":
      return {
        status: "error",
        error: { phase: "limit", name: "MemoryLimitError", message: `the script exceeded memoryLimitMb (${limits.memoryLimitMb} MiB). ${LIMIT_HINTS.memory}` },
      };
    case "cancelled":
      return { status: "cancelled" };
    case "crash":
      return { status: "error", error: { phase: "limit", name: "SandboxError", message: "the isolate was disposed during the run" } };
  }
}

/**
 * The abort listener a run puts on `request.signal`. A listener can outlive its removal (an
 * AbortSignal holds on to it until a full GC), so it points at the run only while the run lasts:
 * otherwise every finished run, and the chain it served, would survive young-generation GCs.
 */
export class AbortHook {
  run: { kill(reason: KillReason): void } | undefined;

  constructor(run: { kill(reason: KillReason): void }) {
    this.run = run;
  }

  handleEvent(): void {
    this.run?.kill("cancelled");
  }

  /**
   * Listens for `signal` on behalf of `run`. A signal that fired while the run was being set up
   * (its context made, its script compiled) fires no event any more: it cancels the run at once.
   */
  static attach(signal: AbortSignal, run: { kill(reason: KillReason): void }): AbortHook {
    const hook = new AbortHook(run);
    signal.addEventListener("abort", hook, { once: true });
    if (signal.aborted) hook.handleEvent();
    return hook;
  }
}

/** Where a runner's frame callback delivers: the run in progress, if any, and nothing of the runner. */
export interface FrameSink<Run> {
  active: Run | undefined;
}
