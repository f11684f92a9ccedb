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
 * count of the rest. Pure.
 */
export function describeJsonDiff(expected: unknown, actual: unknown, root = "", maxLines = DEFAULT_MAX_LINES): string[] {
  const lines: string[] = [];
  walk(expected, actual, root, lines);
  if (lines.length <= maxLines) return lines;
  const hidden = lines.length - maxLines;
  return [...lines.slice(0, maxLines), `… ${hidden} more difference${hidden === 1 ? "" : "s"}`];
}

function walk(expected: unknown, actual: unknown, path: string, lines: string[]): void {
  if (isRecord(expected) && isRecord(actual)) {
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    for (const key of [...keys].sort()) {
      const child = path === "" ? key : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
      if (!(key in actual)) lines.push(`${child}: missing (expected ${show(expected[key])})`);
      else if (!(key in expected)) lines.push(`${child}: unexpected ${show(actual[key])}`);
      else walk(expected[key], actual[key], child, lines);
    }
    return;
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    const shared = Math.min(expected.length, actual.length);
    for (let index = 0; index < shared; index += 1) walk(expected[index], actual[index], `${path}[${index}]`, lines);
    if (expected.length !== actual.length) {
      lines.push(`${path || "(value)"}: expected ${expected.length} items, got ${actual.length}`);
    }
    return;
  }
  if (canonical(expected) !== canonical(actual)) {
    lines.push(`${path || "(value)"}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function canonical(value: unknown): string {
  if (value === undefined) return "undefined";
  try {
    return canonicalJson(value);
  } catch {
    return String(value);
  }
}

function show(value: unknown): string {
  const text = value === undefined ? "undefined" : (JSON.stringify(value) ?? String(value));
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
