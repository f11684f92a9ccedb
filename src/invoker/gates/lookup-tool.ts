import type { AnyTool, InvocationFailure } from "../../kernel/index.ts";
import { invocationFailure } from "../invocation-failure.ts";
import type { ToolRegistry } from "../tool-registry.ts";

/** Most names an unknown-tool message suggests. */
const MAX_SUGGESTIONS = 5;
/** Most names listed when none is close. */
const MAX_LISTED = 10;

/**
 * Gate 2, registry lookup: the tool named `name`, or `UNKNOWN_TOOL` with a message that lists
 * the closest names (edit distance, prefix or substring), or a few available ones when none is
 * close.
 */
export function lookupTool(registry: ToolRegistry, name: unknown): AnyTool | InvocationFailure {
  if (typeof name !== "string" || name === "") {
    return invocationFailure("UNKNOWN_TOOL", `A tool call needs a tool name (a non-empty string); got ${describeName(name)}.`);
  }
  const tool = registry.get(name);
  if (tool !== undefined) return tool;
  const names = [...registry.names()];
  const close = suggestToolNames(name, names);
  let hint: string;
  if (close.length > 0) hint = ` Did you mean ${close.map((n) => `"${n}"`).join(", ")}?`;
  else if (names.length === 0) hint = " No tools are available.";
  else {
    const listed = names.slice(0, MAX_LISTED).map((n) => `"${n}"`).join(", ");
    hint = ` Available tools: ${listed}${names.length > MAX_LISTED ? ` and ${names.length - MAX_LISTED} more` : ""}.`;
  }
  return invocationFailure("UNKNOWN_TOOL", `Unknown tool "${name}".${hint}`);
}

/**
 * The names in `names` closest to `name`, best first: case-insensitive edit distance within a
 * third of the length (at least 2), or one containing the other.
 */
export function suggestToolNames(name: string, names: readonly string[]): string[] {
  const wanted = name.toLowerCase();
  const limit = Math.max(2, Math.floor(wanted.length / 3));
  const scored: { name: string; score: number }[] = [];
  for (const candidate of names) {
    const lower = candidate.toLowerCase();
    let score = editDistance(wanted, lower, limit);
    if (score > limit && (lower.includes(wanted) || wanted.includes(lower))) score = limit;
    if (score <= limit) scored.push({ name: candidate, score });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  return scored.slice(0, MAX_SUGGESTIONS).map((entry) => entry.name);
}

/** Levenshtein distance, giving up (returning `limit + 1`) once it must exceed `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      const value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      current[j] = value;
      if (value < rowMin) rowMin = value;
    }
    if (rowMin > limit) return limit + 1;
    [previous, current] = [current, previous];
  }
  return previous[b.length] ?? limit + 1;
}

function describeName(name: unknown): string {
  if (typeof name === "string") return "an empty string";
  return name === null ? "null" : typeof name;
}
