import type { InvocationFailure } from "../../kernel/index.ts";
import { cloneArguments } from "../clone-arguments.ts";
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

function fail(text: string): NormalizedArguments {
  return { ok: false, failure: invocationFailure("INVALID_ARGUMENTS", text) };
}

function describeKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
