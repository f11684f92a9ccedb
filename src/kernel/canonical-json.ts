import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth, so equal values give equal text. Cycles and
 * non-JSON values (functions, symbols, BigInt) are written as `null`-free markers rather than
 * throwing, because digests are taken of whatever a caller sent.
 */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const walk = (item: unknown): string => {
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
    if (seen.has(obj)) return '"[Circular]"';
    seen.add(obj);
    let out: string;
    if (Array.isArray(obj)) {
      out = `[${obj.map(walk).join(",")}]`;
    } else {
      const keys = Object.keys(obj).sort();
      const parts: string[] = [];
      for (const key of keys) {
        const field = (obj as Record<string, unknown>)[key];
        if (field === undefined || typeof field === "function" || typeof field === "symbol") continue;
        parts.push(`${JSON.stringify(key)}:${walk(field)}`);
      }
      out = `{${parts.join(",")}}`;
    }
    seen.delete(obj);
    return out;
  };
  return walk(value);
}

/** sha256 (hex) of a string or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** sha256 (hex) of the canonical JSON of `value`: the `argsDigest` of a call record. */
export function digestJson(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
