/**
 * Console formatting inside the isolate: a light `util.inspect`. Strings print raw at the top
 * level and quoted inside structures; everything else prints JSON-ish (`{ a: 1, b: "x" }`),
 * cycles as `[Circular]`, deep values as `[Object]` / `[Array]`. It never throws: a value whose
 * getters or `toString` throw prints as `[unprintable]`.
 * @module
 */

const MAX_DEPTH = 4;
/** What a value that cannot be formatted prints as. */
export const UNPRINTABLE = "[unprintable]";
const MAX_ITEMS = 100;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const objectKeys = Object.keys;
const arrayIsArray = Array.isArray;
const stringify = JSON.stringify;

/** Formats the arguments of one console call into one line of text. */
export function formatLogArguments(args: readonly unknown[]): string {
  let out = "";
  for (let index = 0; index < args.length; index++) {
    const item = args[index];
    if (index > 0) out += " ";
    out += typeof item === "string" ? item : formatValue(item);
  }
  return out;
}

/** Formats one value (strings quoted). */
export function formatValue(value: unknown): string {
  try {
    return format(value, 0, []);
  } catch {
    return UNPRINTABLE;
  }
}

function format(value: unknown, depth: number, seen: object[]): string {
  switch (typeof value) {
    case "string":
      return stringify(value);
    case "number":
      return Object.is(value, -0) ? "-0" : String(value);
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
      return "undefined";
    case "bigint":
      return `${value.toString()}n`;
    case "symbol":
      return value.toString();
    case "function":
      return `[Function: ${value.name || "(anonymous)"}]`;
    default:
      break;
  }
  if (value === null) return "null";
  const obj = value as object;
  if (seen.includes(obj)) return "[Circular]";
  if (obj instanceof Error) return safe(() => obj.stack ?? `${obj.name}: ${obj.message}`);
  if (obj instanceof Date) return safe(() => (Number.isNaN(obj.getTime()) ? "Invalid Date" : obj.toISOString()));
  if (obj instanceof RegExp) return safe(() => obj.toString());
  if (depth >= MAX_DEPTH) return arrayIsArray(obj) ? "[Array]" : "[Object]";
  seen.push(obj);
  try {
    if (arrayIsArray(obj)) return formatList("[", "]", obj.slice(0, MAX_ITEMS), obj.length, depth, seen);
    if (obj instanceof Map) {
      const items: string[] = [];
      for (const [key, item] of obj) {
        if (items.length >= MAX_ITEMS) break;
        items.push(`${format(key, depth + 1, seen)} => ${format(item, depth + 1, seen)}`);
      }
      return `Map(${obj.size}) ${wrap("{", "}", items, obj.size)}`;
    }
    if (obj instanceof Set) return `Set(${obj.size}) ${formatList("{", "}", [...obj].slice(0, MAX_ITEMS), obj.size, depth, seen)}`;
    const keys = objectKeys(obj);
    const items: string[] = [];
    for (const key of keys) {
      if (items.length >= MAX_ITEMS) break;
      const label = IDENTIFIER.test(key) ? key : stringify(key);
      items.push(`${label}: ${format((obj as Record<string, unknown>)[key], depth + 1, seen)}`);
    }
    return wrap("{", "}", items, keys.length);
  } finally {
    seen.pop();
  }
}

function formatList(open: string, close: string, items: readonly unknown[], total: number, depth: number, seen: object[]): string {
  return wrap(
    open,
    close,
    items.map((item) => format(item, depth + 1, seen)),
    total,
  );
}

function wrap(open: string, close: string, items: string[], total: number): string {
  if (total > items.length) items.push(`... ${total - items.length} more`);
  return items.length === 0 ? `${open}${close}` : `${open} ${items.join(", ")} ${close}`;
}

function safe(read: () => string): string {
  try {
    return String(read());
  } catch {
    return UNPRINTABLE;
  }
}
