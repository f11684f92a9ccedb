/**
 * FileBlobStore: the embedded, content-addressed blob store.
 *
 * Layout (`hex` = sha256 of the bytes, `ab` = its first two digits):
 *
 * ```
 * <dir>/ab/<hex>             the bytes, exactly as put
 * <dir>/ab/<hex>.meta.json   sidecar { version, ref, bytes, mimeType, name?, createdAt, pins }
 * <dir>/ab/.<name>.<uuid>.tmp  a write in flight (or left by a crash)
 * ```
 *
 * Invariants:
 * - A blob exists iff its sidecar exists. `put` writes the bytes first and the sidecar last, so
 *   a crash in between leaves orphan bytes that read as absent; the next `put` of the same
 *   bytes commits them, and `gc` deletes them once they are older than the grace period.
 * - Every file is written to a temp file in the same directory, fsynced, renamed into place and
 *   the directory fsynced (see `writeFileAtomic`): readers never see a torn file.
 * - Pins live in the sidecar, so they survive a restart. Every read-modify-write of a sidecar
 *   (`put`, `pin`, `unpin`, and `gc`'s check-then-delete) runs under a per-ref in-process lock,
 *   so any number of concurrent promises is safe. `gc` deletes the sidecar before the bytes.
 * - Refs are validated with `isArtifactRef` before any path is built: only `sha256:` + 64
 *   lowercase hex digits ever reach the filesystem.
 *
 * Several processes may share a directory for `put` and `resolve` (content addressing plus
 * atomic renames make that safe); pin counts and `gc` are coordinated within one process only,
 * so let one process own `pin`/`unpin`/`gc` for a directory.
 */
import { mkdir, readdir, readFile, stat as statFile, unlink } from "node:fs/promises";
import { join, resolve as resolvePath } from "node:path";
import {
  ChainRuntimeError,
  isChainRuntimeError,
  sha256Hex,
  type ArtifactRef,
  type BlobGcOptions,
  type BlobGcResult,
  type BlobMeta,
  type BlobStat,
  type BlobStore,
} from "../kernel/index.ts";
import { checkBlobMeta, gcCutoff, hexToRef, refToHex, toBlobBytes } from "./check-blob-args.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { isTempFileName, syncDirectory, writeFileAtomic } from "./write-file-atomic.ts";

/** Directory a {@link FileBlobStore} uses when none is given, relative to the working directory. */
export const DEFAULT_BLOB_DIR = ".isochain/blobs";

/**
 * Orphan bytes and temp files (left by a crash, or a write in flight in another process) are
 * removed by `gc` only once they are at least this old, whatever `olderThanMs` says.
 */
export const ORPHAN_GRACE_MS = 60_000;

/** Options of a {@link FileBlobStore}. */
export interface FileBlobStoreOptions {
  /**
   * Root directory of the store; created on the first `put`. A relative path is resolved
   * against `process.cwd()` when the store is constructed.
   * @defaultValue `".isochain/blobs"` ({@link DEFAULT_BLOB_DIR})
   */
  readonly dir?: string;
  /** The clock that stamps `createdAt` and judges ages in `gc`, for tests. @defaultValue `Date.now` */
  readonly now?: () => number;
}

const SIDECAR_SUFFIX = ".meta.json";
const SIDECAR_VERSION = 1;
const HEX_NAME = /^[0-9a-f]{64}$/;
const SHARD_NAME = /^[0-9a-f]{2}$/;

interface Sidecar {
  readonly version: 1;
  readonly ref: ArtifactRef;
  readonly bytes: number;
  readonly mimeType: string;
  readonly name?: string;
  readonly createdAt: number;
  readonly pins: number;
}

/**
 * A {@link BlobStore} on the local filesystem: content-addressed, crash-safe, pins persisted.
 * See the module comment for the layout and the concurrency rules.
 *
 * Errors: a malformed ref throws `ChainRuntimeError` `ARTIFACT_REF_INVALID` (before touching the
 * filesystem); `resolve`/`pin` of an absent ref throw `ARTIFACT_NOT_FOUND`; any I/O failure or a
 * corrupt sidecar throws `STORE_FAILED` with the fs error as `cause`; bad arguments throw
 * `ARGUMENT_INVALID`.
 */
export class FileBlobStore implements BlobStore {
  /** Absolute root directory of the store. */
  readonly dir: string;
  readonly #now: () => number;
  readonly #lock = new KeyedLock();

  /** @param options - see {@link FileBlobStoreOptions}. */
  constructor(options: FileBlobStoreOptions = {}) {
    const dir = options.dir ?? DEFAULT_BLOB_DIR;
    if (typeof dir !== "string" || dir === "") {
      throw new ChainRuntimeError("ARGUMENT_INVALID", "FileBlobStore dir must be a non-empty string.", {
        details: { argument: "dir" },
      });
    }
    this.dir = resolvePath(dir);
    this.#now = options.now ?? Date.now;
  }

  /**
   * Stores the bytes and returns their ref. Storing bytes already present keeps the first meta,
   * `createdAt` and pins; concurrent puts of the same bytes are safe and return the same ref.
   */
  async put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef> {
    const data = toBlobBytes(bytes);
    const checked = checkBlobMeta(meta);
    const hex = sha256Hex(data);
    const ref = hexToRef(hex);
    return this.#lock.run(hex, () =>
      this.#io("put", ref, async () => {
        const existing = await this.#readSidecar(hex);
        // Present and whole: keep it. Bytes damaged on disk (another size, or other bytes) are
        // written again, which repairs the blob.
        if (existing !== undefined && (await holdsBytes(this.#bytesPath(hex), data))) return ref;
        await mkdir(this.#shardPath(hex), { recursive: true });
        await writeFileAtomic(this.#bytesPath(hex), data);
        const sidecar: Sidecar = {
          version: SIDECAR_VERSION,
          ref,
          bytes: data.byteLength,
          ...(existing ?? checked),
          createdAt: existing?.createdAt ?? this.#now(),
          pins: existing?.pins ?? 0,
        };
        await this.#writeSidecar(hex, sidecar);
        return ref;
      }),
    );
  }

  /**
   * The bytes of `ref`, checked against it: bytes changed on disk are never handed out as the
   * blob. Throws `ARTIFACT_NOT_FOUND` when absent, `STORE_FAILED` when the bytes no longer hash
   * to the ref (a `put` of the original bytes repairs it).
   */
  async resolve(ref: ArtifactRef): Promise<Uint8Array> {
    const hex = refToHex(ref);
    return this.#io("resolve", ref, async () => {
      if ((await this.#readSidecar(hex)) === undefined) throw notFound(ref);
      let buffer: Buffer;
      try {
        buffer = await readFile(this.#bytesPath(hex));
      } catch (error) {
        if (errorCode(error) === "ENOENT") throw notFound(ref);
        throw error;
      }
      if (sha256Hex(buffer) !== hex) {
        throw new ChainRuntimeError("STORE_FAILED", `FileBlobStore: the bytes of ${ref} on disk no longer match it (changed or damaged); put the original bytes again.`, {
          details: { ref, path: this.#bytesPath(hex) },
        });
      }
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    });
  }

  /** What the store knows of `ref`, or `undefined` when absent. */
  async stat(ref: ArtifactRef): Promise<BlobStat | undefined> {
    const hex = refToHex(ref);
    return this.#io("stat", ref, async () => {
      const sidecar = await this.#readSidecar(hex);
      return sidecar === undefined ? undefined : toStat(sidecar);
    });
  }

  /** Adds a pin (persisted). Throws `ARTIFACT_NOT_FOUND` when absent. */
  async pin(ref: ArtifactRef): Promise<void> {
    const hex = refToHex(ref);
    await this.#lock.run(hex, () =>
      this.#io("pin", ref, async () => {
        const sidecar = await this.#readSidecar(hex);
        if (sidecar === undefined) throw notFound(ref);
        await this.#writeSidecar(hex, { ...sidecar, pins: sidecar.pins + 1 });
      }),
    );
  }

  /** Removes one pin (persisted), never below zero; an absent ref is a no-op. */
  async unpin(ref: ArtifactRef): Promise<void> {
    const hex = refToHex(ref);
    await this.#lock.run(hex, () =>
      this.#io("unpin", ref, async () => {
        const sidecar = await this.#readSidecar(hex);
        if (sidecar === undefined || sidecar.pins === 0) return;
        await this.#writeSidecar(hex, { ...sidecar, pins: sidecar.pins - 1 });
      }),
    );
  }

  /**
   * Removes unpinned blobs whose `createdAt <= now - olderThanMs`, never a pinned one. Also
   * deletes orphan bytes and temp files left by crashes once they are older than both
   * `olderThanMs` and {@link ORPHAN_GRACE_MS} (by file mtime); their bytes count in
   * `freedBytes` but not in `removed`, which counts blobs.
   */
  async gc(options?: BlobGcOptions): Promise<BlobGcResult> {
    const cutoff = gcCutoff(options, this.#now);
    const orphanCutoff = Math.min(cutoff, (options?.now ?? this.#now()) - ORPHAN_GRACE_MS);
    return this.#io("gc", undefined, async () => {
      let removed = 0;
      let freedBytes = 0;
      for (const shard of await listDir(this.dir)) {
        if (!SHARD_NAME.test(shard)) continue;
        const shardPath = join(this.dir, shard);
        const names = await listDir(shardPath);
        const sidecars = new Set<string>();
        for (const name of names) {
          if (name.endsWith(SIDECAR_SUFFIX)) sidecars.add(name.slice(0, -SIDECAR_SUFFIX.length));
        }
        for (const name of names) {
          if (isTempFileName(name)) {
            freedBytes += await removeIfOlder(join(shardPath, name), orphanCutoff);
          } else if (sidecars.has(name) && HEX_NAME.test(name)) {
            freedBytes += await this.#lock.run(name, async () => {
              // A sidecar that does not parse is left alone (and reported by stat/resolve), not a
              // reason to stop collecting everything else.
              const sidecar = await this.#readSidecar(name).catch(() => undefined);
              if (sidecar === undefined || sidecar.pins > 0 || sidecar.createdAt > cutoff) return 0;
              await unlinkIfPresent(this.#sidecarPath(name));
              await unlinkIfPresent(this.#bytesPath(name));
              removed += 1;
              return sidecar.bytes;
            });
          } else if (HEX_NAME.test(name)) {
            freedBytes += await this.#lock.run(name, async () =>
              (await exists(this.#sidecarPath(name))) ? 0 : removeIfOlder(this.#bytesPath(name), orphanCutoff),
            );
          }
        }
        await syncDirectory(shardPath);
      }
      return { removed, freedBytes };
    });
  }

  #shardPath(hex: string): string {
    return join(this.dir, hex.slice(0, 2));
  }

  #bytesPath(hex: string): string {
    return join(this.#shardPath(hex), hex);
  }

  #sidecarPath(hex: string): string {
    return join(this.#shardPath(hex), `${hex}${SIDECAR_SUFFIX}`);
  }

  async #readSidecar(hex: string): Promise<Sidecar | undefined> {
    const path = this.#sidecarPath(hex);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT") return undefined;
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw corrupt(path, error);
    }
    if (!isSidecar(parsed, hex)) throw corrupt(path, undefined);
    return parsed;
  }

  async #writeSidecar(hex: string, sidecar: Sidecar): Promise<void> {
    await writeFileAtomic(this.#sidecarPath(hex), `${JSON.stringify(sidecar)}\n`);
  }

  /** Runs `work`, turning any non-ChainRuntimeError failure into `STORE_FAILED`. */
  async #io<T>(operation: string, ref: ArtifactRef | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isChainRuntimeError(error)) throw error;
      const target = ref ?? this.dir;
      throw new ChainRuntimeError("STORE_FAILED", `FileBlobStore ${operation} failed for ${target}: ${describe(error)}`, {
        details: { operation, dir: this.dir, ...(ref === undefined ? {} : { ref }) },
        cause: error,
      });
    }
  }
}

function isSidecar(value: unknown, hex: string): value is Sidecar {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    v.version === SIDECAR_VERSION &&
    v.ref === hexToRef(hex) &&
    Number.isSafeInteger(v.bytes) &&
    (v.bytes as number) >= 0 &&
    typeof v.mimeType === "string" &&
    (v.name === undefined || typeof v.name === "string") &&
    typeof v.createdAt === "number" &&
    Number.isFinite(v.createdAt) &&
    Number.isSafeInteger(v.pins) &&
    (v.pins as number) >= 0
  );
}

function toStat(sidecar: Sidecar): BlobStat {
  const base = {
    ref: sidecar.ref,
    bytes: sidecar.bytes,
    mimeType: sidecar.mimeType,
    createdAt: sidecar.createdAt,
    pins: sidecar.pins,
  };
  return sidecar.name === undefined ? base : { ...base, name: sidecar.name };
}

function notFound(ref: ArtifactRef): ChainRuntimeError {
  return new ChainRuntimeError("ARTIFACT_NOT_FOUND", `No blob for ${ref}.`, { details: { ref } });
}

function corrupt(path: string, cause: unknown): ChainRuntimeError {
  return new ChainRuntimeError("STORE_FAILED", `Blob sidecar ${path} is corrupt.`, {
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

async function exists(path: string): Promise<boolean> {
  return (await fileSize(path)) !== undefined;
}

/** True when the file at `path` holds exactly `data` (compared by size first, then byte for byte). */
async function holdsBytes(path: string, data: Uint8Array): Promise<boolean> {
  if ((await fileSize(path)) !== data.byteLength) return false;
  try {
    return Buffer.from(data.buffer, data.byteOffset, data.byteLength).equals(await readFile(path));
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}

/** The size of the file at `path`, or `undefined` when there is none. */
async function fileSize(path: string): Promise<number | undefined> {
  try {
    return (await statFile(path)).size;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return [];
    throw error;
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

/** Deletes `path` when its mtime is at or before `cutoff`; returns the bytes freed. */
async function removeIfOlder(path: string, cutoff: number): Promise<number> {
  let info;
  try {
    info = await statFile(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return 0;
    throw error;
  }
  if (info.mtimeMs > cutoff) return 0;
  await unlinkIfPresent(path);
  return info.size;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
