/**
 * The prelude: the only isochain code that runs inside the script's isolate. It is bundled into
 * one IIFE (see `sandbox/prelude-bundle.ts`) and run once in every fresh context, before any
 * script code. It installs the script's world on `globalThis`:
 *
 * - `tools`: frozen, one async function per tool name; each call resolves to an
 *   `InvocationResult` and never rejects.
 * - `console`: log/info/warn/error/debug (and trace, dir, table, assert, group, count, time and
 *   their kin, each a line), formatted here and forwarded as it is written, bounded
 *   by `maxOutputBytes` with one truncation marker.
 * - `budget`: `{ total, remaining }`, read-only; `remaining` counts calls sent.
 * - `artifact(ref)`: `{ $artifact: ref }`, the argument form that passes an artifact to a tool;
 *   a `ref` that is not a non-empty string throws a `TypeError` at the script's line.
 * - a seeded `Math.random` and a virtual `Date` (see `virtual-clock.ts`) whose readings are
 *   recorded and sent to the host, and read back from a replay's configuration.
 *
 * Invariants:
 * - Only strings and numbers leave the isolate: arguments and the return value are checked for
 *   plain data and serialised here with the intrinsics captured at load time, so a script that
 *   patches `JSON`, `Object`, `Map.prototype`, `Array.prototype.push` or
 *   `Promise.prototype.then` cannot change what the host receives or lose its results.
 * - Every array the prelude fills while the script runs (the call queue, the clock readings, the
 *   plain-data walk) has a `null` prototype (see `null-prototype.ts`): a setter, getter or
 *   read-only index on `Array.prototype` or `Object.prototype`, or a Proxy as their prototype,
 *   never sees or stops a write, so a script that hooks them keeps its calls.
 * - The host's `send` callback, the tool names it staged for this context (whose `tools` object
 *   is built as the prelude loads) and the `start` entry point are removed from `globalThis`
 *   before script code runs, and the bridge function (the host's way in: configure, resolve, probe) is
 *   the completion value of this script, never a global: the script can reach none of them.
 * - `callIndex` is assigned in program order to every call, refused ones included: a call whose
 *   arguments are refused here still crosses (with `refusal` set and `argsJson` `"{}"`), takes a
 *   unit of budget, and resolves with the host's answer.
 * - Calls made in one microtask turn leave in one frame; queued calls always leave before a
 *   later console line or the done frame, so the host sees everything in program order. Clock
 *   readings taken before a batch of calls (or the end) leave just ahead of it, in a
 *   `clock-readings` frame, so a recorder logs them before those calls run.
 * @module
 */
import {
  BRIDGE_GLOBALS,
  BRIDGE_OP,
  FRAME_KIND,
  LOCAL_FRAME_KIND,
  MAX_ARGUMENT_NODES,
  OUTPUT_TRUNCATED_MARKER,
  type LogLevel,
  type PreludeRunConfig,
} from "../src/bridge/protocol.ts";
import { formatLogArguments, formatValue, UNPRINTABLE } from "./format-value.ts";
import { withNullPrototype } from "./null-prototype.ts";
import { findNonPlainData, utf8Length } from "./plain-data.ts";
import { createSeededRandom } from "./seeded-random.ts";
import { installVirtualClock } from "./virtual-clock.ts";

type Send = (kind: string, ...fields: (string | number | undefined | (string | number | undefined)[])[]) => void;
type Resolver = (result: unknown) => void;

const global = globalThis as unknown as Record<string, unknown>;
const jsonStringify = JSON.stringify;
const jsonParse = JSON.parse;
const defineProperty = Object.defineProperty;
const freeze = Object.freeze;
const PromiseIntrinsic = Promise;
const StringIntrinsic = String;
const TypeErrorIntrinsic = TypeError;
const reflectApply = Reflect.apply;
const stringSplit = StringIntrinsic.prototype.split;
const stringSlice = StringIntrinsic.prototype.slice;
const stringIndexOf = StringIntrinsic.prototype.indexOf;
const stringCharCodeAt = StringIntrinsic.prototype.charCodeAt;
const NumberIntrinsic = Number;
const isArray = Array.isArray;
const promiseThen = PromiseIntrinsic.prototype.then;
const mapGet = Map.prototype.get;
const mapSet = Map.prototype.set;
const mapDelete = Map.prototype.delete;
const mapForEach = Map.prototype.forEach;
const mapClear = Map.prototype.clear;
const settledPromise = PromiseIntrinsic.resolve();

const send = global[BRIDGE_GLOBALS.send] as Send;
delete global[BRIDGE_GLOBALS.send];
const stagedToolNames = global[BRIDGE_GLOBALS.tools];
delete global[BRIDGE_GLOBALS.tools];

// Host-like or non-deterministic built-ins a script has no business with: shared memory (and
// `Atomics.wait`, which would block the isolate thread), WebAssembly (which can also create
// shared memory) and GC-driven callbacks (the only source of work the host does not drive).
for (const name of ["SharedArrayBuffer", "Atomics", "WebAssembly", "FinalizationRegistry", "WeakRef"]) {
  delete global[name];
}

// Resizable ArrayBuffers reserve `maxByteLength` up front and commit pages on `resize()` outside
// the isolate's memory accounting, so a script could take host memory past `memoryLimitMb`.
// Refuse them: `new ArrayBuffer(n)` (counted against the limit) keeps working, and the
// prototype's `constructor` points at the guard too, so there is no way round it.
const ArrayBufferIntrinsic = ArrayBuffer;
// The options are read here once and never handed on: V8 reads `maxByteLength` from any object,
// functions included, and would read it again (a getter can answer undefined, then 2 ** 30).
const reflectConstruct = Reflect.construct;
const guardedArrayBuffer: ArrayBufferConstructor = new Proxy(ArrayBufferIntrinsic, {
  construct(target, argumentsList, newTarget): object {
    const options = argumentsList[1] as { maxByteLength?: unknown } | undefined;
    if ((typeof options === "object" && options !== null) || typeof options === "function") {
      if (options.maxByteLength !== undefined) {
        throw new RangeError("resizable ArrayBuffers are not available in isochain scripts; allocate a fixed-length ArrayBuffer");
      }
    }
    return reflectConstruct(target, [argumentsList[0]], newTarget === guardedArrayBuffer ? target : newTarget) as object;
  },
});
defineProperty(global, "ArrayBuffer", { value: guardedArrayBuffer, writable: true, configurable: true, enumerable: false });
defineProperty(ArrayBufferIntrinsic.prototype, "constructor", { value: guardedArrayBuffer, writable: true, configurable: true, enumerable: false });

let config: PreludeRunConfig | undefined;
let started = false;
let finished = false;
let nextCallIndex = 0;
let framesSent = 0;
let resultsReceived = 0;
let outputBytes = 0;
let outputTruncated = false;
const pending = new Map<number, Resolver>();
/**
 * Calls of the current microtask turn not sent yet: 4 slots each (callIndex, tool, argsJson,
 * refusal), written by index rather than with `push`, which a script can replace, into an array
 * with no prototype, where no setter the script put on `Array.prototype` sees the writes.
 */
const queuedCalls: (string | number | undefined)[] = withNullPrototype([]);

function emit(kind: string, a?: string | number, b?: string | number, c?: string | number, d?: string | number): void {
  framesSent++;
  send(kind, a, b, c, d);
}

/** Sends the queued calls: one `tool-call` frame for one call, one `tool-calls` frame for more. */
function flushCalls(): void {
  const batch = queuedCalls;
  if (batch.length === 0) return;
  flushClock();
  framesSent++;
  // `send` copies its arguments as it is called (no script code runs in between), so the queue
  // is emptied and kept, not replaced: a new null-prototype array costs a fresh context a map.
  try {
    if (batch.length === 4) send(FRAME_KIND.call, batch[0], batch[1], batch[2], batch[3]);
    else send(LOCAL_FRAME_KIND.calls, batch);
  } finally {
    batch.length = 0;
  }
}

/**
 * Sends the clock readings taken since the last send (see `virtual-clock.ts`), ahead of the calls
 * or the end that follow them: the host logs them before it runs those calls, so a resume reads
 * back every time the script read before a call it makes again.
 */
function flushClock(): void {
  if (clock.sendReadings(sendClockFrame)) framesSent++;
}

function sendClockFrame(readings: readonly number[]): void {
  send(FRAME_KIND.clock, readings as number[]);
}

function callTool(tool: string, args: unknown): Promise<unknown> {
  if (config === undefined || finished) {
    return PromiseIntrinsic.resolve(
      freeze({ status: "error", code: "CANCELLED", text: `tools.${tool}: the chain has already ended.` }),
    );
  }
  let argsJson = "{}";
  const refusal = checkArguments(tool, args, config.maxArgumentBytes);
  if (refusal === undefined) argsJson = serialisedArguments;
  const callIndex = nextCallIndex++;
  return new PromiseIntrinsic((resolve) => {
    reflectApply(mapSet, pending, [callIndex, resolve]);
    const at = queuedCalls.length;
    if (at === 0) reflectApply(promiseThen, settledPromise, [flushCalls]);
    queuedCalls[at] = callIndex;
    queuedCalls[at + 1] = tool;
    queuedCalls[at + 2] = argsJson;
    queuedCalls[at + 3] = refusal;
  });
}

/** The JSON text of the arguments {@link checkArguments} last accepted. */
let serialisedArguments = "{}";

/** Why the arguments of a call are refused, or `undefined` (then {@link serialisedArguments} holds them). */
function checkArguments(tool: string, args: unknown, limit: number): string | undefined {
  const value = args === undefined ? {} : args;
  if (typeof value !== "object" || value === null || isArray(value)) {
    return `tools.${tool}: arguments must be one object, e.g. tools.${tool}({ ... }).`;
  }
  const problem = findNonPlainData(value, MAX_ARGUMENT_NODES);
  if (problem !== undefined) return `tools.${tool}: arguments must be plain JSON data; found ${problem}.`;
  let argsJson: string;
  try {
    argsJson = jsonStringify(value);
  } catch (error) {
    return `tools.${tool}: arguments could not be serialised: ${describe(error)}.`;
  }
  // A toJSON the script put on a prototype can turn the object into anything, or nothing.
  if (typeof argsJson !== "string" || argsJson[0] !== "{") {
    return `tools.${tool}: arguments must be one object of plain JSON data; a toJSON method on a prototype turned them into ${argsJson === undefined ? "undefined" : "something else"}.`;
  }
  if (argsJson.length > limit / 3 && utf8Length(argsJson) > limit) {
    return (
      `tools.${tool}: arguments are ${utf8Length(argsJson)} bytes of JSON, over the ${limit}-byte limit; ` +
      "pass large data as an artifact instead."
    );
  }
  serialisedArguments = argsJson;
  return undefined;
}

const MALFORMED_RESULT = freeze({ status: "error", code: "BRIDGE_ERROR", text: "the host sent a result that is not JSON." });

function resolveCall(callIndex: number, result: unknown): void {
  resultsReceived++;
  const resolve = reflectApply(mapGet, pending, [callIndex]) as Resolver | undefined;
  if (resolve === undefined) return;
  reflectApply(mapDelete, pending, [callIndex]);
  resolve(result);
}

/**
 * `resolve` of the bridge: one result (`a` a number, `b` its JSON, `c` its text when sent apart)
 * or a batch (`a` "i,j:len,k", `b` a JSON array, `c` the texts sent apart, concatenated; see
 * `BRIDGE_OP`). The string methods used are the ones captured at load: a script that patches
 * `String.prototype` cannot break its own results.
 */
function resolveResults(a: unknown, b: unknown, c: unknown): void {
  const texts = typeof c === "string" ? c : undefined;
  if (typeof a === "number") {
    resolveCall(a, withText(parseResult(b), texts));
    return;
  }
  const entries = reflectApply(stringSplit, StringIntrinsic(a), [","]) as string[];
  let results: unknown;
  try {
    results = jsonParse(b as string);
  } catch {
    results = undefined;
  }
  let offset = 0;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as string;
    const result = isArray(results) ? results[i] : MALFORMED_RESULT;
    const colon = texts === undefined ? -1 : (reflectApply(stringIndexOf, entry, [":"]) as number);
    if (colon < 0) {
      resolveCall(NumberIntrinsic(entry), result);
      continue;
    }
    const end = offset + NumberIntrinsic(reflectApply(stringSlice, entry, [colon + 1]));
    const text = reflectApply(stringSlice, texts, [offset, end]) as string;
    offset = end;
    resolveCall(NumberIntrinsic(reflectApply(stringSlice, entry, [0, colon])), withText(result, text));
  }
}

function parseResult(json: unknown): unknown {
  try {
    return jsonParse(json as string);
  } catch {
    return MALFORMED_RESULT;
  }
}

/** Puts a `text` sent apart back into its result (whose JSON held `"text":""`, so the key keeps its place). */
function withText(result: unknown, text: string | undefined): unknown {
  if (text === undefined || typeof result !== "object" || result === null || result === MALFORMED_RESULT) return result;
  defineProperty(result, "text", { value: text, writable: true, enumerable: true, configurable: true });
  return result;
}

function writeLog(level: LogLevel, args: unknown[]): void {
  if (finished || outputTruncated) return;
  let text: string;
  try {
    text = formatLogArguments(args);
  } catch {
    text = UNPRINTABLE;
  }
  flushCalls();
  const limit = config?.maxOutputBytes ?? 0;
  const bytes = utf8Length(text) + 1;
  if (outputBytes + bytes <= limit) {
    outputBytes += bytes;
    emit(FRAME_KIND.log, level, text);
    return;
  }
  outputTruncated = true;
  const room = limit - outputBytes - 1;
  if (room > 0) {
    const head = utf8Head(text, room);
    if (head.length > 0) emit(FRAME_KIND.log, level, head);
  }
  outputBytes = limit;
  emit(FRAME_KIND.log, level, OUTPUT_TRUNCATED_MARKER);
}

/** The longest prefix of `text` within `maxBytes` bytes of UTF-8, never half a surrogate pair. */
function utf8Head(text: string, maxBytes: number): string {
  let low = 0;
  let high = text.length < maxBytes ? text.length : maxBytes;
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if (utf8Length(reflectApply(stringSlice, text, [0, mid]) as string) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  const last = low > 0 ? (reflectApply(stringCharCodeAt, text, [low - 1]) as number) : 0;
  if (last >= 0xd800 && last <= 0xdbff) low -= 1;
  return reflectApply(stringSlice, text, [0, low]) as string;
}

function describe(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    if (typeof error === "bigint") return `${StringIntrinsic(error)}n`;
    return StringIntrinsic(error);
  } catch {
    return "an unprintable value";
  }
}

/**
 * The message of a thrown object: its own, with what its `cause` and an AggregateError's `errors`
 * say (they are the reason more often than not); an object with no message shows its content
 * (`throw { code: "E_QUOTA" }`), not `[object Object]`.
 */
function withCauses(error: object, message: string | undefined): string {
  if (message === undefined) {
    const shown = formatValue(error);
    return shown === UNPRINTABLE ? describe(error) : `Uncaught ${shown}`;
  }
  let out = message;
  try {
    const { cause, errors } = error as { cause?: unknown; errors?: unknown };
    if (isArray(errors) && errors.length > 0) {
      let listed = describeReason(errors[0]);
      for (let i = 1; i < errors.length && i < 5; i++) listed += `; ${describeReason(errors[i])}`;
      out += ` (errors: ${listed}${errors.length > 5 ? `; ${errors.length - 5} more` : ""})`;
    }
    if (cause !== undefined) out += ` (cause: ${describeReason(cause)})`;
  } catch {
    // A throwing getter: the message alone.
  }
  return out;
}

/**
 * An Error as `name: message` (its stack's frames would read as the script's), anything else by
 * its content; on one line (quoted if need be), so the message heading the stack keeps the line
 * count the host reads the stack's frames by.
 */
function describeReason(reason: unknown): string {
  const text = reason instanceof Error ? describe(reason) : formatValue(reason);
  return reflectApply(stringIndexOf, text, ["\n"]) < 0 ? text : jsonStringify(text);
}

function readField(error: unknown, field: "name" | "message" | "stack"): string | undefined {
  try {
    const value = (error as Record<string, unknown>)[field];
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The message of a thrown object as text: its string, or what a `message` of another kind shows
 * (`err.message = 404`); `undefined` when it has none. A getter that throws says so. Never the
 * error's stack: a message of several lines there would hide the frames that give the position.
 */
function readMessage(error: object): string | undefined {
  let value: unknown;
  try {
    value = (error as { message?: unknown }).message;
  } catch {
    // An Error's getter: said, or its stack would stand in for the message. Anything else (a
    // Proxy whose every trap throws) is shown as the value it is.
    return isError(error) ? "(the error's message could not be read: its getter threw)" : undefined;
  }
  if (typeof value === "string" || value === undefined) return value;
  const shown = formatValue(value);
  return shown === UNPRINTABLE ? describe(value) : shown;
}

function isError(value: object): boolean {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

/** Ends the run: flushes queued calls and cancels pending ones. False when it had already ended. */
function end(): boolean {
  if (finished) return false;
  flushCalls();
  flushClock();
  finished = true;
  reflectApply(mapForEach, pending, [cancelPending]);
  reflectApply(mapClear, pending, []);
  return true;
}

function cancelPending(resolve: Resolver): void {
  resolve(freeze({ status: "error", code: "CANCELLED", text: "the chain ended before this call finished." }));
}

/** The calls {@link finish} found unanswered; `undefined` for none. */
let unanswered: number[] | undefined;

/**
 * Ends the run with its return value's JSON (`undefined`: nothing returned), and the indexes of
 * the calls the script made and had not been answered: calls it did not await (the host tells
 * the model, see `ChainRunWarning`).
 */
function finish(returnJson: string | undefined): void {
  if (finished) return;
  unanswered = undefined;
  reflectApply(mapForEach, pending, [noteUnanswered]);
  if (!end()) return;
  framesSent++;
  send(FRAME_KIND.done, returnJson, undefined, unanswered);
}

function noteUnanswered(_resolve: Resolver, callIndex: number): void {
  const list = (unanswered ??= withNullPrototype([]));
  list[list.length] = callIndex;
}

/** Ends the run with what the script threw, whatever it is: `throw undefined` is a failure too. */
function fail(error: unknown): void {
  if (!end()) return;
  const isObject = typeof error === "object" && error !== null;
  const name = (isObject ? readField(error, "name") : undefined) ?? "Error";
  const message = isObject ? withCauses(error, readMessage(error)) : `Uncaught ${describe(error)}`;
  const stack = isObject ? readField(error, "stack") : undefined;
  framesSent++;
  send(FRAME_KIND.done, undefined, name, message, stack);
}

function settle(value: unknown): void {
  if (value === undefined) return finish(undefined);
  const problem = findNonPlainData(value);
  if (problem !== undefined) {
    return fail({ name: "TypeError", message: `return value must be JSON-compatible: found ${problem}` });
  }
  let json: string | undefined;
  try {
    json = jsonStringify(value);
  } catch (error) {
    return fail({ name: "TypeError", message: `return value must be JSON-compatible: ${describe(error)}` });
  }
  finish(json);
}

function configure(configJson: unknown): void {
  if (started || config !== undefined) return;
  config = jsonParse(StringIntrinsic(configJson)) as PreludeRunConfig;
}

function start(script: unknown): void {
  delete global[BRIDGE_GLOBALS.start];
  if (started) return;
  started = true;
  if (config === undefined) {
    fail({ name: "SandboxError", message: "the run started before it was configured" });
    return;
  }
  random.reseed(config.seed);
  clock.start(config.clockStart, config.clockReplay, config.clockLiveAt);
  let installed: boolean;
  try {
    installed = installTools(config.toolNames);
  } catch (error) {
    // A name given twice cannot be defined twice on the frozen tools object.
    fail({ name: "SandboxError", message: `the tools could not be installed (${describe(error)}); tool names must be distinct` });
    return;
  }
  if (!installed) {
    fail({ name: "SandboxError", message: "the run was configured with staged tools, but none were staged" });
    return;
  }
  if (typeof script !== "function") {
    fail({ name: "TypeError", message: "the compiled script did not evaluate to a function" });
    return;
  }
  let promise: unknown;
  try {
    promise = (script as () => unknown)();
  } catch (error) {
    fail(error);
    return;
  }
  // The intrinsic `then`, not the script's: a script that patches Promise.prototype.then must
  // not be able to keep its own result from settling.
  reflectApply(promiseThen, PromiseIntrinsic.resolve(promise), [settle, fail]);
}

function probe(): string {
  if (!started) return "not-started";
  return finished ? "done" : `${framesSent},${resultsReceived}`;
}

/** The host's only way in; see `BRIDGE_OP` in the protocol. */
function bridge(op: unknown, a?: unknown, b?: unknown, c?: unknown): unknown {
  switch (op) {
    case BRIDGE_OP.configure:
      configure(a);
      return undefined;
    case BRIDGE_OP.resolve:
      resolveResults(a, b, c);
      return undefined;
    case BRIDGE_OP.probe:
      return probe();
    default:
      return undefined;
  }
}

/** The `tools` object built while the context was prepared (see `BRIDGE_GLOBALS.tools`), until the start takes it. */
let stagedTools: Readonly<Record<string, (args?: unknown) => Promise<unknown>>> | undefined;

/**
 * Builds the `tools` object of the names the host staged, if it staged any. Never throws: a list
 * it cannot build (the host stages only distinct strings) leaves nothing staged, and a run
 * configured for staged tools then fails with a `SandboxError` instead of the context failing
 * to load.
 */
function stageTools(namesJson: unknown): void {
  if (typeof namesJson !== "string") return;
  try {
    const names = jsonParse(namesJson) as unknown;
    if (!isArray(names)) return;
    for (const name of names) if (typeof name !== "string") return;
    stagedTools = buildTools(names as string[]);
  } catch {
    stagedTools = undefined;
  }
}

function buildTools(names: readonly string[]): Readonly<Record<string, (args?: unknown) => Promise<unknown>>> {
  const tools: Record<string, (args?: unknown) => Promise<unknown>> = Object.create(null) as Record<string, never>;
  for (const name of names) {
    const fn = (args?: unknown): Promise<unknown> => callTool(name, args);
    defineProperty(fn, "name", { value: name });
    defineProperty(tools, name, { value: fn, enumerable: true });
  }
  return freeze(tools);
}

/** Installs `tools`: built now for `names`, or the staged object when `names` is absent. False when neither exists. */
function installTools(names: readonly string[] | undefined): boolean {
  const tools = names === undefined ? stagedTools : buildTools(names);
  stagedTools = undefined;
  if (tools === undefined) return false;
  defineProperty(global, "tools", { value: tools, enumerable: false, writable: false, configurable: false });
  return true;
}

function installGlobal(name: string, value: unknown): void {
  defineProperty(global, name, { value, enumerable: false, writable: false, configurable: false });
}

const random = (() => {
  let next = createSeededRandom(0);
  const mathRandom = function random(): number {
    return next();
  };
  defineProperty(Math, "random", { value: mathRandom, writable: true, configurable: true });
  return {
    reseed(seed: number): void {
      next = createSeededRandom(seed);
    },
  };
})();

const clock = installVirtualClock(globalThis);

/** `console.count` counters and `console.time` starts of the run, by label; made on first use. */
let counters: Record<string, number> | undefined;
let timers: Record<string, number> | undefined;

/** A console label as text: `"default"` when none is given. */
function labelOf(label: unknown): string {
  if (label === undefined) return "default";
  try {
    return StringIntrinsic(label);
  } catch {
    return UNPRINTABLE;
  }
}

function logValue(value?: unknown): void {
  writeLog("log", [value]);
}

function logLabel(...args: unknown[]): void {
  if (args.length > 0) writeLog("log", args);
}

/** The elapsed time of timer `label` on the virtual clock, as `console.timeEnd` prints it; a note when it was never started. */
function timerText(label: unknown): [string, boolean] {
  const name = labelOf(label);
  const started = timers?.[name];
  if (started === undefined) return [`Timer "${name}" does not exist`, false];
  return [`${name}: ${clock.now() - started}ms`, true];
}

// The methods a script reaches for beyond log/info/warn/error/debug, each a line of output
// (`table` and `dir` print the value; `group` prints its label, without indenting what follows;
// times are the virtual clock's, so a replay prints the same).
const consoleObject = freeze({
  log: (...args: unknown[]) => writeLog("log", args),
  info: (...args: unknown[]) => writeLog("info", args),
  warn: (...args: unknown[]) => writeLog("warn", args),
  error: (...args: unknown[]) => writeLog("error", args),
  debug: (...args: unknown[]) => writeLog("debug", args),
  trace: (...args: unknown[]) => writeLog("debug", ["Trace:", ...args]),
  dir: logValue,
  table: logValue,
  assert: (condition?: unknown, ...args: unknown[]) => {
    if (!condition) writeLog("error", args.length === 0 ? ["Assertion failed"] : ["Assertion failed:", ...args]);
  },
  group: logLabel,
  groupCollapsed: logLabel,
  groupEnd: () => undefined,
  count: (label?: unknown) => {
    const name = labelOf(label);
    const table = (counters ??= withNullPrototype<Record<string, number>>({}));
    table[name] = (table[name] ?? 0) + 1;
    writeLog("log", [`${name}: ${table[name]}`]);
  },
  countReset: (label?: unknown) => {
    if (counters !== undefined) delete counters[labelOf(label)];
  },
  time: (label?: unknown) => {
    (timers ??= withNullPrototype<Record<string, number>>({}))[labelOf(label)] = clock.now();
  },
  timeLog: (label?: unknown, ...args: unknown[]) => {
    const [text, found] = timerText(label);
    writeLog(found ? "log" : "warn", [text, ...args]);
  },
  timeEnd: (label?: unknown) => {
    const [text, found] = timerText(label);
    writeLog(found ? "log" : "warn", [text]);
    if (found && timers !== undefined) delete timers[labelOf(label)];
  },
});
defineProperty(global, "console", { value: consoleObject, enumerable: false, writable: true, configurable: true });

installGlobal(
  "budget",
  freeze(
    Object.defineProperties(
      {},
      {
        total: { get: () => config?.maxToolCalls ?? 0, enumerable: true },
        remaining: { get: () => Math.max(0, (config?.maxToolCalls ?? 0) - nextCallIndex), enumerable: true },
      },
    ),
  ),
);
installGlobal(
  "artifact",
  function artifact(ref: string): { $artifact: string } {
    if (typeof ref !== "string" || ref === "") {
      throw new TypeErrorIntrinsic(`artifact(ref) takes an artifact ref string (a tool result's artifactRef); got ${kindOf(ref)}`);
    }
    return { $artifact: ref };
  },
);

/** What a value is, for a message: "null", "undefined", "an empty string", "an object", "a number", ... */
function kindOf(value: unknown): string {
  if (value === "") return "an empty string";
  const type = value === null ? "null" : typeof value;
  return type === "object" ? "an object" : type === "null" || type === "undefined" ? type : `a ${type}`;
}

/**
 * Does once, with nothing a script could observe, the two things every run does first that a
 * fresh V8 context pays most for the first time (lazily made maps and builtins, feedback):
 * parsing a configuration and checking and serialising a call's arguments. The prelude runs while
 * the context is prepared, off the critical path, so that cost leaves the run; measured on one
 * isolate (interleaved, 1 500 contexts each): ~30 µs moved from the run into the preparation.
 * Warming more (console formatting, promises, the tools object) cost the preparation more than
 * it saved the run, so it is not done.
 */
function warmUp(): void {
  jsonParse(jsonStringify({ toolNames: ["a"], maxToolCalls: 1, seed: 1, clockStart: 0, maxOutputBytes: 1, maxArgumentBytes: 1 }));
  checkArguments("warm", { n: 1, s: "x", list: [1, "y", { flag: true, none: null }] }, Number.MAX_SAFE_INTEGER);
  serialisedArguments = "{}";
  // The pending-call map's captured methods, as a call and its result use them.
  reflectApply(mapSet, pending, [-1, warmUp]);
  reflectApply(mapGet, pending, [-1]);
  reflectApply(mapDelete, pending, [-1]);
}

warmUp();
stageTools(stagedToolNames);

defineProperty(global, BRIDGE_GLOBALS.start, { value: start, configurable: true });
// Taken off the global by the bundle's last statement (see sandbox/prelude-bundle.ts).
defineProperty(global, BRIDGE_GLOBALS.bridge, { value: bridge, configurable: true });
