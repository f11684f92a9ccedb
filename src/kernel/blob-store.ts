import type { ArtifactRef } from "./artifact-ref.ts";

/**
 * Longest `mimeType` a blob (and an image or audio block of a tool result, which becomes one)
 * may have, characters: RFC 6838 allows 127 for each half.
 */
export const MAX_BLOB_MIME_TYPE_CHARS = 255;

/** What a blob store keeps beside the bytes. */
export interface BlobMeta {
  /** @defaultValue `"application/octet-stream"` */
  readonly mimeType?: string;
  /** A human name for listings (the tool that produced it, a file name). */
  readonly name?: string;
}

/** What a blob store knows of one blob. */
export interface BlobStat {
  /** The blob's content address, `sha256:<hex>`. */
  readonly ref: ArtifactRef;
  /** Its size, bytes. */
  readonly bytes: number;
  /** Its MIME type, as given at `put` (`application/octet-stream` when none was). */
  readonly mimeType: string;
  /** The human name given at `put`, when one was. */
  readonly name?: string;
  /**
   * Epoch milliseconds of the latest put: a put of bytes already stored moves it up to its own
   * time (never back), and `gc` judges a blob's age by it.
   */
  readonly createdAt: number;
  /** Open pins; `gc` never removes a pinned blob. */
  readonly pins: number;
}

/** Options of {@link BlobStore.gc}. */
export interface BlobGcOptions {
  /** Remove unpinned blobs last put at least this long ago. @defaultValue 0 */
  readonly olderThanMs?: number;
  /** The clock to judge age by, for tests. @defaultValue `Date.now()` */
  readonly now?: number;
}

/** What a `gc` pass removed. */
export interface BlobGcResult {
  /** Blobs removed. */
  readonly removed: number;
  /** Bytes those blobs held. */
  readonly freedBytes: number;
}

/**
 * Where large results and media go so they never enter the model's context or the isolate's
 * heap. Content-addressed: `put` of the same bytes returns the same ref and is safe to race.
 *
 * Age is counted from a blob's latest put, not its first: every put hands out a ref, and a ref
 * just handed out must outlive a routine `gc({ olderThanMs })` whether it is pinned next (the
 * invoker's put-then-pin) or never (a run's `returnArtifactRef`), even when the same bytes were
 * stored long before. Only `gc` with `olderThanMs: 0` (the default) may take an unpinned blob
 * the moment it is put.
 */
export interface BlobStore {
  /**
   * Stores the bytes (a string is stored as UTF-8) and returns their ref. Bytes already stored
   * keep their meta and pins, and their `createdAt` moves up to now: they count as new for `gc`.
   */
  put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef>;
  /** The bytes of `ref`. Throws `ChainRuntimeError` `ARTIFACT_NOT_FOUND` when absent. */
  resolve(ref: ArtifactRef): Promise<Uint8Array>;
  /** What the store knows of `ref`, or `undefined` when absent. */
  stat(ref: ArtifactRef): Promise<BlobStat | undefined>;
  /** Adds a pin; pinned blobs survive `gc`. Throws `ARTIFACT_NOT_FOUND` when absent. */
  pin(ref: ArtifactRef): Promise<void>;
  /** Removes one pin (never below zero). */
  unpin(ref: ArtifactRef): Promise<void>;
  /** Removes unpinned blobs whose latest put is at least `olderThanMs` old. */
  gc(options?: BlobGcOptions): Promise<BlobGcResult>;
}
