import {
  describeThrown,
  isArtifactArgument,
  isArtifactRef,
  isChainRuntimeError,
  type ArtifactRef,
  type BlobStore,
  type InvocationFailure,
} from "../../kernel/index.ts";
import { clipText, MAX_ERROR_MESSAGE_CHARS } from "../../kernel/bound-error-text.ts";
import { blobToText } from "../../artifacts/blob-to-text.ts";
import { containsArtifactArgument } from "../contains-artifact-argument.ts";
import { invocationFailure } from "../invocation-failure.ts";

/** The outcome of {@link resolveArtifactRefs}. */
export type ResolvedArguments =
  | { readonly ok: true; readonly args: Record<string, unknown> }
  | { readonly ok: false; readonly failure: InvocationFailure };

/**
 * Most characters the resolved arguments of one call may hold, every occurrence of a ref counted
 * (64 Mi). A ref passed many times costs its content each time on the host's thread (a schema's
 * `maxLength` walks each copy): 20 000 copies of a 1 MB artifact held the event loop 29 s.
 */
export const MAX_RESOLVED_ARGUMENT_CHARS = 64 * 1024 * 1024;

/**
 * Gate 6, inbound artifact resolution: every `{ "$artifact": ref }` anywhere in the arguments
 * (an object with that one key) is replaced by the artifact's content, fetched host-side, so
 * large data never passes through the script: as `blobToText` gives it (valid UTF-8 without NUL
 * characters becomes the string, BOM kept; other bytes a base64 string). Each distinct ref is
 * fetched once per call.
 *
 * Copy-on-write: the input (the copy the approver saw) is never changed; when no ref occurs the
 * same object comes back without allocation. A malformed ref is `INVALID_ARGUMENTS`; a ref the
 * store lacks, or no store at all, is `ARTIFACT_NOT_FOUND`; another store fault is `STORE_FAILED`.
 */
export async function resolveArtifactRefs(args: Record<string, unknown>, store: BlobStore | undefined): Promise<ResolvedArguments> {
  if (!containsArtifactArgument(args)) return { ok: true, args };
  const found = new Map<ArtifactRef, FoundRef>();
  const malformed = collectRefs(args, "", found);
  if (malformed !== undefined) return { ok: false, failure: malformed };
  if (found.size === 0) return { ok: true, args };
  if (store === undefined) {
    const [ref, { path }] = found.entries().next().value as [ArtifactRef, FoundRef];
    return {
      ok: false,
      failure: invocationFailure(
        "ARTIFACT_NOT_FOUND",
        `${subject(path)} refers to artifact ${ref}, but no blob store is configured, so artifacts cannot be resolved.`,
      ),
    };
  }
  const contents = new Map<string, string>();
  const refs = [...found.keys()];
  const fetched = await Promise.all(refs.map((ref) => fetchContent(store, ref)));
  for (let i = 0; i < refs.length; i++) {
    const ref = refs[i] as ArtifactRef;
    const outcome = fetched[i] as FetchOutcome;
    if (typeof outcome !== "string") {
      const path = found.get(ref)?.path ?? "";
      if (outcome.missing) {
        return {
          ok: false,
          failure: invocationFailure(
            "ARTIFACT_NOT_FOUND",
            `${subject(path)} refers to artifact ${ref}, which the blob store does not have (never stored, or collected). ` +
              "Pass the artifactRef of a result from this chain.",
          ),
        };
      }
      if (outcome.tooLarge) {
        return { ok: false, failure: invocationFailure("INVALID_ARGUMENTS", `Artifact ${ref} cannot be passed as ${subject(path)}: ${outcome.message}.`) };
      }
      return {
        ok: false,
        failure: invocationFailure("STORE_FAILED", `Resolving artifact ${ref} for ${subject(path)} failed: ${clipText(outcome.message, MAX_ERROR_MESSAGE_CHARS)}`),
      };
    }
    contents.set(ref, outcome);
  }
  let total = 0;
  for (const [ref, content] of contents) total += content.length * (found.get(ref as ArtifactRef)?.uses ?? 1);
  if (total > MAX_RESOLVED_ARGUMENT_CHARS) {
    const [ref, { uses: count }] = [...found].reduce((most, entry) => (entry[1].uses > most[1].uses ? entry : most));
    return {
      ok: false,
      failure: invocationFailure(
        "INVALID_ARGUMENTS",
        `The arguments would hold ${total} characters once their artifacts are resolved (at most ${MAX_RESOLVED_ARGUMENT_CHARS}; ` +
          `${ref} is passed ${count} time${count === 1 ? "" : "s"}). Pass each artifact once, or fewer of them per call.`,
      ),
    };
  }
  return { ok: true, args: replaceRefs(args, contents) as Record<string, unknown> };
}

type FetchOutcome = string | { readonly missing: boolean; readonly message: string; readonly tooLarge?: true };

async function fetchContent(store: BlobStore, ref: ArtifactRef): Promise<FetchOutcome> {
  let bytes: unknown;
  try {
    bytes = await store.resolve(ref);
  } catch (error) {
    const missing = isChainRuntimeError(error) && error.code === "ARTIFACT_NOT_FOUND";
    return { missing, message: describeThrown(error) };
  }
  // A store of the embedder's own may answer anything: only bytes are content.
  if (!(bytes instanceof Uint8Array)) {
    return { missing: false, message: `the blob store's resolve() gave ${bytes === null ? "null" : typeof bytes}, not the blob's bytes (a Uint8Array)` };
  }
  if (bytes.byteLength > MAX_RESOLVED_ARGUMENT_CHARS) {
    return { missing: false, tooLarge: true, message: `it is ${bytes.byteLength} bytes, more than one call's resolved arguments may hold (${MAX_RESOLVED_ARGUMENT_CHARS} characters)` };
  }
  return blobToText(bytes).text;
}

/** Where a ref first occurs in the arguments, and how often it does. */
interface FoundRef {
  readonly path: string;
  uses: number;
}

/** Records each ref with the first path it occurs at, and how often it occurs; returns a failure for a malformed ref. */
function collectRefs(value: unknown, path: string, found: Map<ArtifactRef, FoundRef>): InvocationFailure | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const failure = collectRefs(value[i], `${path}[${i}]`, found);
      if (failure) return failure;
    }
    return undefined;
  }
  if (isArtifactArgument(value)) {
    const ref = value.$artifact as unknown;
    if (!isArtifactRef(ref)) {
      return invocationFailure(
        "INVALID_ARGUMENTS",
        `${subject(path)} has { "$artifact": ${clipText(JSON.stringify(ref) ?? String(ref), MAX_QUOTED_CHARS)} }, which is not an artifact ref (sha256:<64 hex digits>). ` +
          "Pass the artifactRef of an earlier result unchanged.",
      );
    }
    const seen = found.get(ref);
    if (seen === undefined) found.set(ref, { path, uses: 1 });
    else seen.uses++;
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const failure = collectRefs((value as Record<string, unknown>)[key], path === "" ? key : `${path}.${key}`, found);
    if (failure) return failure;
  }
  return undefined;
}

/** A copy of `value` with every artifact argument replaced; untouched subtrees are shared. */
function replaceRefs(value: unknown, contents: ReadonlyMap<string, string>): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const replaced = replaceRefs(item, contents);
      if (replaced !== item) {
        out ??= value.slice();
        out[i] = replaced;
      }
    }
    return out ?? value;
  }
  if (isArtifactArgument(value)) return contents.get(value.$artifact) ?? value;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key];
    const replaced = replaceRefs(field, contents);
    if (replaced !== field) {
      out ??= { ...(value as Record<string, unknown>) };
      out[key] = replaced;
    }
  }
  return out ?? value;
}

/** Longest argument path or malformed ref a failure quotes, characters (a script chooses both). */
const MAX_QUOTED_CHARS = 200;

function subject(path: string): string {
  return path === "" ? "the arguments" : `argument "${clipText(path, MAX_QUOTED_CHARS)}"`;
}
