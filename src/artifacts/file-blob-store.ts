/**
 * FileBlobStore: the embedded, content-addressed blob store.
 *
 * Layout (`hex` = sha256 of the bytes, `ab` = its first two digits):
 *
 * ```
 * <dir>/ab/<hex>             the bytes, exactly as put; modified time: the latest put
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
 *   (`put`, `pin`, `unpin`, and `gc`'s check-then-delete) runs under a per-blob lock shared by
 *   every FileBlobStore of the process on the same directory (keyed by the blob's resolved
 *   path), so any number of concurrent promises, on one instance or several, is safe.
 *   `gc` deletes the sidecar before the bytes.
 * - A blob's age (`stat().createdAt`, and what `gc({ olderThanMs })` judges) is its latest put:
 *   the later of the sidecar's `createdAt` (the first put) and the bytes' modified time, which
 *   every put sets to its own time (a put of bytes already present only touches it, under that
 *   lock). So a gc queued behind a put never takes the ref the put just handed out, pinned next
 *   or never, however long ago its bytes were first stored. The touch leaves the sidecar alone:
 *   a put in another process cannot undo a pin of this one (see below).
 * - Refs are validated with `isArtifactRef` before any path is built: only `sha256:` + 64
 *   lowercase hex digits ever reach the filesystem.
 * - The store reads only what it writes: its files are opened without blocking and without
 *   following a link, and read only once fstat says "regular file" (`readRegularFile`), so a
 *   FIFO, device, directory or link where a blob or sidecar should be is an error, never a hang.
 * - It never writes or deletes through a link: `put`, `pin` and `unpin` refuse a shard that is
 *   not a real directory, and `gc` skips it; `gc` deletes only regular files it could have
 *   written, and steps over anything else in the tree (a stray entry never stops a collection).
 *   Reads (`resolve`, `stat`) do not check the shard: what they return is checked against the
 *   ref either way, and the check would cost the hot path a syscall.
 *
 * Several processes may share a directory for `put` and `resolve` (content addressing plus
 * atomic renames make that safe); pin counts and `gc` are coordinated within one process only,
 * so let one process own `pin`/`unpin`/`gc` for a directory.
 */
import type { Dirent } from "node:fs";
import { lstat, lutimes, mkdir, readdir, unlink } from "node:fs/promises";
import { join, resolve as resolvePath } from "node:path";
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
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
import { makeDirectory } from "../kernel/make-directory.ts";
import { FILE_TOO_LARGE, NOT_REGULAR_FILE, readRegularFile } from "../kernel/read-regular-file.ts";
import { checkBlobMeta, gcCutoff, hexToRef, refToHex, toBlobBytes } from "./check-blob-args.ts";
import { KeyedLock } from "./keyed-lock.ts";
import { isTempFileName, syncDirectory, writeFileAtomic } from "./write-file-atomic.ts";

/** Every field of {@link FileBlobStoreOptions}. */
const FILE_BLOB_STORE_OPTION_NAMES = optionNames<FileBlobStoreOptions>({ dir: true, now: true });

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
   * against `process.cwd()` when the store is constructed. Stores of one process given the same
   * resolved path share their per-blob lock; give them the same path, not two names (links) for
   * one directory.
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
/**
 * Errors of one entry that `gc` steps over (the entry is not one the store wrote, or changed
 * under it): a file where a shard directory should be, a directory where a file should be.
 */
const SKIPPED_ENTRY_ERRORS = new Set(["ENOENT", "ENOTDIR", "EISDIR", "EPERM"]);

/**
 * The per-blob lock of every FileBlobStore in the process, keyed by the blob's bytes path (the
 * resolved root plus the hex): two instances on one directory serialise on the same keys, so
 * neither loses the other's pins. Keys are dropped once idle, so it never grows with use.
 */
const blobLocks = new KeyedLock();

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
 * filesystem); `resolve`/`pin` of an absent ref throw `ARTIFACT_NOT_FOUND`; any I/O failure, a
 * corrupt sidecar, or something other than a regular file (a FIFO, a directory, a link) where a
 * blob or sidecar should be, or other than a real directory where `put`/`pin`/`unpin` would write,
 * throws `STORE_FAILED` (with the fs error as `cause` where there is one); bad arguments throw
 * `ARGUMENT_INVALID`. `gc` steps over such entries instead, and counts nothing for them.
 */
export class FileBlobStore implements BlobStore {
  /** Absolute root directory of the store. */
  readonly dir: string;
  readonly #now: () => number;

  /** @param options - see {@link FileBlobStoreOptions}. */
  constructor(options: FileBlobStoreOptions = {}) {
    checkOptionNames("FileBlobStore", options, FILE_BLOB_STORE_OPTION_NAMES);
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
   * Stores the bytes and returns their ref. Storing bytes already present keeps the first meta
   * and the pins, and makes the blob's age count from now (never back): a ref a put has just
   * handed out is never older than any `olderThanMs` of `gc`. Concurrent puts of the same bytes
   * are safe and return the same ref.
   */
  async put(bytes: Uint8Array | string, meta?: BlobMeta): Promise<ArtifactRef> {
    const data = toBlobBytes(bytes);
    const checked = checkBlobMeta(meta);
    const hex = sha256Hex(data);
    const ref = hexToRef(hex);
    return blobLocks.run(this.#bytesPath(hex), () =>
      this.#io("put", ref, async () => {
        // A corrupt sidecar is written again too: put is how a damaged blob is repaired.
        const existing = await this.#readSidecar(hex, true);
        // Read under the lock, so the stamp is no earlier than the clock of any gc queued behind
        // this put: with an olderThanMs above 0, that gc keeps the blob.
        const now = this.#now();
        // Present and whole: keep the bytes and the sidecar, and touch the bytes with this put's
        // time. They may have been stored long ago; the caller holds a fresh ref to them, which a
        // routine gc({ olderThanMs }) must not take (before a pin, or for a ref never pinned).
        // Bytes damaged on disk (another size, other bytes, or not a regular file) are written
        // again, which repairs the blob.
        if (existing !== undefined && (await holdsBytes(this.#bytesPath(hex), data))) {
          await this.#requireShard(hex, { create: false });
          await touchForward(this.#bytesPath(hex), now);
          return ref;
        }
        await this.#requireShard(hex, { create: true });
        await writeFileAtomic(this.#bytesPath(hex), data);
        // The store's clock, not the file system's: the blob's age is counted on one clock.
        await lutimes(this.#bytesPath(hex), now / 1000, now / 1000);
        const sidecar: Sidecar = {
          version: SIDECAR_VERSION,
          ref,
          bytes: data.byteLength,
          ...(existing ?? checked),
          createdAt: existing?.createdAt ?? now,
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
      const sidecar = await this.#readSidecar(hex);
      if (sidecar === undefined) throw notFound(ref);
      let buffer: Buffer;
      try {
        // Never more than the blob's size: a file grown on disk is refused before it is read.
        buffer = await readRegularFile(this.#bytesPath(hex), { maxBytes: sidecar.bytes });
      } catch (error) {
        if (errorCode(error) === "ENOENT") throw notFound(ref);
        if (errorCode(error) === FILE_TOO_LARGE) throw changedOnDisk(ref, this.#bytesPath(hex));
        if (errorCode(error) === NOT_REGULAR_FILE) {
          throw new ChainRuntimeError("STORE_FAILED", `FileBlobStore: the bytes of ${ref} at ${this.#bytesPath(hex)} are ${describeNotRegular(error)}; remove it and put the original bytes again.`, {
            details: { ref, path: this.#bytesPath(hex) },
            cause: error,
          });
        }
        throw error;
      }
      if (sha256Hex(buffer) !== hex) throw changedOnDisk(ref, this.#bytesPath(hex));
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    });
  }

  /** What the store knows of `ref`, or `undefined` when absent. */
  async stat(ref: ArtifactRef): Promise<BlobStat | undefined> {
    const hex = refToHex(ref);
    return this.#io("stat", ref, async () => {
      const sidecar = await this.#readSidecar(hex);
      return sidecar === undefined ? undefined : toStat(sidecar, await this.#lastPut(hex, sidecar));
    });
  }

  /** Adds a pin (persisted). Throws `ARTIFACT_NOT_FOUND` when absent. */
  async pin(ref: ArtifactRef): Promise<void> {
    const hex = refToHex(ref);
    await blobLocks.run(this.#bytesPath(hex), () =>
      this.#io("pin", ref, async () => {
        const sidecar = await this.#readSidecar(hex);
        if (sidecar === undefined) throw notFound(ref);
        await this.#requireShard(hex, { create: false });
        await this.#writeSidecar(hex, { ...sidecar, pins: sidecar.pins + 1 });
      }),
    );
  }

  /** Removes one pin (persisted), never below zero; an absent ref is a no-op. */
  async unpin(ref: ArtifactRef): Promise<void> {
    const hex = refToHex(ref);
    await blobLocks.run(this.#bytesPath(hex), () =>
      this.#io("unpin", ref, async () => {
        const sidecar = await this.#readSidecar(hex);
        if (sidecar === undefined || sidecar.pins === 0) return;
        await this.#requireShard(hex, { create: false });
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
        // Only real directories named like a shard: a file named `00`, or a link (which would
        // carry the deletes out of the store), is not the store's.
        if (!shard.isDirectory() || !SHARD_NAME.test(shard.name)) continue;
        const shardPath = join(this.dir, shard.name);
        const entries = await skipEntryErrors(() => listDir(shardPath), []);
        const sidecars = new Set<string>();
        for (const entry of entries) {
          if (entry.name.endsWith(SIDECAR_SUFFIX)) sidecars.add(entry.name.slice(0, -SIDECAR_SUFFIX.length));
        }
        for (const entry of entries) {
          // The store writes regular files only: a directory, FIFO or link named like one of
          // them is someone else's, and neither removed nor counted.
          if (!entry.isFile()) continue;
          const name = entry.name;
          if (isTempFileName(name)) {
            freedBytes += await skipEntryErrors(() => removeIfOlder(join(shardPath, name), orphanCutoff), 0);
          } else if (sidecars.has(name) && HEX_NAME.test(name)) {
            freedBytes += await blobLocks.run(this.#bytesPath(name), () =>
              skipEntryErrors(async () => {
                // A sidecar that does not parse (or is not a file) is left alone (and reported by
                // stat/resolve), not a reason to stop collecting everything else.
                const sidecar = await this.#readSidecar(name).catch(() => undefined);
                if (sidecar === undefined || sidecar.pins > 0 || (await this.#lastPut(name, sidecar)) > cutoff) return 0;
                await unlinkIfPresent(this.#sidecarPath(name));
                await unlinkIfPresent(this.#bytesPath(name));
                removed += 1;
                return sidecar.bytes;
              }, 0),
            );
          } else if (HEX_NAME.test(name)) {
            freedBytes += await blobLocks.run(this.#bytesPath(name), () =>
              skipEntryErrors(async () => ((await exists(this.#sidecarPath(name))) ? 0 : removeIfOlder(this.#bytesPath(name), orphanCutoff)), 0),
            );
          }
        }
        await syncDirectory(shardPath);
      }
      return { removed, freedBytes };
    });
  }

  /** When the blob was last put (see the module comment): the later of its sidecar's `createdAt` and its bytes' modified time. */
  async #lastPut(hex: string, sidecar: Sidecar): Promise<number> {
    try {
      return Math.max(sidecar.createdAt, (await lstat(this.#bytesPath(hex))).mtimeMs);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return sidecar.createdAt;
      throw error;
    }
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

  /**
   * Makes sure the shard of `hex` is a real directory before anything is written in it, creating
   * it (and the root) when absent and `create` is set. Anything else there (a file, a link that
   * would carry the write out of the store) throws `STORE_FAILED`: the store never replaces it.
   * Costs one lstat where `mkdir -p` cost a mkdir and a stat; the first put in a shard, one
   * lstat and one mkdir.
   */
  async #requireShard(hex: string, options: { readonly create: boolean }): Promise<void> {
    const path = this.#shardPath(hex);
    let stats;
    try {
      stats = await lstat(path);
    } catch (error) {
      if (errorCode(error) !== "ENOENT" || !options.create) throw error;
      try {
        await mkdir(path).catch(async (mkdirError: unknown) => {
          if (errorCode(mkdirError) !== "ENOENT") throw mkdirError;
          await makeDirectory(this.dir); // the first put of the store
          await mkdir(path);
        });
        return;
      } catch (mkdirError) {
        if (errorCode(mkdirError) !== "EEXIST") throw mkdirError;
        stats = await lstat(path); // made meanwhile, by another put or process: check it
      }
    }
    if (stats.isDirectory()) return;
    const what = stats.isSymbolicLink() ? "a symbolic link" : stats.isFile() ? "a file" : "a special file (FIFO, socket or device)";
    throw new ChainRuntimeError(
      "STORE_FAILED",
      `FileBlobStore: ${path} is ${what}, not a directory the store made; it never writes through one. Move it out of ${this.dir}; the store makes the directory again on the next put.`,
      { details: { dir: this.dir, path } },
    );
  }

  /** The blob's sidecar, `undefined` when absent (or, with `corruptAsAbsent`, unreadable as one). */
  async #readSidecar(hex: string, corruptAsAbsent = false): Promise<Sidecar | undefined> {
    const path = this.#sidecarPath(hex);
    let text: string;
    try {
      text = (await readRegularFile(path, { maxBytes: MAX_SIDECAR_BYTES })).toString("utf8");
    } catch (error) {
      if (errorCode(error) === "ENOENT") return undefined;
      if (errorCode(error) === FILE_TOO_LARGE) {
        if (corruptAsAbsent) return undefined;
        throw corrupt(path, error);
      }
      if (errorCode(error) === NOT_REGULAR_FILE) {
        throw new ChainRuntimeError("STORE_FAILED", `Blob sidecar ${path} is ${describeNotRegular(error)}; remove it and put the blob's bytes again.`, {
          details: { path },
          cause: error,
        });
      }
      throw error;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      if (corruptAsAbsent) return undefined;
      throw corrupt(path, error);
    }
    if (!isSidecar(parsed, hex)) {
      if (corruptAsAbsent) return undefined;
      throw corrupt(path, undefined);
    }
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

function toStat(sidecar: Sidecar, lastPut: number): BlobStat {
  const base = {
    ref: sidecar.ref,
    bytes: sidecar.bytes,
    mimeType: sidecar.mimeType,
    createdAt: lastPut,
    pins: sidecar.pins,
  };
  return sidecar.name === undefined ? base : { ...base, name: sidecar.name };
}

function notFound(ref: ArtifactRef): ChainRuntimeError {
  return new ChainRuntimeError("ARTIFACT_NOT_FOUND", `No blob for ${ref}.`, { details: { ref } });
}

/** A sidecar is one short line of JSON; anything far larger is not one. */
const MAX_SIDECAR_BYTES = 64 * 1024;

function changedOnDisk(ref: ArtifactRef, path: string): ChainRuntimeError {
  return new ChainRuntimeError("STORE_FAILED", `FileBlobStore: the bytes of ${ref} on disk no longer match it (changed or damaged); put the original bytes again.`, {
    details: { ref, path },
  });
}

function corrupt(path: string, cause: unknown): ChainRuntimeError {
  return new ChainRuntimeError("STORE_FAILED", `Blob sidecar ${path} is corrupt; put the blob's bytes again to rewrite it.`, {
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Sets the modified time of the file at `path` (never a link's target) to `at`, epoch ms, unless it is already as late. */
async function touchForward(path: string, at: number): Promise<void> {
  if ((await lstat(path)).mtimeMs < at) await lutimes(path, at / 1000, at / 1000);
}

/** True when anything (even a link or a FIFO) is at `path`; never opens it. */
async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}

/**
 * True when `path` is a regular file holding exactly `data`. A bigger file is refused before a
 * byte is read; a FIFO, a directory or a link is not whole bytes (and is never opened for long).
 */
async function holdsBytes(path: string, data: Uint8Array): Promise<boolean> {
  let held: Buffer;
  try {
    held = await readRegularFile(path, { maxBytes: data.byteLength });
  } catch (error) {
    const code = errorCode(error);
    if (code === "ENOENT" || code === NOT_REGULAR_FILE || code === FILE_TOO_LARGE) return false;
    throw error;
  }
  return held.equals(data);
}

async function listDir(path: string): Promise<Dirent[]> {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (error) {
    if (errorCode(error) === "ENOENT") return [];
    throw error;
  }
}

/** Runs `work` for one gc entry; an error of {@link SKIPPED_ENTRY_ERRORS} gives `fallback`. */
async function skipEntryErrors<T>(work: () => Promise<T>, fallback: T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (SKIPPED_ENTRY_ERRORS.has(errorCode(error) ?? "")) return fallback;
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

/**
 * Deletes `path` when it is a regular file with an mtime at or before `cutoff`; returns the bytes
 * freed. Anything else there (a directory, a FIFO, a link) is not the store's and stays.
 */
async function removeIfOlder(path: string, cutoff: number): Promise<number> {
  let info;
  try {
    info = await lstat(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return 0;
    throw error;
  }
  if (!info.isFile() || info.mtimeMs > cutoff) return 0;
  await unlinkIfPresent(path);
  return info.size;
}

/** "a FIFO, not a regular file" and the like, from a `readRegularFile` `ENOTREG` error. */
function describeNotRegular(error: unknown): string {
  const fileType = (error as { fileType?: unknown }).fileType;
  return `${typeof fileType === "string" ? `a ${fileType}` : "something else"}, not a regular file the store wrote`;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
