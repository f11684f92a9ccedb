import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import {
  ChainRuntimeError,
  sha256Hex,
  type ArtifactRef,
  type BlobGcOptions,
  type BlobGcResult,
  type BlobMeta,
  type BlobStat,
  type BlobStore,
} from "../kernel/index.ts";
import { checkBlobMeta, gcCutoff, hexToRef, refToHex, toBlobBytes } from "./check-blob-args.ts";

/** Every field of {@link MemoryBlobStoreOptions}. */
const MEMORY_BLOB_STORE_OPTION_NAMES = optionNames<MemoryBlobStoreOptions>({ now: true });

/** Options of a {@link MemoryBlobStore}. */
export interface MemoryBlobStoreOptions {
  /** The clock that stamps `createdAt`, for tests. @defaultValue `Date.now` */
  readonly now?: () => number;
}

interface Entry {
  readonly bytes: Uint8Array;
  readonly mimeType: string;
  readonly name?: string;
  /** The time of the latest put, which `gc` judges age by. */
  createdAt: number;
  pins: number;
}

/**
 * A {@link BlobStore} in a `Map`: for tests and short-lived processes. Content-addressed like
 * every blob store (`ref = sha256:<hex of the bytes>`, strings stored as UTF-8); the meta of
 * the first `put` is kept, and `createdAt` is that of the latest. Bytes are copied on the way in
 * and on the way out, so neither side can change what the other holds. Nothing survives the
 * process.
 *
 * Errors: a malformed ref throws `ChainRuntimeError` `ARTIFACT_REF_INVALID`; `resolve`/`pin`
 * of an absent ref throw `ARTIFACT_NOT_FOUND`; bad arguments throw `ARGUMENT_INVALID`.
 */
export class MemoryBlobStore implements BlobStore {
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;

  /** @param options - see {@link MemoryBlobStoreOptions}. */
  constructor(options: MemoryBlobStoreOptions = {}) {
    checkOptionNames("MemoryBlobStore", options, MEMORY_BLOB_STORE_OPTION_NAMES);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Stores the bytes and returns their ref. Storing the same bytes again keeps the first meta
   * and the pins, and moves `createdAt` up to now (never back), so the blob counts as new for
   * `gc` again: a ref a put has just handed out is never older than any `olderThanMs`.
   */
  async put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef> {
    const data = toBlobBytes(bytes);
    const checked = checkBlobMeta(meta);
    const hex = sha256Hex(data);
    const now = this.#now();
    const existing = this.#entries.get(hex);
    if (existing === undefined) {
      this.#entries.set(hex, { bytes: data, ...checked, createdAt: now, pins: 0 });
    } else {
      existing.createdAt = Math.max(existing.createdAt, now);
    }
    return hexToRef(hex);
  }

  /** A copy of the bytes of `ref`. Throws `ARTIFACT_NOT_FOUND` when absent. */
  async resolve(ref: ArtifactRef): Promise<Uint8Array> {
    return new Uint8Array(this.#require(ref).bytes);
  }

  /** What the store knows of `ref`, or `undefined` when absent. */
  async stat(ref: ArtifactRef): Promise<BlobStat | undefined> {
    const hex = refToHex(ref);
    const entry = this.#entries.get(hex);
    return entry === undefined ? undefined : toStat(hex, entry);
  }

  /** Adds a pin. Throws `ARTIFACT_NOT_FOUND` when absent. */
  async pin(ref: ArtifactRef): Promise<void> {
    this.#require(ref).pins += 1;
  }

  /** Removes one pin, never below zero; an absent ref is a no-op. */
  async unpin(ref: ArtifactRef): Promise<void> {
    const entry = this.#entries.get(refToHex(ref));
    if (entry !== undefined && entry.pins > 0) entry.pins -= 1;
  }

  /** Removes unpinned blobs whose `createdAt` (their latest put) `<= now - olderThanMs`. */
  async gc(options?: BlobGcOptions): Promise<BlobGcResult> {
    const cutoff = gcCutoff(options, this.#now);
    let removed = 0;
    let freedBytes = 0;
    for (const [hex, entry] of this.#entries) {
      if (entry.pins === 0 && entry.createdAt <= cutoff) {
        this.#entries.delete(hex);
        removed += 1;
        freedBytes += entry.bytes.byteLength;
      }
    }
    return { removed, freedBytes };
  }

  #require(ref: ArtifactRef): Entry {
    const entry = this.#entries.get(refToHex(ref));
    if (entry === undefined) {
      throw new ChainRuntimeError("ARTIFACT_NOT_FOUND", `No blob for ${ref}.`, { details: { ref } });
    }
    return entry;
  }
}

function toStat(hex: string, entry: Entry): BlobStat {
  const base = {
    ref: hexToRef(hex),
    bytes: entry.bytes.byteLength,
    mimeType: entry.mimeType,
    createdAt: entry.createdAt,
    pins: entry.pins,
  };
  return entry.name === undefined ? base : { ...base, name: entry.name };
}
