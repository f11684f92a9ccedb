import { hash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth, so equal values give equal text. Cycles and
 * non-JSON values (functions, symbols, BigInt) are written as `null`-free markers rather than
 * throwing, because digests are taken of whatever a caller sent.
 */
export function canonicalJson(value: unknown): string {
  return writeCanonical(value, []);
}

/** {@link canonicalJson} of `item`, whose enclosing objects are `ancestors` (a cycle is one of them). */
function writeCanonical(item: unknown, ancestors: object[]): string {
  if (item === null) return "null";
  switch (typeof item) {
    case "string":
      return JSON.stringify(item);
    case "number":
      return Number.isFinite(item) ? JSON.stringify(item) : "null";
    case "boolean":
      return item ? "true" : "false";
    case "bigint":
      return JSON.stringify(`${item.toString()}n`);
    case "undefined":
    case "function":
    case "symbol":
      return "null";
    default:
      break;
  }
  const obj = item as object;
  if (ancestors.includes(obj)) return '"[Circular]"';
  ancestors.push(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[";
    for (let i = 0; i < obj.length; i++) out += (i === 0 ? "" : ",") + writeCanonical(obj[i], ancestors);
    out += "]";
  } else {
    const keys = Object.keys(obj).sort();
    out = "{";
    let first = true;
    for (const key of keys) {
      const field = (obj as Record<string, unknown>)[key];
      if (field === undefined || typeof field === "function" || typeof field === "symbol") continue;
      out += `${first ? "" : ","}${JSON.stringify(key)}:${writeCanonical(field, ancestors)}`;
      first = false;
    }
    out += "}";
  }
  ancestors.pop();
  return out;
}

/** sha256 (hex) of a string or bytes. One-shot `crypto.hash`: no Hash object (2x faster on small inputs). */
export function sha256Hex(data: string | Uint8Array): string {
  return hash("sha256", data, "hex");
}

/** True for a sha256 digest as {@link sha256Hex} writes it: 64 lowercase hex digits. */
export function isSha256Hex(value: unknown): value is string {
  return typeof value === "string" && /^[0-9a-f]{64}$/u.test(value);
}

/** sha256 (hex) of the canonical JSON of `value`: the `argsDigest` of a call record. */
export function digestJson(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
