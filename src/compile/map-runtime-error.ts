import type { ChainError } from "../kernel/index.ts";
import { codeFrame } from "./code-frame.ts";
import type { SourcePositionMapper } from "./source-position-mapper.ts";

/** A fault reported by a sandbox, positions still in compiled code (`SandboxError` fits). */
export interface CompiledCodeFault {
  readonly phase: "runtime" | "limit";
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
}

/** What {@link mapRuntimeError} needs besides the fault. */
export interface MapRuntimeErrorOptions {
  /** The model's original script. */
  readonly source: string;
  /** The `map` of the compile result that produced the code that ran. */
  readonly map: SourcePositionMapper;
  /** The file name the driver compiled the code under (`SandboxRunRequest.scriptName`). */
  readonly scriptName: string;
}

/** Longest error name kept, characters; the rest is cut with a marker. */
export const MAX_ERROR_NAME_CHARS = 200;
/** Longest error message kept, characters; the rest is cut with a marker. */
export const MAX_ERROR_MESSAGE_CHARS = 4096;
/** Stack lines read (and mapped); later lines are replaced by one marker line. */
export const MAX_STACK_LINES = 100;
/** Longest stack line kept, characters. */
export const MAX_STACK_LINE_CHARS = 1000;

/**
 * Turns a sandbox fault into a {@link ChainError} about the original script: the stack is
 * mapped (frames outside the script dropped), and `line`, `column` and `codeFrame` come from
 * its first frame in the script. A fault with no such frame (a limit hit in the prelude)
 * keeps only phase, name, message and the mapped stack.
 *
 * Every field is script-controlled (a script may throw `{ name, message, stack }` of any size),
 * so each is bounded before any work is done on it: name {@link MAX_ERROR_NAME_CHARS}, message
 * {@link MAX_ERROR_MESSAGE_CHARS}, stack {@link MAX_STACK_LINES} lines of at most
 * {@link MAX_STACK_LINE_CHARS}. A huge forged stack therefore cannot stall the host while it is
 * mapped, nor flood the model's context through the run summary.
 */
export function mapRuntimeError(fault: CompiledCodeFault, options: MapRuntimeErrorOptions): ChainError {
  const name = clip(fault.name, MAX_ERROR_NAME_CHARS);
  const base = {
    phase: fault.phase,
    name,
    message: withHostGlobalHint(name, clip(fault.message, MAX_ERROR_MESSAGE_CHARS)),
  };
  if (fault.stack === undefined) return base;
  const bounded = boundStack(fault.stack);
  const stack = options.map.mapStack(bounded, options.scriptName);
  const position = options.map.locateError(bounded, options.scriptName);
  if (position === undefined) return { ...base, stack };
  return {
    ...base,
    stack,
    line: position.line,
    column: position.column,
    codeFrame: codeFrame(options.source, position.line, position.column),
  };
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let head = text.slice(0, max);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1); // never half a surrogate pair
  return `${head}… [${text.length - head.length} more characters]`;
}

/** The first {@link MAX_STACK_LINES} lines of `stack`, each clipped; never splits the whole text. */
function boundStack(stack: string): string {
  if (stack.length <= MAX_STACK_LINE_CHARS && stack.indexOf("\n") < 0) return stack;
  const lines: string[] = [];
  let start = 0;
  while (start <= stack.length && lines.length < MAX_STACK_LINES) {
    let end = stack.indexOf("\n", start);
    if (end < 0) end = stack.length;
    const length = end - start;
    lines.push(
      length <= MAX_STACK_LINE_CHARS
        ? stack.slice(start, end)
        : `${stack.slice(start, start + MAX_STACK_LINE_CHARS)}… [${length - MAX_STACK_LINE_CHARS} more characters]`,
    );
    start = end + 1;
  }
  if (start < stack.length) lines.push(`    … [stack cut: ${stack.length - start} more characters]`);
  return lines.join("\n");
}

const NO_TIMERS = "isochain scripts have no timers: await each tool call (`await tools.name({...})`); there is no way to sleep";
const NO_NODE = "isochain scripts have no Node.js APIs or modules: every tool is on `tools.*`";
const NO_NETWORK = "isochain scripts have no network access: use the tools on `tools.*`";
const NO_WEB_API = "isochain scripts have the JavaScript built-ins only, no web APIs";

/** Globals a script may expect from Node or a browser, and what to tell it when they are missing. */
const HOST_GLOBAL_HINTS: ReadonlyMap<string, string> = new Map([
  ...["setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "clearImmediate", "queueMicrotask"].map((name) => [name, NO_TIMERS] as const),
  ...["require", "module", "exports", "process", "Buffer", "global", "__dirname", "__filename"].map((name) => [name, NO_NODE] as const),
  ...["fetch", "XMLHttpRequest", "WebSocket", "EventSource"].map((name) => [name, NO_NETWORK] as const),
  ...["TextEncoder", "TextDecoder", "URL", "URLSearchParams", "atob", "btoa", "structuredClone", "crypto", "performance", "window", "document"].map(
    (name) => [name, NO_WEB_API] as const,
  ),
]);

/** `message` with a hint when it is V8's "X is not defined" for a host global a script may expect. */
function withHostGlobalHint(name: string, message: string): string {
  if (name !== "ReferenceError") return message;
  const missing = /^(\S+) is not defined$/u.exec(message)?.[1];
  const hint = missing === undefined ? undefined : HOST_GLOBAL_HINTS.get(missing);
  return hint === undefined ? message : `${message} (${hint}).`;
}
