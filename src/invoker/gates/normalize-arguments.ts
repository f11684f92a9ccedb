import { digestJson, type InvocationFailure } from "../../kernel/index.ts";
import { cloneArguments, MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_NODES } from "../clone-arguments.ts";
import { invocationFailure } from "../invocation-failure.ts";

/** The outcome of {@link normalizeArguments}. */
export type NormalizedArguments =
  | { readonly ok: true; readonly args: Record<string, unknown> }
  | { readonly ok: false; readonly failure: InvocationFailure };

/**
 * Gate 4a, argument normalisation: `arguments` may be an object or a JSON string of one (as
 * some providers send them). `undefined` and an empty (or blank) string mean "no arguments"
 * (`{}`). The result is one plain-JSON copy made by {@link cloneArguments}; anything else
 * (unparseable JSON, an array, a number, `null`, a getter, a proxy, a cycle...) is
 * `INVALID_ARGUMENTS` saying why.
 */
export function normalizeArguments(raw: unknown): NormalizedArguments {
  let value = raw;
  if (typeof raw === "string") {
    if (raw.trim() === "") return { ok: true, args: {} };
    try {
      value = JSON.parse(raw);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return fail(`Arguments are not valid JSON: ${message}. Pass an object of named arguments.`);
    }
    // What JSON.parse just made is already a fresh, unshared tree of plain data (no getters,
    // proxies, cycles, symbols or non-finite numbers), so it is the copy, unless it breaks a
    // rule only the copy enforces: too deep, too many values, or a "__proto__" key to drop.
    // Those (rare) trees take the full copy below, which says why or drops the key.
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      const parsed = checkParsed(value);
      if (parsed === "copy") return { ok: true, args: value as Record<string, unknown> };
      // Said at once: the copy would only list the same keys again (slow for huge objects).
      if (parsed === "too-large") return fail(TOO_LARGE);
    }
  } else if (raw === undefined) {
    return { ok: true, args: {} };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail(`Arguments must be an object of named arguments; got ${describeKind(value)}.`);
  }
  const copy = cloneArguments(value);
  if (!copy.ok) return fail(`Arguments must be plain JSON data: ${copy.reason}.`);
  return { ok: true, args: copy.value as Record<string, unknown> };
}

/**
 * The digest a call's record gives its arguments: of the normalised copy when they are valid,
 * else of the text as sent (or of what kind of value was sent instead), so a refused call is
 * recorded, and matched on replay, by what it asked.
 */
export function digestArguments(raw: unknown, normalized: NormalizedArguments = normalizeArguments(raw)): string {
  if (normalized.ok) return digestJson(normalized.args);
  return digestJson(typeof raw === "string" ? raw : { $invalidArguments: typeof raw });
}

function fail(text: string): NormalizedArguments {
  return { ok: false, failure: invocationFailure("INVALID_ARGUMENTS", text) };
}

function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/** The failure of parsed arguments with more than {@link MAX_ARGUMENT_NODES} values. */
const TOO_LARGE = `Arguments are too large: more than ${MAX_ARGUMENT_NODES} values (array items and object fields); pass large data as an artifact.`;

/**
 * True when a tree JSON.parse made is within the argument limits ({@link MAX_ARGUMENT_DEPTH}
 * levels, {@link MAX_ARGUMENT_NODES} values), `__proto__` keys and all: a tree past them is one
 * the invoker refuses, and code that walks it recursively (a digest, an encoder) must not.
 */
export function fitsArgumentLimits(value: unknown): boolean {
  return typeof value !== "object" || value === null || checkParsed(value, false) === "copy";
}

/**
 * Whether a tree JSON.parse made is exactly what {@link cloneArguments} would copy it to
 * (`"copy"`: within the depth and size limits, with no `__proto__` key), is past the size limit
 * (`"too-large"`), or needs the full copy to say why or drop a key (`"needs-copy"`). Reads only
 * own data properties (all a parsed tree has).
 */
function checkParsed(root: object, protoKeyNeedsCopy = true): "copy" | "too-large" | "needs-copy" {
  let nodes = 0;
  let tooLarge = false;
  const walk = (value: unknown, depth: number): boolean => {
    if (++nodes > MAX_ARGUMENT_NODES) return !(tooLarge = true);
    if (typeof value !== "object" || value === null) return true;
    if (depth >= MAX_ARGUMENT_DEPTH) return false;
    if (Array.isArray(value)) {
      if (nodes + value.length > MAX_ARGUMENT_NODES) return !(tooLarge = true);
      for (let i = 0; i < value.length; i++) if (!walk(value[i], depth + 1)) return false;
      return true;
    }
    const keys = Object.keys(value);
    if (nodes + keys.length > MAX_ARGUMENT_NODES) return !(tooLarge = true);
    for (const key of keys) {
      if ((protoKeyNeedsCopy && key === "__proto__") || !walk((value as Record<string, unknown>)[key], depth + 1)) return false;
    }
    return true;
  };
  if (walk(root, 0)) return "copy";
  return tooLarge ? "too-large" : "needs-copy";
}
