import { canonicalJson } from "../kernel/index.ts";

/** Lines of {@link describeJsonDiff} shown before the rest are counted. */
const DEFAULT_MAX_LINES = 20;

/**
 * A readable difference between two JSON-like values, one line per differing path:
 *
 *     args.to: expected "ceo@example.com", got "cfo@example.com"
 *     args.cc: missing (expected ["ops@example.com"])
 *     args.bcc: unexpected ["x@example.com"]
 *
 * Objects are compared key by key, arrays index by index (a length change is one line), other
 * values by canonical JSON. Empty when the values are equal. At most `maxLines` lines, then a
 * count of the rest. Pure, and never throws: a value JSON cannot write (a BigInt, a cycle) is
 * shown as what it is, and values nested past {@link MAX_DIFF_DEPTH} levels are compared whole.
 */
export function describeJsonDiff(expected: unknown, actual: unknown, root = "", maxLines = DEFAULT_MAX_LINES): string[] {
  const lines: string[] = [];
  walk(expected, actual, root, lines, 0);
  if (lines.length <= maxLines) return lines;
  const hidden = lines.length - maxLines;
  return [...lines.slice(0, maxLines), `… ${hidden} more difference${hidden === 1 ? "" : "s"}`];
}

/** Deepest level {@link describeJsonDiff} walks into; below it two values differ as wholes. */
const MAX_DIFF_DEPTH = 100;

function walk(expected: unknown, actual: unknown, path: string, lines: string[], depth: number): void {
  if (depth >= MAX_DIFF_DEPTH) {
    if (expected !== actual) lines.push(`${path || "(value)"}: values nested deeper than ${MAX_DIFF_DEPTH} levels, not compared further`);
    return;
  }
  if (isRecord(expected) && isRecord(actual)) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    for (const key of [...keys].sort()) {
      const child = path === "" ? key : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!(key in actual)) lines.push(`${child}: missing (expected ${show(expected[key])})`);
      else if (!(key in expected)) lines.push(`${child}: unexpected ${show(actual[key])}`);
      else walk(expected[key], actual[key], child, lines, depth + 1);
    }
    return;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const shared = Math.min(expected.length, actual.length);
    for (let index = 0; index < shared; index += 1) walk(expected[index], actual[index], `${path}[${index}]`, lines, depth + 1);
    if (expected.length !== actual.length) {
      lines.push(`${path || "(value)"}: expected ${expected.length} items, got ${actual.length}`);
    }
    return;
  }
  if (!sameJson(expected, actual)) {
    lines.push(`${path || "(value)"}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** True when both values write the same canonical JSON; a value it cannot write equals only itself. */
function sameJson(expected: unknown, actual: unknown): boolean {
  if (expected === actual) return true;
  if (expected === undefined || actual === undefined) return false;
  try {
    return canonicalJson(expected) === canonicalJson(actual);
  } catch {
    return false;
  }
}

function show(value: unknown): string {
  let text: string;
  try {
    text = value === undefined ? "undefined" : (JSON.stringify(value) ?? String(value));
  } catch {
    // A BigInt, a cycle, nesting past the stack: named by kind, not thrown.
    text = typeof value === "bigint" ? `${value}n` : `(${Array.isArray(value) ? "an array" : typeof value} JSON cannot write)`;
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
