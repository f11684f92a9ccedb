import { isArtifactArgument } from "../kernel/index.ts";

/**
 * True when a `{ $artifact: ... }` object (and nothing else in it) occurs anywhere in `value`,
 * a plain-JSON argument copy. Allocation-free, so gates can skip their walks in the common case.
 */
export function containsArtifactArgument(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (containsArtifactArgument(item)) return true;
    return false;
  }
  if (isArtifactArgument(value)) return true;
  for (const key in value) if (containsArtifactArgument((value as Record<string, unknown>)[key])) return true;
  return false;
}
