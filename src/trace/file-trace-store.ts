/**
 * The embedded default {@link TraceStore}: one append-only file per chain, `<dir>/<chainId>.trace`,
 * each record a length-prefixed msgpack frame (see `trace-frame-codec.ts`).
 *
 * Write path, per chain (a `ChainLogWriter`):
 *
 *     append(e1) ─┐                      ┌─ one write() of [f1 f2 f3] ─ fdatasync? ─ resolve e1..e3
 *     append(e2) ─┼─► pending frames ────┤   (group commit: whatever queued while the
 *     append(e3) ─┘                      └─  previous batch was on its way to disk)
 *
 * Invariants:
 * - Frames of one chain reach the file in `append` call order; one writer per chain, one batch
 *   in flight at a time. Chains do not wait on each other.
 * - Every append is written (`write(2)`) before it resolves, so a `kill -9` of this process
 *   loses nothing that was appended. With `fsync` on, a batch holding a `tool-call`,
 *   `tool-result` or `chain-end` is also `fdatasync`'d before it resolves (and the directory
 *   once, after the file is created), so those survive power loss too. Other events
 *   (`chain-start`, `approval-request`) ride along with the next durable batch.
 * - A crash can leave only a torn frame at the end of a file. Readers ignore it; a writer that
 *   reopens the file truncates it first, so new frames never follow garbage.
 * - A failed write or sync breaks that chain's writer: the batch and every later append of that
 *   chain reject with `STORE_FAILED` (a half-written frame must not be followed by more).
 * - On `chain-end` the writer closes its file handle once its queue is empty, so finished chains
 *   hold no descriptors. A chain this store is still writing is never pruned.
 * - A resume claim is `<dir>/<chainId>.resumed`, created with `O_EXCL` (so of concurrent claims,
 *   in any number of processes on one file system, one creates it) and synced with its folder
 *   before the claim resolves when `fsync` is on.
 *
 * @module
 */
import { mkdir, open, readdir, readFile, unlink, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { ChainRuntimeError, isChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { loadTraceFile } from "./load-trace-file.ts";
import { assertTraceEvent, isDurableTraceEvent, type TraceEvent } from "./trace-event.ts";
import { decodeTraceFrames, encodeTraceFrame } from "./trace-frame-codec.ts";
import {
  assertTraceChainId,
  chainIdTakenError,
  isTraceChainId,
  orderTraceSummaries,
  selectTracesToPrune,
  summarizeTrace,
  type TraceListOptions,
  type TracePruneOptions,
  type TraceStore,
  type TraceSummary,
  UNREADABLE_RESUME_CLAIM,
} from "./trace-store.ts";

/** Options of {@link FileTraceStore}. */
export interface FileTraceStoreOptions {
  /** Folder of the trace files; created on the first append. @defaultValue `".isochain/traces"` */
  readonly dir?: string;
  /**
   * `fdatasync` after `tool-call`, `tool-result` and `chain-end` events, so they survive power
   * loss, not just a crash of the process. Turn off only for tests or throwaway runs.
   * @defaultValue true
   */
  readonly fsync?: boolean;
}

/** Extension of trace files. */
export const TRACE_FILE_EXTENSION = ".trace";

/** Extension of resume claims (see {@link FileTraceStore.claimResume}): `<chainId>.resumed` beside the trace. */
export const RESUME_CLAIM_EXTENSION = ".resumed";

/** Traces read at once by `list`. */
const LIST_CONCURRENCY = 16;

/**
 * A {@link TraceStore} on the local file system: `durable`, crash-safe, one file per chain.
 * See the module comment for the write-path invariants.
 */
export class FileTraceStore implements TraceStore {
  /** Always true: appended events outlive the process. */
  readonly durable = true;
  /** The folder of the trace files. */
  readonly dir: string;
  readonly #fsync: boolean;
  readonly #writers = new Map<string, ChainLogWriter>();
  #dirReady: Promise<void> | undefined;
  #closed = false;

  /** Creates the store; nothing touches the disk until the first append or read. */
  constructor(options: FileTraceStoreOptions = {}) {
    const dir = options.dir ?? ".isochain/traces";
    if (typeof dir !== "string" || dir === "") {
      throw new ChainRuntimeError("ARGUMENT_INVALID", "FileTraceStore dir must be a non-empty string.", { details: { argument: "dir" } });
    }
    this.dir = dir;
    this.#fsync = options.fsync ?? true;
  }

  /** Path of the file holding `chainId`'s log. @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id. */
  pathOf(chainId: string): string {
    assertTraceChainId(chainId);
    return join(this.dir, `${chainId}${TRACE_FILE_EXTENSION}`);
  }

  /**
   * Appends one event to the chain's file. Resolves once it is written, and, for durable events
   * with `fsync` on, synced.
   * @throws ChainRuntimeError `TRACE_INVALID` (bad chain id or event), `STORE_FAILED` (store closed,
   * unencodable event, I/O failure, or an earlier failure of this chain's writer).
   */
  async append(chainId: string, event: TraceEvent): Promise<void> {
    assertTraceChainId(chainId);
    assertTraceEvent(event);
    if (this.#closed) throw new ChainRuntimeError("STORE_FAILED", "The trace store is closed.", { details: { chainId } });
    const frame = encodeTraceFrame(event);
    const starts = event.type === "chain-start";
    let writer = this.#writers.get(chainId);
    if (writer !== undefined && starts) throw chainIdTakenError(chainId);
    if (writer === undefined) {
      writer = new ChainLogWriter({
        path: this.pathOf(chainId),
        chainId,
        ensureDir: () => this.#ensureDir(),
        dir: this.dir,
        // A log begins with chain-start in a file of its own: created exclusively, so a chain id
        // with a log already (here or in another process) is refused instead of getting a
        // second chain-start appended, which would leave neither run loadable.
        createsLog: starts,
        onRetire: (retired) => {
          if (this.#writers.get(chainId) === retired) this.#writers.delete(chainId);
        },
      });
      this.#writers.set(chainId, writer);
    }
    return writer.enqueue(frame, this.#fsync && isDurableTraceEvent(event), event.type === "chain-end");
  }

  /**
   * Loads a chain's trace, after any appends of it still on their way to the file.
   * @throws ChainRuntimeError `TRACE_NOT_FOUND`, `TRACE_INVALID`, `STORE_FAILED`.
   */
  async load(chainId: string): Promise<ChainTrace> {
    const path = this.pathOf(chainId);
    await this.#writers.get(chainId)?.idle();
    return loadTraceFile(path);
  }

  /** Summaries of the readable traces in `dir`, newest first. Unreadable files are skipped. */
  async list(options: TraceListOptions = {}): Promise<TraceSummary[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return orderTraceSummaries([], options);
      throw new ChainRuntimeError("STORE_FAILED", `Could not list the trace folder ${this.dir}.`, {
        cause,
        details: { dir: this.dir },
      });
    }
    const chainIds = names
      .filter((name) => name.endsWith(TRACE_FILE_EXTENSION))
      .map((name) => name.slice(0, -TRACE_FILE_EXTENSION.length))
      .filter(isTraceChainId);
    const summaries: TraceSummary[] = [];
    for (let start = 0; start < chainIds.length; start += LIST_CONCURRENCY) {
      const batch = chainIds.slice(start, start + LIST_CONCURRENCY);
      const loaded = await Promise.all(
        batch.map(async (chainId) => {
          try {
            return summarizeTrace(await this.load(chainId));
          } catch (error) {
            if (isChainRuntimeError(error)) return undefined; // unreadable or vanished: not listed
            throw error;
          }
        }),
      );
      for (const summary of loaded) if (summary !== undefined) summaries.push(summary);
    }
    return orderTraceSummaries(summaries, options);
  }

  /**
   * Deletes trace files by age and count (see {@link TracePruneOptions}); chains this store is
   * still writing are kept. Unreadable files are left alone.
   * @throws ChainRuntimeError `TRACE_INVALID` for bad options, `STORE_FAILED` when a file cannot be deleted.
   */
  async prune(options: TracePruneOptions): Promise<number> {
    const victims = selectTracesToPrune(await this.list(), options).filter((chainId) => !this.#isWriting(chainId));
    let removed = 0;
    for (const chainId of victims) {
      if (await removeFile(this.pathOf(chainId), chainId, "trace")) removed += 1;
      await removeFile(this.#claimPath(chainId), chainId, "resume claim");
    }
    return removed;
  }

  /**
   * Claims the resume of `chainId` for `resumedAs` (see {@link TraceStore.claimResume}) by
   * creating `<dir>/<chainId>.resumed` exclusively; an existing claim is read and its holder
   * returned.
   * @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id, `STORE_FAILED` when the store
   * is closed or the file cannot be created or read.
   */
  async claimResume(chainId: string, resumedAs: string): Promise<string | undefined> {
    const path = this.#claimPath(chainId);
    assertTraceChainId(resumedAs);
    if (this.#closed) throw new ChainRuntimeError("STORE_FAILED", "The trace store is closed.", { details: { chainId } });
    let handle: FileHandle;
    try {
      await this.#ensureDir();
      handle = await open(path, "wx");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "EEXIST") return readClaim(path, chainId);
      throw new ChainRuntimeError("STORE_FAILED", `Could not record the resume claim of ${chainId}.`, { cause, details: { chainId, path } });
    }
    try {
      await handle.writeFile(`${JSON.stringify({ resumedAs, claimedAt: Date.now() })}\n`);
      if (this.#fsync) await handle.datasync();
    } catch (cause) {
      // The claim stands (the file exists and may be read as unreadable): never undone here.
      throw new ChainRuntimeError("STORE_FAILED", `Could not write the resume claim of ${chainId}.`, { cause, details: { chainId, path } });
    } finally {
      await handle.close().catch(() => undefined);
    }
    if (this.#fsync) {
      try {
        await syncDirectory(this.dir);
      } catch (cause) {
        throw new ChainRuntimeError("STORE_FAILED", `Could not sync the trace folder ${this.dir}.`, { cause, details: { chainId } });
      }
    }
    return undefined;
  }

  /** Waits for every pending append, then closes all files. Later appends throw `STORE_FAILED`; reads still work. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#writers.values()].map((writer) => writer.close()));
    this.#writers.clear();
  }

  #claimPath(chainId: string): string {
    assertTraceChainId(chainId);
    return join(this.dir, `${chainId}${RESUME_CLAIM_EXTENSION}`);
  }

  #isWriting(chainId: string): boolean {
    const writer = this.#writers.get(chainId);
    return writer !== undefined && !writer.broken;
  }

  #ensureDir(): Promise<void> {
    this.#dirReady ??= mkdir(this.dir, { recursive: true }).then(
      () => undefined,
      (cause: unknown) => {
        this.#dirReady = undefined; // let a later append try again
        throw cause;
      },
    );
    return this.#dirReady;
  }
}

interface PendingFrame {
  readonly frame: Buffer;
  readonly durable: boolean;
  readonly resolve: () => void;
  readonly reject: (error: ChainRuntimeError) => void;
}

interface ChainLogWriterOptions {
  readonly path: string;
  readonly chainId: string;
  readonly dir: string;
  readonly ensureDir: () => Promise<void>;
  /** True when the writer's first frame is `chain-start`: the file must not exist yet. */
  readonly createsLog: boolean;
  /** Called when the writer has closed its file after `chain-end` and has nothing queued. */
  readonly onRetire: (writer: ChainLogWriter) => void;
}

/** The single writer of one chain's file: a queue drained one batch at a time. */
class ChainLogWriter {
  readonly #options: ChainLogWriterOptions;
  #pending: PendingFrame[] = [];
  #draining: Promise<void> | undefined;
  #handle: FileHandle | undefined;
  #ended = false;
  #dirSyncDue = false;
  /** True once the file was opened (a writer that creates its log does so exclusively, once). */
  #opened = false;
  #failure: ChainRuntimeError | undefined;

  constructor(options: ChainLogWriterOptions) {
    this.#options = options;
  }

  /** True after a write or sync failed: every later append rejects. */
  get broken(): boolean {
    return this.#failure !== undefined;
  }

  enqueue(frame: Buffer, durable: boolean, ends: boolean): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#brokenError());
    if (ends) this.#ended = true;
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ frame, durable, resolve, reject });
      this.#draining ??= this.#drain().finally(() => {
        this.#draining = undefined;
      });
    });
  }

  /** Resolves when nothing is queued or being written. Never rejects. */
  async idle(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  async close(): Promise<void> {
    await this.idle();
    await this.#closeHandle();
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#pending.length === 0) {
        if (!this.#ended) return;
        await this.#closeHandle();
        // A result of an abandoned call may have been queued while the file closed.
        if (this.#pending.length > 0) continue;
        this.#options.onRetire(this);
        return;
      }
      const batch = this.#pending;
      this.#pending = [];
      try {
        const handle = await this.#open();
        const bytes = batch.length === 1 ? (batch[0] as PendingFrame).frame : Buffer.concat(batch.map((item) => item.frame));
        await writeAll(handle, bytes);
        if (batch.some((item) => item.durable)) {
          await handle.datasync();
          if (this.#dirSyncDue) {
            await syncDirectory(this.#options.dir);
            this.#dirSyncDue = false;
          }
        }
      } catch (cause) {
        this.#failure = isChainRuntimeError(cause)
          ? cause
          : new ChainRuntimeError("STORE_FAILED", `Could not write the trace of ${this.#options.chainId}.`, {
              cause,
              details: { chainId: this.#options.chainId, path: this.#options.path },
            });
        const failed = [...batch, ...this.#pending];
        this.#pending = [];
        for (const item of failed) item.reject(this.#failure);
        await this.#closeHandle();
        return;
      }
      for (const item of batch) item.resolve();
    }
  }

  /**
   * Opens the file for appending; when it already holds a torn final frame, cuts it off first.
   * A writer that creates its log opens it exclusively the first time.
   */
  async #open(): Promise<FileHandle> {
    if (this.#handle !== undefined) return this.#handle;
    await this.#options.ensureDir();
    const flags = this.#options.createsLog && !this.#opened ? "ax" : "a";
    let handle: FileHandle;
    try {
      handle = await this.#openWith(flags);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "EEXIST") throw chainIdTakenError(this.#options.chainId);
      throw cause;
    }
    this.#opened = true;
    try {
      const { size } = await handle.stat();
      if (size === 0) {
        this.#dirSyncDue = true;
      } else {
        const { validBytes } = decodeTraceFrames(await readFile(this.#options.path));
        if (validBytes < size) await handle.truncate(validBytes);
      }
    } catch (cause) {
      await handle.close().catch(() => undefined);
      if (isChainRuntimeError(cause)) {
        throw new ChainRuntimeError(
          "STORE_FAILED",
          `The trace file of ${this.#options.chainId} is corrupt; refusing to append to it.`,
          { cause, details: { chainId: this.#options.chainId, path: this.#options.path } },
        );
      }
      throw cause;
    }
    this.#handle = handle;
    return handle;
  }

  async #openWith(flags: string): Promise<FileHandle> {
    try {
      return await open(this.#options.path, flags);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== "ENOENT") throw cause;
      // The folder vanished since the store created it (cleaned up by hand): make it again, once.
      await mkdir(this.#options.dir, { recursive: true });
      return await open(this.#options.path, flags);
    }
  }

  async #closeHandle(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close().catch(() => undefined);
  }

  #brokenError(): ChainRuntimeError {
    return new ChainRuntimeError(
      "STORE_FAILED",
      `The trace writer of ${this.#options.chainId} failed earlier; no more events are accepted for it.`,
      { cause: this.#failure, details: { chainId: this.#options.chainId } },
    );
  }
}

/** Deletes `path`; false when it was not there. @throws ChainRuntimeError `STORE_FAILED` otherwise. */
async function removeFile(path: string, chainId: string, what: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw new ChainRuntimeError("STORE_FAILED", `Could not delete the ${what} of ${chainId}.`, { cause, details: { chainId } });
  }
}

/** Reads of a claim that does not parse yet (its creator may still be writing it), and the pause between them. */
const CLAIM_READ_TRIES = 5;
const CLAIM_READ_PAUSE_MS = 10;

/**
 * The holder of the claim in `path`, or {@link UNREADABLE_RESUME_CLAIM} when it still does not
 * parse after a few reads (cut short by a crash between creating and writing it).
 * @throws ChainRuntimeError `STORE_FAILED` when it cannot be read at all.
 */
async function readClaim(path: string, chainId: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (cause) {
      throw new ChainRuntimeError("STORE_FAILED", `Could not read the resume claim of ${chainId}.`, { cause, details: { chainId, path } });
    }
    try {
      const holder = (JSON.parse(text) as { resumedAs?: unknown }).resumedAs;
      if (isTraceChainId(holder)) return holder;
    } catch {
      // not written yet, or never will be
    }
    if (attempt >= CLAIM_READ_TRIES) return UNREADABLE_RESUME_CLAIM;
    await new Promise((resolve) => setTimeout(resolve, CLAIM_READ_PAUSE_MS));
  }
}

async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}

/** fsync a directory so a newly created file's entry is durable. A no-op where the platform refuses. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EPERM" && code !== "EINVAL" && code !== "EBADF" && code !== "EACCES") throw cause;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
