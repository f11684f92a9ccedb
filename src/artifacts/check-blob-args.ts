import { takeHandedOver } from "../kernel/blob-handover.ts";
import { encodeUtf8 } from "../kernel/encode-utf8.ts";
import { ChainRuntimeError, isArtifactRef, MAX_BLOB_MIME_TYPE_CHARS, type ArtifactRef, type BlobGcOptions, type BlobMeta } from "../kernel/index.ts";

/** MIME type of a blob put without one. */
export const DEFAULT_BLOB_MIME_TYPE = "application/octet-stream";

/**
 * The 64 hex digits of a well-formed ref. Throws `ChainRuntimeError` `ARTIFACT_REF_INVALID`
 * for anything else, so a ref like `sha256:../../etc` never reaches a path.
 */
export function refToHex(ref: unknown): string {
  if (!isArtifactRef(ref)) {
    throw new ChainRuntimeError(
      "ARTIFACT_REF_INVALID",
      `Not an artifact ref: ${describeRef(ref)}. Expected "sha256:" and 64 lowercase hex digits.`,
      { details: { ref: describeRef(ref) } },
    );
  }
  return ref.slice("sha256:".length);
}

/** The ref of a hex digest. */
export function hexToRef(hex: string): ArtifactRef {
  return `sha256:${hex}`;
}

/**
 * A private copy of the bytes to store: strings become UTF-8, byte arrays are copied so a caller
 * mutating its array after `put` cannot change what is stored or make it disagree with its ref.
 * The copy is `new Uint8Array(input)`, whatever the array's class: its own `slice` could return a
 * view (a Node `Buffer`'s does). Bytes isochain made for the store and gave away (see
 * `kernel/blob-handover.ts`) are kept, as a plain `Uint8Array` over the same memory.
 * Throws `ARGUMENT_INVALID` for anything else.
 */
export function toBlobBytes(input: unknown): Uint8Array {
  if (typeof input === "string") return encodeUtf8(input);
  if (input instanceof Uint8Array) {
    return takeHandedOver(input) ? new Uint8Array(input.buffer, 0, input.byteLength) : new Uint8Array(input);
  }
  throw new ChainRuntimeError("ARGUMENT_INVALID", `A blob must be a Uint8Array or a string; got ${typeName(input)}.`, {
    details: { argument: "bytes", type: typeName(input) },
  });
}

/** Longest `name` a blob may have, characters: a label for listings. */
export const MAX_BLOB_NAME_CHARS = 1024;

/**
 * Checked {@link BlobMeta}, with the default MIME type applied. Throws `ARGUMENT_INVALID`,
 * also for a `mimeType` or `name` past its bound: a 70 KB one made `FileBlobStore`'s sidecar
 * larger than it reads back, so a `put` that succeeded left a blob nothing could read.
 */
export function checkBlobMeta(meta: unknown): { mimeType: string; name?: string } {
  if (meta === undefined) return { mimeType: DEFAULT_BLOB_MIME_TYPE };
  if (typeof meta !== "object" || meta === null) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `Blob meta must be an object; got ${typeName(meta)}.`, {
      details: { argument: "meta" },
    });
  }
  const { mimeType, name } = meta as BlobMeta;
  if (mimeType !== undefined && (typeof mimeType !== "string" || mimeType === "" || mimeType.length > MAX_BLOB_MIME_TYPE_CHARS)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `Blob meta.mimeType must be a non-empty string of at most ${MAX_BLOB_MIME_TYPE_CHARS} characters.`, {
      details: { argument: "meta.mimeType" },
    });
  }
  if (name !== undefined && (typeof name !== "string" || name.length > MAX_BLOB_NAME_CHARS)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `Blob meta.name must be a string of at most ${MAX_BLOB_NAME_CHARS} characters.`, {
      details: { argument: "meta.name" },
    });
  }
  return name === undefined ? { mimeType: mimeType ?? DEFAULT_BLOB_MIME_TYPE } : { mimeType: mimeType ?? DEFAULT_BLOB_MIME_TYPE, name };
}

/**
 * The newest `createdAt` a `gc` pass may remove: `now - olderThanMs`. Throws `ARGUMENT_INVALID`
 * when `olderThanMs` is negative or not finite, or `now` is not finite.
 */
export function gcCutoff(options: BlobGcOptions | undefined, clock: () => number): number {
  const olderThanMs = options?.olderThanMs ?? 0;
  const now = options?.now ?? clock();
  if (typeof olderThanMs !== "number" || !Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `gc olderThanMs must be a finite number >= 0; got ${String(olderThanMs)}.`, {
      details: { argument: "olderThanMs", value: olderThanMs },
    });
  }
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `gc now must be a finite number; got ${String(now)}.`, {
      details: { argument: "now", value: now },
    });
  }
  return now - olderThanMs;
}

function describeRef(ref: unknown): string {
  if (typeof ref !== "string") return typeName(ref);
  const shown = ref.length > 80 ? `${ref.slice(0, 80)}...` : ref;
  return JSON.stringify(shown);
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
