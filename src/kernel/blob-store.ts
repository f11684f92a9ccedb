import type { ArtifactRef } from "./artifact-ref.ts";

/** What a blob store keeps beside the bytes. */
export interface BlobMeta {
  /** @defaultValue `"application/octet-stream"` */
  readonly mimeType?: string;
  /** A human name for listings (the tool that produced it, a file name). */
  readonly name?: string;
}

/** What a blob store knows of one blob. */
export interface BlobStat {
  readonly ref: ArtifactRef;
  readonly bytes: number;
  readonly mimeType: string;
  readonly name?: string;
  /** Epoch milliseconds of the first put. */
  readonly createdAt: number;
  /** Open pins; `gc` never removes a pinned blob. */
  readonly pins: number;
}

/** Options of {@link BlobStore.gc}. */
export interface BlobGcOptions {
  /** Remove unpinned blobs created at least this long ago. @defaultValue 0 */
  readonly olderThanMs?: number;
  /** The clock to judge age by, for tests. @defaultValue `Date.now()` */
  readonly now?: number;
}

/** What a `gc` pass removed. */
export interface BlobGcResult {
  readonly removed: number;
  readonly freedBytes: number;
}

/**
 * Where large results and media go so they never enter the model's context or the isolate's
 * heap. Content-addressed: `put` of the same bytes returns the same ref and is safe to race.
 */
export interface BlobStore {
  /** Stores the bytes (a string is stored as UTF-8) and returns their ref. */
  put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef>;
  /** The bytes of `ref`. Throws `ChainRuntimeError` `ARTIFACT_NOT_FOUND` when absent. */
  resolve(ref: ArtifactRef): Promise<Uint8Array>;
  /** What the store knows of `ref`, or `undefined` when absent. */
  stat(ref: ArtifactRef): Promise<BlobStat | undefined>;
  /** Adds a pin; pinned blobs survive `gc`. Throws `ARTIFACT_NOT_FOUND` when absent. */
  pin(ref: ArtifactRef): Promise<void>;
  /** Removes one pin (never below zero). */
  unpin(ref: ArtifactRef): Promise<void>;
  /** Removes unpinned blobs older than `olderThanMs`. */
  gc(options?: BlobGcOptions): Promise<BlobGcResult>;
}
