/**
 * Compiles the model's script (the body of an async function, TypeScript or JavaScript) into
 * the code a sandbox driver evaluates; see `compiled-script-contract.ts` for what that code is.
 *
 * ```
 * source ──cache hit (Map lookup by source text)──────────────────────────────► result
 *   │ miss
 *   ├─ scanScript(source): module syntax, import(), require(), stray brackets, decorators
 *   ├─ wrap: "(async function __chain__() {\n" + source + "\n})"
 *   ├─ fast path: Node's stripTypeScriptTypes (mode "strip"): types become blanks, every
 *   │  position is kept, so the map is a line offset. Its parser skips scope checks
 *   │  (`const a` twice passes), so V8 compiles the result once (node:vm Script, never
 *   │  run) for the early errors the isolate would raise. Taken only when both accept it
 *   │  and the scan saw nothing that needs esbuild; anything else falls through.
 *   ├─ esbuild transform (ts loader, target node24, external source map, never an input
 *   │  one the script names): the authority. `compileScript` calls its synchronous API; the
 *   │  chain runtime (`compileScriptAsync`) its asynchronous one, never blocking the host. Its errors become the compile ChainError,
 *   │  positioned in the original text. Helpers it emits (decorators) move inside an arrow
 *   │  function, so the code stays one expression.
 *   ├─ the code ends with COMPILED_SCRIPT_TRAILER, so no `//# sourceURL=` of the script
 *   │  renames it in V8's stack frames.
 *   └─ checks confirmed against the compiled code: import()/require() → CompileError;
 *      a `}` that closed the wrapper early → SyntaxError (confirmed by a second wrap, and by
 *      V8, which compiles the body alone as one async function body: a body that closes its
 *      wrapper passes the first when the scanner took a division for a regular expression);
 *      on the esbuild path, what V8 itself refuses (a malformed regular expression) →
 *      SyntaxError, mapped through the source map.
 * ```
 *
 * V8's check (the compile above, and the fast path's fall-through to esbuild) is the
 * last step, `confirm()` of a {@link DeferredCompile}: `compileScript` confirms at once; the
 * chain runtime compiles with {@link compileScriptDeferred} and confirms while the sandbox
 * compiles the same code, except where the scanner had to guess (a `/` right after a `}`),
 * which is confirmed before anything runs. The final result is the same either way, and only
 * it is cached.
 *
 * Invariants: never throws for anything in the script (only `COMPILE_FAILED` when esbuild
 * itself cannot run); every error position is 1-based in the original text (UTF-16
 * columns, CRLF counted as one line break); both paths give the same semantics, since the
 * strip path only blanks erasable TypeScript and esbuild at target node24 lowers nothing V8
 * of Node 24 runs natively (async/await, `using` included). Results, failures included, are
 * cached by source text (bounded, second-chance eviction), and a hit returns the very same object.
 * @module
 */
import * as module from "node:module";
import { createContext, runInContext, Script } from "node:vm";
import { transformSync } from "esbuild";
import type * as Esbuild from "esbuild";
import type { Message, TransformOptions, TransformResult } from "esbuild";
import { ChainRuntimeError, describeThrown, sha256Hex } from "../kernel/index.ts";
import type { ChainError } from "../kernel/index.ts";
import { callEsbuild, EsbuildAnswerTooLargeError, EsbuildTimeoutError, esbuildMessages, MAX_ESBUILD_ANSWER_BYTES } from "../kernel/esbuild-service.ts";
import { codeFrame } from "./code-frame.ts";
import { CompileCache } from "./compile-cache.ts";
import {
  COMPILED_SCRIPT_LINE_OFFSET,
  COMPILED_SCRIPT_PREFIX,
  COMPILED_SCRIPT_SUFFIX,
  COMPILED_SCRIPT_TRAILER,
  DEFAULT_SOURCE_NAME,
  wrapScriptBody,
} from "./compiled-script-contract.ts";
import { decodeSourceMapMappings } from "./decode-source-map-mappings.ts";
import { lineStartOffsets, positionAtOffset, utf8ColumnToUtf16 } from "./line-index.ts";
import type { SourcePosition } from "./line-index.ts";
import { scanScript } from "./scan-script.ts";
import type { ScriptScan } from "./scan-script.ts";
import { createSourcePositionMapper } from "./source-position-mapper.ts";
import type { SourcePositionMapper } from "./source-position-mapper.ts";

/** The message of every refused `import`, `export`, `import()` or `require()`. */
export const MODULE_SYNTAX_MESSAGE =
  "isochain scripts cannot import modules; every tool is on `tools.*` (e.g. `await tools.search({...})`)";

/** Which compiler produced the code: Node's type stripper (fast path) or esbuild. */
export type CompileEngine = "strip" | "esbuild";

/** A compile error: always `phase: "compile"`, positioned in the original script when known. */
export interface CompileError extends ChainError {
  readonly phase: "compile";
  /** `"SyntaxError"` for what does not parse, `"CompileError"` for what isochain refuses (imports). */
  readonly name: "SyntaxError" | "CompileError";
}

/** A script that compiled. */
export interface CompileSuccess {
  /** The script compiled. */
  readonly ok: true;
  /** The code for the sandbox; see `compiled-script-contract.ts`. */
  readonly code: string;
  /** sha256 (hex) of the source text. */
  readonly hash: string;
  /** Maps runtime positions in `code` back to the source. */
  readonly map: SourcePositionMapper;
  /** Which compiler produced `code` (see {@link CompileEngine}). */
  readonly engine: CompileEngine;
}

/** A script that did not compile. */
export interface CompileFailure {
  /** The script did not compile: see `error`. */
  readonly ok: false;
  /** The first error, at its line and column in the source, with a code frame. */
  readonly error: CompileError;
  /** sha256 (hex) of the source text. */
  readonly hash: string;
}

/** The outcome of {@link compileScript}; a failure is a value, never thrown. */
export type CompileResult = CompileSuccess | CompileFailure;

/** Options of {@link compileScript}. */
export interface CompileOptions {
  /**
   * Name of the original script in mapped stacks (`chain.ts:3:7`) and in esbuild's map.
   * @defaultValue `"chain.ts"`
   */
  readonly filename?: string;
  /**
   * Cache to use, or `false` for none.
   * @defaultValue {@link defaultCompileCache}
   */
  readonly cache?: CompileCache<CachedCompile> | false;
  /**
   * `"auto"` takes the type-stripping fast path when it applies; `"esbuild"` always uses esbuild.
   * @defaultValue `"auto"`
   */
  readonly engine?: "auto" | "esbuild";
}

/** What the compile cache holds per source. */
export interface CachedCompile {
  readonly result: CompileResult;
  readonly filename: string;
  readonly engine: "auto" | "esbuild";
}

/** The process-wide cache used when no `cache` option is given (256 entries, 16 MiB). */
export const defaultCompileCache = new CompileCache<CachedCompile>();

/**
 * Compiles a model-written script; see the module comment for the pipeline. Synchronous, through
 * esbuild's synchronous API, which cannot be stopped: {@link ESBUILD_TIME_LIMIT_MS} and
 * `MAX_ESBUILD_ANSWER_BYTES` bound a chain's compile (asynchronous), not this one, so a script
 * made to keep esbuild busy holds the calling thread (see the README's security section).
 * @param source - the body of an async function, TypeScript or JavaScript.
 * @returns a {@link CompileResult}; syntax errors and refused imports are failures, not throws.
 * @throws ChainRuntimeError `COMPILE_FAILED` only when esbuild itself cannot run.
 */
export function compileScript(source: string, options: CompileOptions = {}): CompileResult {
  return confirmed(compileScriptDeferred(source, options));
}

/** The final result of a compile: a deferred one confirmed now. */
function confirmed(compiling: CompileResult | DeferredCompile): CompileResult {
  return isDeferredCompile(compiling) ? compiling.confirm() : compiling;
}

/**
 * @internal A compile whose last step, V8's own check of the compiled code for early errors
 * (`const a` twice, a malformed regular expression), is left to {@link DeferredCompile.confirm}.
 * The chain runtime starts the sandbox on `result` at once and runs the check while the sandbox
 * compiles the same code, so a new script does not pay for V8 parsing it twice in a row (a 2 KB
 * script: 225-255 µs of a 612-643 µs compile here). Code V8 refuses cannot start in the sandbox
 * either, so nothing of it has run when the check says so.
 */
export interface DeferredCompile<Final extends CompileResult | Promise<CompileResult> = CompileResult> {
  /** The compiled code, not yet checked by V8. */
  readonly result: CompileSuccess;
  /**
   * Runs V8's check and returns the final result, as {@link compileScript} would have: `result`
   * itself when V8 accepts it; esbuild's code when V8 refused the type stripper's output; a
   * failure when the script has an early error. Caches the final result. Throws (or, from
   * {@link compileScriptAsync}, rejects with) `COMPILE_FAILED` only when esbuild itself cannot run.
   */
  confirm(): Final;
}

/** @internal What {@link compileScriptAsync} hands out: its confirm may have to wait for esbuild. */
export type AsyncDeferredCompile = DeferredCompile<CompileResult | Promise<CompileResult>>;

/**
 * @internal {@link compileScript} with V8's check deferred on a cache miss (see
 * {@link DeferredCompile}). A hit, a failure found before the check and a non-string never defer.
 */
export function compileScriptDeferred(source: string, options: CompileOptions = {}): CompileResult | DeferredCompile {
  // Never a promise: the blocking runner answers every esbuild job before it returns.
  return compileWith(source, options, runBlocking) as CompileResult | DeferredCompile;
}

/**
 * @internal {@link compileScriptDeferred} for the chain runtime: esbuild is called through its
 * asynchronous API, so no compile ever blocks the host's thread. esbuild's synchronous API waits
 * (`Atomics.wait`, no timeout) for a worker thread of its own, and a worker that could not start
 * (the process out of file descriptors when the first compile needed it, say) left the whole host
 * waiting forever. What needs no esbuild (a cache hit, the type stripper's path) is answered
 * without a turn of the event loop, as before; the rest is a promise, as is a `confirm` that
 * falls back to esbuild.
 */
export function compileScriptAsync(
  source: string,
  options: CompileOptions = {},
): CompileResult | AsyncDeferredCompile | Promise<CompileResult | AsyncDeferredCompile> {
  return compileWith(source, options, runWithoutBlocking);
}

/** True for a {@link DeferredCompile}. */
export function isDeferredCompile<T extends object, D extends DeferredCompile<CompileResult | Promise<CompileResult>>>(value: T | D): value is D {
  return "confirm" in value;
}

/** The compile of `source`, its esbuild jobs answered by `run`; see {@link compileScriptDeferred}. */
function compileWith(source: string, options: CompileOptions, run: StepRunner): CompileResult | AsyncDeferredCompile | Promise<CompileResult | AsyncDeferredCompile> {
  const filename = options.filename ?? DEFAULT_SOURCE_NAME;
  const engine = options.engine ?? "auto";
  const cache = options.cache === false ? undefined : (options.cache ?? defaultCompileCache);
  const hit = cache?.get(source);
  if (hit !== undefined && hit.filename === filename && hit.engine === engine) return hit.result;

  const cached = (result: CompileResult): CompileResult => {
    // Not a stop of esbuild (see STOPPED_MESSAGES).
    if (result.ok || !STOPPED_MESSAGES.has(result.error.message)) cache?.set(source, { result, filename, engine }, result.ok ? result.code.length : 0);
    return result;
  };
  return afterward(run(compileSteps(source, filename, engine)), (compiled): CompileResult | AsyncDeferredCompile => {
    if (!isPendingCheck(compiled)) return cached(compiled);
    return { result: compiled.result, confirm: () => afterward(run(compiled.check()), cached) };
  });
}

/** `then(value)` now when `value` is not a promise, else once it resolves. */
function afterward<T, U>(value: T | Promise<T>, then: (value: T) => U): U | Promise<U> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** One esbuild transform a compile needs: the text given to esbuild and the name in its map. */
interface EsbuildJob {
  readonly input: string;
  readonly filename: string;
}

/**
 * The steps of a compile, written once for both ways of running esbuild: each esbuild transform
 * it needs is yielded as a job, and the runner hands back its output.
 */
type CompileSteps<T> = Generator<EsbuildJob, T, EsbuildOutput>;

/** Runs {@link CompileSteps} to their end, answering every esbuild job on the way. */
type StepRunner = <T>(steps: CompileSteps<T>) => T | Promise<T>;

/** esbuild's output for `input`, from whichever runner drives the steps. */
function* esbuild(input: string, filename: string): CompileSteps<EsbuildOutput> {
  return yield { input, filename };
}

/** Answers each job with esbuild's synchronous API, on this thread. */
function runBlocking<T>(steps: CompileSteps<T>): T {
  let step = steps.next();
  while (step.done !== true) step = steps.next(runEsbuild(step.value));
  return step.value;
}

/** Ends at once when no job comes; from the first job on, answers each with esbuild's asynchronous API. */
function runWithoutBlocking<T>(steps: CompileSteps<T>): T | Promise<T> {
  const step = steps.next();
  return step.done === true ? step.value : finishAsync(steps, step.value);
}

async function finishAsync<T>(steps: CompileSteps<T>, first: EsbuildJob): Promise<T> {
  let job = first;
  for (;;) {
    const step = steps.next(await runEsbuildAsync(job));
    if (step.done === true) return step.value;
    job = step.value;
  }
}

/** A compiled script whose V8 check is still to run (see {@link DeferredCompile}). */
interface PendingCheck {
  readonly result: CompileSuccess;
  check(): CompileSteps<CompileResult>;
}

function isPendingCheck(value: CompileResult | PendingCheck): value is PendingCheck {
  return "check" in value;
}

/** A compile's steps and V8's check, one after the other: its final result. */
function* compiledNow(source: string, filename: string, engine: "auto" | "esbuild"): CompileSteps<CompileResult> {
  const compiled = yield* compileSteps(source, filename, engine);
  return isPendingCheck(compiled) ? yield* compiled.check() : compiled;
}

/** Every step of a compile but V8's check (see {@link checkWithV8}), which a success leaves to `check`. */
function* compileSteps(source: string, filename: string, engine: "auto" | "esbuild"): CompileSteps<CompileResult | PendingCheck> {
  const hash = sha256Hex(source);
  const text = new SourceText(source);
  const tooBig = (message: string, offset?: number): CompileFailure => ({ ok: false, hash, error: text.error("CompileError", message, offset) });
  if (source.length > MAX_SCRIPT_CHARS) {
    return tooBig(
      `The script is ${source.length} characters long; scripts are compiled up to ${MAX_SCRIPT_CHARS}. ` +
        "Keep the script to the logic and pass data through tools (a large value as an artifact).",
    );
  }
  const body = hashbangAsComment(source);
  const scan = scanScript(body);
  // Where the scanner had to guess how to read a `/`, a wrong guess hides what follows it (in a
  // string that is not one): the nesting is taken as the deeper of both readings.
  const deepest = scan.ambiguousSlash === undefined ? scan : [scan, scanScript(body, "regex"), scanScript(body, "division")].reduce((a, b) => (b.maxNesting > a.maxNesting ? b : a));
  if (deepest.maxNesting > MAX_SCRIPT_NESTING) {
    return tooBig(
      `The script nests brackets and functions ${deepest.maxNesting} deep (here, at the deepest point; arrow functions ` +
        `inside arrow functions count too), more than the ${MAX_SCRIPT_NESTING} compiled; flatten this expression.`,
      deepest.maxNestingAt,
    );
  }
  const wrapped = wrapScriptBody(body);

  let code: string | undefined;
  let map: SourcePositionMapper;
  let usedEngine: CompileEngine;
  const stripped = engine === "auto" && !scan.needsTranspile && scan.strayCloser === undefined && withinStripperBounds(body)
    ? stripTypes(wrapped)
    : undefined;
  if (stripped !== undefined) {
    code = stripped;
    usedEngine = "strip";
    map = createSourcePositionMapper({ filename, lineCount: text.lineCount, lineOffset: COMPILED_SCRIPT_LINE_OFFSET });
  } else {
    const output = yield* esbuild(wrapped, filename);
    if (!output.ok) return { ok: false, hash, error: "stopped" in output ? stoppedError(output.stopped) : explainEsbuildError(output.message, text, scan) };
    code = asOneExpression(output.code);
    usedEngine = "esbuild";
    map = createSourcePositionMapper({
      filename,
      lineCount: text.lineCount,
      lineOffset: COMPILED_SCRIPT_LINE_OFFSET,
      segments: decodeSourceMapMappings(output.mappings),
      texts: { generated: code, original: wrapped },
    });
  }
  code += COMPILED_SCRIPT_TRAILER;

  const refused = yield* findRefusedSyntax(code, text, scan, filename);
  if (refused !== undefined) {
    // V8's check comes first on the fast path: stripped code V8 refuses goes to esbuild, whose
    // verdict stands (a rare case: no reason to defer it).
    if (usedEngine === "strip" && !isOneFunctionBody(code)) return yield* compiledNow(source, filename, "esbuild");
    return { ok: false, hash, error: refused };
  }
  const result: CompileSuccess = { ok: true, code, hash, map, engine: usedEngine };
  // Where the scanner had to guess (a `/` after a block), the code could close its wrapper early
  // and run part of itself before the script starts: checked before anything runs.
  if (scan.ambiguousSlash !== undefined) return yield* checkWithV8(result, source, filename, text, scan);
  return { result, check: () => checkWithV8(result, source, filename, text, scan) };
}

/**
 * V8's check of compiled code, the last step of a compile: the fast path's output must compile
 * (else esbuild decides, as when the stripper refuses), and esbuild's output is checked for what
 * esbuild does not check itself (a regular expression's syntax, for one), a refusal being a
 * compile error positioned in the original.
 */
function* checkWithV8(result: CompileSuccess, source: string, filename: string, text: SourceText, scan: ScriptScan): CompileSteps<CompileResult> {
  if (result.engine === "strip") {
    return isOneFunctionBody(result.code) ? result : yield* compiledNow(source, filename, "esbuild");
  }
  const refusedByV8 = v8SyntaxError(result.code, text, result.map, scan);
  return refusedByV8 === undefined ? result : { ok: false, hash: result.hash, error: refusedByV8 };
}

/**
 * A leading `#!` line (a script file made executable) as a line comment of the same length, so
 * no position moves: a hashbang is only valid at the very start of a file, and the script runs
 * as a function body.
 */
function hashbangAsComment(source: string): string {
  return source.startsWith("#!") ? `//${source.slice(2)}` : source;
}

/** Checks the scan's hints against the compiled code; returns the error to report, if any. */
function* findRefusedSyntax(code: string, text: SourceText, scan: ScriptScan, filename: string): CompileSteps<CompileError | undefined> {
  if (scan.dynamicImport !== undefined && /(?<![\w$.])import\s*(?:\(|\.\s*meta\b)/u.test(code)) {
    return text.error("CompileError", MODULE_SYNTAX_MESSAGE, scan.dynamicImport);
  }
  if (scan.requireCall !== undefined && !scan.declaresRequire && /(?<![\w$.])require\s*\(/u.test(code)) {
    return text.error("CompileError", MODULE_SYNTAX_MESSAGE, scan.requireCall);
  }
  if (scan.strayCloser !== undefined) {
    // The script compiled, yet a bracket closes nothing: it may have closed the wrapper
    // function early. An extra block around the body turns that into a parse error.
    const doubled = `${COMPILED_SCRIPT_PREFIX.slice(0, -1)}{\n${text.source}\n}${COMPILED_SCRIPT_SUFFIX.slice(1)}`;
    const output = yield* esbuild(doubled, filename);
    if (!output.ok) {
      return "stopped" in output ? stoppedError(output.stopped) : text.error("SyntaxError", strayMessage(text.source, scan.strayCloser), scan.strayCloser);
    }
  }
  return undefined;
}

/** The compile error of a script esbuild was stopped on (see {@link ESBUILD_TIME_LIMIT_MS} and `MAX_ESBUILD_ANSWER_BYTES`). */
function stoppedError(why: EsbuildStop): CompileError {
  return { phase: "compile", name: "CompileError", message: why === "slow" ? TOO_SLOW_MESSAGE : TOO_LARGE_MESSAGE };
}

/** Turns esbuild's first error into a compile error positioned in the original text. */
function explainEsbuildError(message: Message, text: SourceText, scan: ScriptScan): CompileError {
  const location = message.location;
  let offset: number | undefined;
  let inWrapper = location === null;
  if (location !== null) {
    const line = location.line - COMPILED_SCRIPT_LINE_OFFSET;
    if (line < 1 || line > text.lineCount) {
      inWrapper = true;
    } else {
      // esbuild's column counts UTF-8 bytes of the line, a leading U+FEFF too, which its
      // `lineText` leaves out: the column is converted on the line as the script has it.
      offset = text.offsetOf(line, utf8ColumnToUtf16(text.lineText(line), location.column) + 1);
    }
  }
  if (scan.moduleSyntax !== undefined && (offset === undefined || scan.moduleSyntax <= offset)) {
    return text.error("CompileError", MODULE_SYNTAX_MESSAGE, scan.moduleSyntax);
  }
  if (inWrapper) {
    if (scan.strayCloser !== undefined) {
      return text.error("SyntaxError", strayMessage(text.source, scan.strayCloser), scan.strayCloser);
    }
    if (scan.unclosedOpener !== undefined) {
      const opener = text.source[scan.unclosedOpener] ?? "{";
      return text.error("SyntaxError", `"${opener}" is never closed: the script ends first`, scan.unclosedOpener);
    }
    // esbuild names what it met in the hidden wrapper, its closing brace: the script itself
    // stopped short (`return 1 +`), which is said where its text ends.
    const end = text.source.trimEnd().length;
    const said = message.text.includes('"}"') ? "Unexpected end of the script: it stops in the middle of an expression or statement" : `${message.text} at the end of the script`;
    return text.error("SyntaxError", said, end);
  }
  if (scan.strayCloser !== undefined && offset !== undefined && scan.strayCloser < offset &&
    text.source[scan.strayCloser] === "}") {
    return text.error("SyntaxError", strayMessage(text.source, scan.strayCloser), scan.strayCloser);
  }
  return text.error("SyntaxError", esbuildWording(message, text, offset), offset);
}

/** esbuild's text for an error, said for a script (a function body) where it reads oddly. */
function esbuildWording(message: Message, text: SourceText, offset: number | undefined): string {
  const before = offset === undefined ? "" : text.source.slice(Math.max(0, offset - 40), offset);
  // `namespace N {}` / `module M {}`: TypeScript allows them only at a module's top level.
  if (/^Expected ";" but found /u.test(message.text) && /(?:^|[^\w$.])(?:namespace|module)\s+$/u.test(before)) {
    return `${message.text}: TypeScript namespaces cannot be declared in a chain script, which runs as a function body; use an object (const N = { ... })`;
  }
  // Some of esbuild's texts end in ":" before a note it did not attach.
  return message.text.endsWith(":") ? message.text.slice(0, -1) : message.text;
}

function strayMessage(source: string, offset: number): string {
  const char = source[offset] ?? "}";
  const opener = char === ")" ? "(" : char === "]" ? "[" : "{";
  return `Unexpected "${char}": it matches no "${opener}" of the script`;
}

/** The original source with its line index, able to build positioned errors. */
class SourceText {
  readonly source: string;
  readonly lineCount: number;
  readonly #starts: number[];

  constructor(source: string) {
    this.source = source;
    this.#starts = lineStartOffsets(source);
    this.lineCount = this.#starts.length;
  }

  /** The text of 1-based `line`, without its line terminator. */
  lineText(line: number): string {
    const start = this.#starts[line - 1] ?? 0;
    const next = this.#starts[line];
    if (next === undefined) return this.source.slice(start);
    return this.source.slice(start, this.source.startsWith("\r\n", next - 2) ? next - 2 : next - 1);
  }

  offsetOf(line: number, column: number): number {
    return (this.#starts[line - 1] ?? 0) + column - 1;
  }

  position(offset: number): SourcePosition {
    return positionAtOffset(this.#starts, Math.min(Math.max(0, offset), this.source.length));
  }

  error(name: CompileError["name"], message: string, offset: number | undefined): CompileError {
    if (offset === undefined) return { phase: "compile", name, message };
    const { line, column } = this.position(offset);
    return { phase: "compile", name, message, line, column, codeFrame: codeFrame(this.source, line, column) };
  }
}

type EsbuildOutput =
  | { readonly ok: true; readonly code: string; readonly mappings: string }
  | { readonly ok: false; readonly message: Message }
  /** esbuild was stopped on the asynchronous path: past {@link ESBUILD_TIME_LIMIT_MS}, or its answer too large. */
  | { readonly ok: false; readonly stopped: EsbuildStop };

/** Why esbuild was stopped on a script: its time, or the size of its answer. */
type EsbuildStop = "slow" | "large";

/**
 * Longest one esbuild pass of a chain's compile may keep esbuild busy (a compile makes one, up
 * to three for a stray bracket or code V8 refuses). A script of 2 Mi characters compiles in well
 * under 0.5 s on a slow machine; what takes longer is one made to (esbuild's time grows with the
 * square of the errors and warnings it reports: see esbuild-service.ts), and is stopped.
 */
export const ESBUILD_TIME_LIMIT_MS = 3_000;

/** The message of {@link stoppedError} for a stop on time. */
const TOO_SLOW_MESSAGE =
  `The compiler (esbuild) was stopped after ${ESBUILD_TIME_LIMIT_MS / 1000} s on this script: its time grows with the square of ` +
  "the errors it finds (here thousands: redeclarations, duplicate labels or parameters, ...). Fix the repeated mistake.";

/** The message of {@link stoppedError} for a stop on the size of esbuild's answer. */
const TOO_LARGE_MESSAGE =
  `The compiler (esbuild) was stopped on this script: its report was over ${MAX_ESBUILD_ANSWER_BYTES / 2 ** 20} MiB. Each error ` +
  "it finds carries a copy of its whole line, so many errors on a long line make it that large (redeclarations, duplicate labels " +
  "or parameters, ...); so would compiled code that large. Fix the repeated mistake and break the long line, or send a smaller script.";

/**
 * The messages of a stop: not cached, as they say how busy the host was (or what else esbuild
 * was doing at the time) as much as what the script is.
 */
const STOPPED_MESSAGES: ReadonlySet<string> = new Set([TOO_SLOW_MESSAGE, TOO_LARGE_MESSAGE]);

/**
 * esbuild's warnings, all of them off: a compile reads only errors, and each warning costs esbuild
 * time and a copy of its whole line (a long line of duplicate keys: gigabytes). The ids of
 * esbuild's JavaScript, TypeScript and source-map warnings.
 */
const SILENT_WARNINGS: Readonly<Record<string, "silent">> = Object.fromEntries(
  [
    "assert-to-with", "assert-type-json", "assign-to-constant", "assign-to-define", "assign-to-import", "call-import-namespace",
    "class-name-will-throw", "commonjs-variable-in-esm", "delete-super-property", "direct-eval", "duplicate-case",
    "duplicate-class-member", "duplicate-object-key", "empty-import-meta", "equals-nan", "equals-negative-zero", "equals-new-object",
    "html-comment-in-js", "impossible-typeof", "indirect-require", "private-name-will-throw", "semicolon-after-return",
    "suspicious-boolean-not", "suspicious-define", "suspicious-logical-operator", "suspicious-nullish-coalescing",
    "this-is-undefined-in-esm", "unsupported-dynamic-import", "unsupported-jsx-comment", "unsupported-regexp",
    "unsupported-require-call", "invalid-source-mappings", "missing-source-map", "unsupported-source-map-comment",
    "tsconfig.json",
  ].map((id) => [id, "silent" as const]),
);

const ESBUILD_OPTIONS: TransformOptions = {
  loader: "ts",
  // V8 of Node 24 runs in the isolate: nothing it supports is lowered (async/await, `using`).
  target: "node24",
  supported: { using: true },
  sourcemap: "external",
  sourcesContent: false,
  charset: "utf8",
  legalComments: "none",
  logLevel: "silent",
  logOverride: SILENT_WARNINGS,
  tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
};

/**
 * A line after the wrapped script, for esbuild only. esbuild reads an input source map from the
 * last `sourceMappingURL` comment of what it compiles (`//#`, `//@`, `/*#`) and composes its own
 * map with it, so a script holding an inline `//# sourceMappingURL=data:…` would decide where
 * every runtime error is reported. This comment comes last, and its URL, not a `data:` one, is not
 * read (a transform has no file system): no input map is used. Nothing of the script changes
 * (strings that hold such text are not comments), and esbuild leaves the comment out of its output.
 */
const NO_INPUT_SOURCE_MAP = "\n//# sourceMappingURL=isochain:none";

/** esbuild's output for a job, through its synchronous API (a worker thread of esbuild's, waited for). */
function runEsbuild(job: EsbuildJob): EsbuildOutput {
  try {
    return esbuildOutput(transformSync(`${job.input}${NO_INPUT_SOURCE_MAP}`, { ...ESBUILD_OPTIONS, sourcefile: job.filename }));
  } catch (error) {
    return esbuildFailure(error);
  }
}

/** esbuild's output for a job, through its asynchronous API (see `callEsbuild`). */
async function runEsbuildAsync(job: EsbuildJob): Promise<EsbuildOutput> {
  try {
    const transform = (api: typeof Esbuild): Promise<TransformResult> => api.transform(`${job.input}${NO_INPUT_SOURCE_MAP}`, { ...ESBUILD_OPTIONS, sourcefile: job.filename });
    return esbuildOutput(await callEsbuild(transform, { timeoutMs: ESBUILD_TIME_LIMIT_MS }));
  } catch (error) {
    if (error instanceof EsbuildTimeoutError) return { ok: false, stopped: "slow" };
    if (error instanceof EsbuildAnswerTooLargeError) return { ok: false, stopped: "large" };
    return esbuildFailure(error);
  }
}

function esbuildOutput(result: TransformResult): EsbuildOutput {
  const parsed = JSON.parse(result.map) as { mappings?: unknown };
  if (typeof parsed.mappings !== "string") {
    throw new ChainRuntimeError("COMPILE_FAILED", "esbuild returned a source map without mappings.");
  }
  // The contract is one expression: drop esbuild's statement terminator so a driver may splice
  // the code into a call (`start(config, <code>)`). Mappings are unaffected (the end is cut).
  return { ok: true, code: result.code.replace(/;\s*$/, ""), mappings: parsed.mappings };
}

/** esbuild's first error as an output, or a throw of `COMPILE_FAILED` when esbuild could not run. */
function esbuildFailure(error: unknown): EsbuildOutput {
  const first = esbuildMessages(error)?.[0];
  if (first !== undefined) return { ok: false, message: first };
  if (error instanceof ChainRuntimeError) throw error;
  throw new ChainRuntimeError("COMPILE_FAILED", `esbuild could not compile the script: ${describeThrown(error)}`, { cause: error });
}

type StripTypes = (code: string, options: { mode: "strip" }) => string;
let stripper: StripTypes | undefined = typeof module.stripTypeScriptTypes === "function"
  ? (module.stripTypeScriptTypes as StripTypes)
  : undefined;
let stripWarningSilenced = false;

/** Longest source the fast path takes (see {@link withinStripperBounds}). */
const STRIPPER_MAX_CHARS = 6 * 1024;
/**
 * Longest script compiled, UTF-16 units (2 Mi): far beyond what a model writes in one tool call
 * (its output is a few hundred KB at most), and a bound on the host's compile time and memory
 * (a 30 MB script took 24 s and 2.7 GB of host memory in esbuild and V8, outside every limit).
 */
export const MAX_SCRIPT_CHARS = 2_097_152;

/**
 * Deepest nesting of brackets and functions compiled (see `ScriptScan.maxNesting`). esbuild's time
 * grows with the cube of function nesting (1 000 nested arrows: 2 s on the host's thread; 3 000:
 * 55 s), and V8 cannot compile 1 000 anyway; 256 costs esbuild tens of ms at worst.
 */
export const MAX_SCRIPT_NESTING = 256;

/** Deepest nesting of brackets, `${` and arrows the fast path takes. */
const STRIPPER_MAX_NESTING = 256;

/**
 * True when `source` is far from what breaks Node's type stripper for good. It is a WebAssembly
 * module shared by the whole process, and deeply nested input makes it fault ("memory access out
 * of bounds"), after which every later call in the process fails the same way (measured on Node
 * 24: ~1 000 nested arrows, ~1 200 nested brackets, or chains of 6 000-10 000 operators). One
 * hostile script would then cost every later compile the esbuild path. Scripts past these bounds
 * (longer than 6 KiB, or nested deeper than 256, counted without regard to strings: a
 * conservative count) take the esbuild path from the start; what they compile to is the same.
 */
function withinStripperBounds(source: string): boolean {
  if (source.length > STRIPPER_MAX_CHARS) return false;
  let depth = 0;
  let arrows = 0;
  for (let i = 0; i < source.length; i++) {
    const char = source.charCodeAt(i);
    if (char === 0x28 || char === 0x5b || char === 0x7b) {
      // ( [ {  (and so `${`)
      if (++depth > STRIPPER_MAX_NESTING) return false;
    } else if (char === 0x29 || char === 0x5d || char === 0x7d) {
      if (depth > 0) depth--;
    } else if (char === 0x3e && source.charCodeAt(i - 1) === 0x3d) {
      // `=>`: arrows nest without brackets (x => y => z)
      if (++arrows > STRIPPER_MAX_NESTING) return false;
    }
  }
  return true;
}

/**
 * The fast path: Node's type stripper, which blanks types and keeps every position. Returns
 * `undefined` when it refuses the code (syntax errors, enums, namespaces: esbuild decides)
 * or is unavailable. Its one-time ExperimentalWarning is kept off the host's stderr.
 */
function stripTypes(wrapped: string): string | undefined {
  if (stripper === undefined) return undefined;
  let out: string;
  try {
    if (stripWarningSilenced) {
      out = stripper(wrapped, { mode: "strip" });
    } else {
      const emitWarning = process.emitWarning;
      process.emitWarning = () => undefined;
      try {
        out = stripper(wrapped, { mode: "strip" });
      } finally {
        process.emitWarning = emitWarning;
        stripWarningSilenced = true;
      }
    }
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== "ERR_INVALID_TYPESCRIPT_SYNTAX" && code !== "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX") {
      stripper = undefined; // unavailable in this process (flag, build): stop trying
    }
    return undefined;
  }
  // Strip mode keeps every offset; anything else is not the contract this path relies on.
  if (out.length !== wrapped.length || !out.startsWith(COMPILED_SCRIPT_PREFIX) || !out.endsWith(COMPILED_SCRIPT_SUFFIX)) {
    return undefined;
  }
  return out;
}

/**
 * esbuild's output as one expression (the contract): helper declarations it put before the
 * function (for decorators) move into an arrow function that returns it. Nothing is added
 * before or inside a line of the script's body, so every mapped position stays valid.
 */
function asOneExpression(code: string): string {
  if (code.startsWith(COMPILED_SCRIPT_PREFIX)) return code;
  const start = code.indexOf(`\n${COMPILED_SCRIPT_PREFIX}`);
  if (start < 0) return code;
  return `(() => {${code.slice(0, start + 1)}return ${code.slice(start + 1)}${HELPERS_TAIL}`;
}

/** How {@link asOneExpression} ends its arrow around esbuild's helpers. */
const HELPERS_TAIL = ";\n})()";

/** Name of the compiled code in V8's own check (see {@link v8SyntaxError}). */
const V8_CHECK_NAME = "isochain:compiled";

/**
 * The compile error for what V8 refuses in `code` (compiled with node:vm, never run), with the
 * position mapped to the original text when it is in the script's body; `undefined` when V8
 * accepts it.
 */
function v8SyntaxError(code: string, text: SourceText, map: SourcePositionMapper, scan: ScriptScan): CompileError | undefined {
  if (isOneFunctionBody(code)) return undefined;
  try {
    new Script(code, { filename: V8_CHECK_NAME });
    // V8 compiles the whole, but not the body as one function: a bracket of the script closed
    // the wrapper function early, where the scanner read a division as a regular expression.
    return text.error(
      "SyntaxError",
      "The script closes its own function early: a bracket in it closes one it never opened. " +
        (scan.ambiguousSlash === undefined ? "" : "A `/` right after a block's `}` and a line break is a division here; ") +
        "check the brackets (the script runs as the body of an async function).",
      scan.ambiguousSlash,
    );
  } catch (error) {
    if (error instanceof RangeError) {
      // V8's parser ran out of stack (thousands of nested brackets): no position to give.
      return text.error("CompileError", "The script nests too deeply to compile (the parser ran out of stack); flatten its deepest expression.", undefined);
    }
    const message = error instanceof Error ? error.message : String(error);
    // node:vm puts the position in the stack's head: "name:LINE\n<source line>\n<spaces>^^^".
    const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : "";
    const head = new RegExp(`^${V8_CHECK_NAME}:(\\d+)\\n[^\\n]*\\n( *)\\^`).exec(stack);
    const original = head === null ? undefined : map.originalPosition(Number(head[1]), (head[2] ?? "").length + 1);
    return text.error("SyntaxError", message, original === undefined ? undefined : text.offsetOf(original.line, original.column));
  }
}

/**
 * The AsyncFunction constructor of a context of our own that allows code generation from
 * strings, so the check works in a host run with `--disallow-code-generation-from-strings`
 * (which makes the main context's constructor throw EvalError). Nothing it compiles is run.
 */
let asyncFunctionConstructor: FunctionConstructor | undefined;
function checkingAsyncFunction(): FunctionConstructor {
  asyncFunctionConstructor ??= runInContext("(async () => undefined).constructor", createContext({}, { codeGeneration: { strings: true, wasm: false } })) as FunctionConstructor;
  return asyncFunctionConstructor;
}

/**
 * True when V8 compiles (never runs) the body of `code`'s wrapper as one async function body:
 * the early errors the stripper does not check fail here, and so does a body that closes the
 * wrapper early (`}), sideEffect(), (async function () {`), valid JavaScript as a whole, since
 * the Function constructor parses parameters and body apart and requires a single function
 * literal.
 */
function isOneFunctionBody(code: string): boolean {
  const start = code.indexOf(COMPILED_SCRIPT_PREFIX);
  // The end of the wrapper: the last `}` before the trailer (and before the closing of
  // asOneExpression's arrow, if any).
  const expressionEnd = code.length - COMPILED_SCRIPT_TRAILER.length;
  const tail = code.endsWith(HELPERS_TAIL, expressionEnd) ? expressionEnd - HELPERS_TAIL.length : expressionEnd;
  const end = code.lastIndexOf("}", tail - 1);
  if (start < 0 || end < start + COMPILED_SCRIPT_PREFIX.length) return false;
  try {
    const AsyncFunction = checkingAsyncFunction();
    new AsyncFunction(code.slice(start + COMPILED_SCRIPT_PREFIX.length, end));
    return true;
  } catch {
    return false;
  }
}
