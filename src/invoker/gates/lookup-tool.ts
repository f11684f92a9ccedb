import type { AnyTool, InvocationFailure } from "../../kernel/index.ts";
import { clipText } from "../../kernel/bound-error-text.ts";
import { suggestNames } from "../../kernel/suggest-names.ts";
import { invocationFailure } from "../invocation-failure.ts";
import type { ToolRegistry } from "../tool-registry.ts";

/** Most names listed when none is close. */
const MAX_LISTED = 10;

/**
 * Longest caller-given name (or call id) a failure text repeats, characters; a longer one is cut
 * with a `… [N more characters]` marker. Four times the longest tool name (64), so a real name
 * or a near miss is always repeated whole, while a caller's 10 MB name is not.
 */
export const MAX_ECHOED_NAME_CHARS = 256;

/**
 * Gate 2, registry lookup: the tool named `name`, or `UNKNOWN_TOOL` with a message that repeats
 * the name (up to {@link MAX_ECHOED_NAME_CHARS}) and lists the closest names (edit distance,
 * prefix or substring), or a few available ones when none is close.
 */
export function lookupTool(registry: ToolRegistry, name: unknown): AnyTool | InvocationFailure {
  if (typeof name !== "string" || name === "") {
    return invocationFailure("UNKNOWN_TOOL", `A tool call needs a tool name (a non-empty string); got ${describeName(name)}.`);
  }
  const tool = registry.get(name);
  if (tool !== undefined) return tool;
  const names = [...registry.names()];
  const close = suggestNames(name, names);
  let hint: string;
  if (close.length > 0) hint = ` Did you mean ${close.map((n) => `"${n}"`).join(", ")}?`;
  else if (names.length === 0) hint = " No tools are available.";
  else {
    const listed = names.slice(0, MAX_LISTED).map((n) => `"${n}"`).join(", ");
    hint = ` Available tools: ${listed}${names.length > MAX_LISTED ? ` and ${names.length - MAX_LISTED} more` : ""}.`;
  }
  return invocationFailure("UNKNOWN_TOOL", `Unknown tool "${clipText(name, MAX_ECHOED_NAME_CHARS)}".${hint}`);
}

function describeName(name: unknown): string {
  if (typeof name === "string") return "an empty string";
  return name === null ? "null" : typeof name;
}
