import type { ChainError } from "../kernel/index.ts";
import { boundStack, clipText, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS } from "../kernel/bound-error-text.ts";
import { suggestNames } from "../kernel/suggest-names.ts";
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
  /**
   * The names the run installed on `tools`. With them, "X is not defined" for a tool name and
   * "tools.X is not a function" for a name that is not a tool say what to call instead.
   */
  readonly toolNames?: readonly string[];
}

export { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS, MAX_STACK_LINE_CHARS, MAX_STACK_LINES } from "../kernel/bound-error-text.ts";

/**
 * Turns a sandbox fault into a {@link ChainError} about the original script: the stack is
 * mapped (frames outside the script dropped, its header, the name and message, kept as it is),
 * and `line`, `column` and `codeFrame` come from its first frame in the script. A fault with
 * no such frame (a limit hit in the prelude) keeps only phase, name, message and the mapped
 * stack.
 *
 * Every field is script-controlled (a script may throw `{ name, message, stack }` of any size),
 * so each is bounded before any work is done on it: name {@link MAX_ERROR_NAME_CHARS}, message
 * {@link MAX_ERROR_MESSAGE_CHARS}, stack {@link MAX_STACK_LINES} lines of at most
 * {@link MAX_STACK_LINE_CHARS}. A huge forged stack therefore cannot stall the host while it is
 * mapped, nor flood the model's context through the run summary.
 */
export function mapRuntimeError(fault: CompiledCodeFault, options: MapRuntimeErrorOptions): ChainError {
  const name = clipText(fault.name, MAX_ERROR_NAME_CHARS);
  const base = {
    phase: fault.phase,
    name,
    message: withHint(name, clipText(fault.message, MAX_ERROR_MESSAGE_CHARS), options.toolNames),
  };
  if (fault.stack === undefined) return base;
  const bounded = boundStack(fault.stack);
  // The uncut name and message, whose every line heads the stack; they are only counted, no
  // further than the bounded stack's lines.
  const header = { name: fault.name, message: fault.message };
  const stack = options.map.mapStack(bounded, options.scriptName, header);
  const position = options.map.locateError(bounded, options.scriptName, header);
  if (position === undefined) return { ...base, stack };
  return {
    ...base,
    stack,
    line: position.line,
    column: position.column,
    codeFrame: codeFrame(options.source, position.line, position.column),
  };
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

/**
 * `message` with a hint for the mistakes a model makes about its environment: V8's "X is not
 * defined" for a host global it may expect or for a tool called without `tools.`, and "tools.X
 * is not a function" for a tool that does not exist (with the closest names).
 */
function withHint(name: string, message: string, toolNames: readonly string[] | undefined): string {
  let hint: string | undefined;
  if (name === "ReferenceError") {
    const missing = /^(\S+) is not defined$/u.exec(message)?.[1];
    if (missing !== undefined) {
      hint = HOST_GLOBAL_HINTS.get(missing);
      if (hint === undefined && toolNames?.includes(missing) === true) {
        hint = `${missing} is a tool: call it as \`await tools.${missing}({...})\``;
      }
    }
  } else if (name === "TypeError" && toolNames !== undefined) {
    const called = /^tools\.(.+) is not a function$/u.exec(message)?.[1];
    if (called !== undefined && !toolNames.includes(called)) hint = notAFunctionHint(called, toolNames);
  }
  return hint === undefined ? message : `${message} (${hint}).`;
}

/**
 * The hint for V8's "tools.`called` is not a function": a method of a call's promise (a missing
 * `await`: `tools.search(...).map`), a property of a tool (`tools.search.invoke`), else a tool
 * that does not exist.
 */
function notAFunctionHint(called: string, toolNames: readonly string[]): string {
  const [, tool, rest] = /^([^.(]+)(\(\.\.\.\)|\.)/u.exec(called) ?? [];
  if (tool !== undefined && toolNames.includes(tool)) {
    return rest === "(...)"
      ? `tools.${tool}(...) gives a promise of the call's result: await it first, e.g. \`const result = await tools.${tool}({...})\`, then read result.structured or result.text`
      : `tools.${tool} is the tool itself, a function: call it as \`await tools.${tool}({...})\``;
  }
  return unknownToolHint(called, toolNames);
}

/** Most tool names listed when none is close to the one a script called. */
const MAX_LISTED_TOOLS = 10;

function unknownToolHint(called: string, toolNames: readonly string[]): string {
  if (toolNames.length === 0) return `there is no tool "${called}": no tools are available to this script`;
  const close = suggestNames(called, toolNames);
  if (close.length > 0) return `there is no tool "${called}"; did you mean ${close.map(toolAccess).join(", ")}?`;
  const listed = toolNames.slice(0, MAX_LISTED_TOOLS).map(toolAccess).join(", ");
  const more = toolNames.length > MAX_LISTED_TOOLS ? ` and ${toolNames.length - MAX_LISTED_TOOLS} more` : "";
  return `there is no tool "${called}"; the tools are ${listed}${more}`;
}

/** How a script names a tool: `tools.name`, or `tools["odd-name"]` when the name is not an identifier. */
function toolAccess(name: string): string {
  return /^[A-Za-z_$][\w$]*$/u.test(name) ? `tools.${name}` : `tools[${JSON.stringify(name)}]`;
}
