/**
 * The check every entry that takes a list of tools makes first (`new Toolbox()`, the provider
 * encoders), and the words its refusals use. Apart from both, so neither imports the other for it.
 * @module
 */
import { ChainRuntimeError } from "../kernel/index.ts";
/** An iterable that is not a string (whose characters would be taken one by one). */
export function isList(value: unknown): value is Iterable<unknown> {
  return typeof value === "object" && value !== null && typeof (value as Partial<Iterable<unknown>>)[Symbol.iterator] === "function";
}

/**
 * Refuses what cannot be a list of tools before any tool is looked at: `null`, a string, a
 * plain object, and the common slip of one tool where a list belongs, named with the fix
 * (`wrap it in an array: toOpenAITools([tool])`). Shared by `new Toolbox()` and the encoders.
 * @param callee - the call as the message names it: `"new Toolbox"`, `"toOpenAITools"`
 * @throws ChainRuntimeError `ARGUMENT_INVALID` (`details.argument` `"tools"`) unless `tools` is a list.
 */
export function checkToolList(tools: unknown, callee: string): asserts tools is Iterable<unknown> {
  if (isList(tools)) return;
  const name = typeof tools === "object" && tools !== null ? (tools as { name?: unknown }).name : undefined;
  const got = typeof name === "string" ? `one tool ("${clipName(name)}"); wrap it in an array: ${callee}([tool])` : describeValue(tools);
  throw new ChainRuntimeError("ARGUMENT_INVALID", `${callee}() takes an array of tools (defineTool(...)); got ${got}.`, {
    details: { argument: "tools" },
  });
}

/** What a refused argument is, for a message: its kind, never its (possibly huge or secret) content. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "object":
      return isList(value) ? "an iterable that is not an array" : "an object that is not iterable";
    case "string":
      return "a string";
    case "undefined":
      return "undefined";
    default:
      return `a ${typeof value}`;
  }
}

/** `name`, cut at 64 characters for a message. */
export function clipName(name: string): string {
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}
