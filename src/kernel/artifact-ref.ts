/**
 * A handle to bytes kept in a {@link BlobStore}: `sha256:<64 hex digits>` of the content.
 * Content-addressed, so the same bytes always give the same ref.
 */
export type ArtifactRef = `sha256:${string}`;

const REF_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** True for a well-formed artifact ref. */
export function isArtifactRef(value: unknown): value is ArtifactRef {
  return typeof value === "string" && REF_PATTERN.test(value);
}

/**
 * The argument form that passes an artifact to a tool: `{ $artifact: ref }`. The invoker swaps
 * it for the artifact's content (UTF-8 text, or base64 for binary) before `execute` runs.
 */
export interface ArtifactArgument {
  readonly $artifact: ArtifactRef;
}

/** True for a `{ $artifact: ref }` object with nothing else in it. */
export function isArtifactArgument(value: unknown): value is ArtifactArgument {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  // Most objects have no "$artifact": answered without listing their keys (a 600 000-key
  // argument object took 0.7 s of host CPU per call to list).
  if (!Object.hasOwn(value, "$artifact")) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "$artifact" && typeof (value as { $artifact: unknown }).$artifact === "string";
}
