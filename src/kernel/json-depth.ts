/**
 * True when `value` (a tree `JSON.parse` made: own data properties only) holds an object or
 * array nested deeper than `maxDepth` levels (the top level is level 0), as the prelude's
 * plain-data check counts them. The walk stops at the first branch past the limit, so it never
 * recurses more than `maxDepth + 1` calls deep, however deep the tree is.
 */
export function jsonDepthExceeds(value: unknown, maxDepth: number): boolean {
  return exceeds(value, 0, maxDepth);
}

function exceeds(value: unknown, depth: number, maxDepth: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (depth > maxDepth) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (exceeds(value[i], depth + 1, maxDepth)) return true;
    return false;
  }
  for (const key in value) {
    if (exceeds((value as Record<string, unknown>)[key], depth + 1, maxDepth)) return true;
  }
  return false;
}
