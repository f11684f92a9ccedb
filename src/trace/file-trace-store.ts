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
 *   hold no descriptors. Between events a writer keeps its file open, within the store's
 *   `maxOpenFiles`: past it, the writer idle longest closes its file and reopens it at its next
 *   event (see `open-file-budget.ts`). A chain this store is still writing is never pruned.
 * - A resume claim is `<dir>/<chainId>.resumed`, created with `O_EXCL` (so of concurrent claims,
 *   in any number of processes on one file system, one creates it) and synced with its folder
 *   before the claim resolves when `fsync` is on.
 * - While a writer holds a chain's log, `<dir>/<chainId>.live` names its process (pid, host and,
 *   on Linux, the process's start time, so a reused pid is not mistaken for it). Only the writer
 *   that created the log takes it: written (atomically, by rename) after the exclusive create and
 *   before the first frame, and removed once the writer has retired after `chain-end`, failed
 *   (it writes nothing more), or the store is closed; a crash leaves it naming a dead process.
 *   `liveWriter` reads it, so a resume or a prune from another process (or another store
 *   object) leaves a running chain alone.
 * - Every file is opened without following a symbolic link and without blocking, and must be a
 *   regular file: a link planted at `<chainId>.trace` is not written through, and a FIFO there
 *   fails instead of hanging the thread pool.
 * - A log never grows past `maxFileBytes` (at most {@link MAX_TRACE_FILE_BYTES}, the most a
 *   trace file is read up to): an append that would is refused (`STORE_FAILED`) and breaks the
 *   writer, so what the store writes it can always load.
 *
 * @module
 */
import { constants, readFileSync } from "node:fs";
import { open, readdir, rename, stat, unlink, type FileHandle } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import { ChainRuntimeError, describeThrown, isChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { makeDirectory } from "../kernel/make-directory.ts";
import { readRegularFile } from "../kernel/read-regular-file.ts";
import { loadTraceFile, MAX_TRACE_FILE_BYTES, readTraceBytes } from "./load-trace-file.ts";
import { assertTraceEvent, isDurableTraceEvent, type TraceEvent } from "./trace-event.ts";
import { type FileHolder, OpenFileBudget } from "./open-file-budget.ts";
import { decodeTraceFrames, encodeTraceFrame, TRACE_FRAME_HEADER_BYTES } from "./trace-frame-codec.ts";
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

/** Every field of {@link FileTraceStoreOptions}. */
const FILE_TRACE_STORE_OPTION_NAMES = optionNames<FileTraceStoreOptions>({ dir: true, fsync: true, maxFileBytes: true, maxOpenFiles: true });

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
  /**
   * Largest a chain's trace file may grow, bytes: an append past it is refused (`STORE_FAILED`)
   * and ends that chain's writer. At most, and by default, {@link MAX_TRACE_FILE_BYTES}, the
   * most a trace file is read up to, so that every trace the store writes can be loaded.
   */
  readonly maxFileBytes?: number;
  /**
   * Trace files held open at once. A chain's writer keeps its file open between events; past
   * this many, the file of the chain idle longest is closed and reopened on its next event, so
   * a burst of chains (thousands queued for a sandbox, each with its log begun) cannot take the
   * process's every file descriptor. Besides these, a chain whose log is being created holds its
   * lease file open for a moment. @defaultValue 128
   */
  readonly maxOpenFiles?: number;
}

/** Default of {@link FileTraceStoreOptions.maxOpenFiles}. */
export const DEFAULT_MAX_OPEN_TRACE_FILES = 128;

/** Extension of trace files. */
export const TRACE_FILE_EXTENSION = ".trace";

/** Extension of resume claims (see {@link FileTraceStore.claimResume}): `<chainId>.resumed` beside the trace. */
export const RESUME_CLAIM_EXTENSION = ".resumed";

/** Extension of live-writer leases (see {@link FileTraceStore.liveWriter}): `<chainId>.live` beside the trace. */
export const LIVE_WRITER_EXTENSION = ".live";

/** Flags every store file is opened with, besides the access mode (not following links, never blocking). */
const SAFE_OPEN_FLAGS = (constants.O_NOFOLLOW ?? 0) | constants.O_NONBLOCK;

/** Largest claim or lease file read, bytes: both are one short line of JSON. */
const MAX_SMALL_FILE_BYTES = 64 * 1024;

/** Traces read at once by `list`. */
const LIST_CONCURRENCY = 16;

/**
 * A trace file larger than this, bytes, is read by `list` alone, one such file at a time: a
 * store of large (or sparse, hand-made) files then costs the memory of one, not of
 * {@link LIST_CONCURRENCY} (16 sparse files of 500 MiB took a listing to 8.3 GB).
 */
const LIST_LARGE_FILE_BYTES = 8 * 1024 * 1024;

/**
 * A {@link TraceStore} on the local file system: `durable`, crash-safe, one file per chain.
 * See the module comment for the write-path invariants.
 */
export class FileTraceStore implements TraceStore {
  /** Always true: appended events outlive the process. */
  readonly durable = true;
  /** The folder of the trace files, absolute. */
  readonly dir: string;
  /** Largest a trace file may grow, bytes (see {@link FileTraceStoreOptions.maxFileBytes}). */
  readonly maxFileBytes: number;
  readonly #fsync: boolean;
  readonly #writers = new Map<string, ChainLogWriter>();
  readonly #openFiles: OpenFileBudget;
  #dirReady: Promise<void> | undefined;
  #closed = false;

  /**
   * Creates the store; nothing touches the disk until the first append or read. A relative `dir`
   * is resolved against the working directory now, so a later `process.chdir` does not move it.
   */
  constructor(options: FileTraceStoreOptions = {}) {
    checkOptionNames("FileTraceStore", options, FILE_TRACE_STORE_OPTION_NAMES);
    const dir = options.dir ?? ".isochain/traces";
    if (typeof dir !== "string" || dir === "") {
      throw new ChainRuntimeError("ARGUMENT_INVALID", "FileTraceStore dir must be a non-empty string.", { details: { argument: "dir" } });
    }
    this.dir = resolve(dir);
    this.#fsync = options.fsync ?? true;
    const maxFileBytes = options.maxFileBytes ?? MAX_TRACE_FILE_BYTES;
    if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 1 || maxFileBytes > MAX_TRACE_FILE_BYTES) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `FileTraceStore maxFileBytes must be an integer from 1 to ${MAX_TRACE_FILE_BYTES}; got ${String(options.maxFileBytes)}.`, {
        details: { argument: "maxFileBytes" },
      });
    }
    this.maxFileBytes = maxFileBytes;
    const maxOpenFiles = options.maxOpenFiles ?? DEFAULT_MAX_OPEN_TRACE_FILES;
    if (!Number.isSafeInteger(maxOpenFiles) || maxOpenFiles < 1) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `FileTraceStore maxOpenFiles must be an integer of at least 1; got ${String(options.maxOpenFiles)}.`, {
        details: { argument: "maxOpenFiles" },
      });
    }
    this.#openFiles = new OpenFileBudget(maxOpenFiles);
  }

  /** Trace files this store holds open now (at most {@link FileTraceStoreOptions.maxOpenFiles}). */
  get openFiles(): number {
    return this.#openFiles.open;
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
    let frame: Buffer;
    try {
      frame = encodeTraceFrame(event);
    } catch (error) {
      // The chain is over even though its end could not be logged: its writer still closes
      // its file and gives up its lease, as after a chain-end.
      if (event.type === "chain-end") this.#writers.get(chainId)?.end();
      throw error;
    }
    const starts = event.type === "chain-start";
    let writer = this.#writers.get(chainId);
    if (writer !== undefined && starts) throw chainIdTakenError(chainId);
    if (writer === undefined) {
      writer = new ChainLogWriter({
        path: this.pathOf(chainId),
        chainId,
        ensureDir: () => this.#ensureDir(),
        dir: this.dir,
        leasePath: this.#leasePath(chainId),
        maxFileBytes: this.maxFileBytes,
        openFiles: this.#openFiles,
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
    const trace = await loadTraceFile(path);
    if (trace.chainId !== chainId) {
      // A copied or renamed file: listing it under the other id would let prune delete the wrong one.
      throw new ChainRuntimeError("TRACE_INVALID", `${path} holds the trace of chain ${trace.chainId}, not of ${chainId} (a copied or renamed file?).`, {
        details: { chainId, path, holds: trace.chainId },
      });
    }
    return trace;
  }

  /**
   * Summaries of the readable traces in `dir`, newest first. Unreadable files are skipped. With
   * a `limit`, only as many traces are loaded as it takes to know the newest ones (see
   * `#newestSummaries`): listing the last few of a large store does not read
   * it all.
   */
  async list(options: TraceListOptions = {}): Promise<TraceSummary[]> {
    orderTraceSummaries([], options); // bad options are refused before any file is read
    const chainIds = await this.chainIds();
    if (options.limit === undefined) return orderTraceSummaries(await this.#summarize(chainIds), options);
    return orderTraceSummaries(await this.#newestSummaries(chainIds, options.limit), options);
  }

  /**
   * The chain ids of the `.trace` files in `dir`, from their names alone (nothing is read, so it
   * is cheap on a store of any size, where {@link list} loads every trace); none when `dir` does
   * not exist. A file listed here may still fail to load. @throws ChainRuntimeError
   * `STORE_FAILED` when the folder cannot be listed.
   */
  async chainIds(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new ChainRuntimeError("STORE_FAILED", `Could not list the trace folder ${this.dir}: ${describeThrown(cause)}.`, {
        cause,
        details: { dir: this.dir },
      });
    }
    return names
      .filter((name) => name.endsWith(TRACE_FILE_EXTENSION))
      .map((name) => name.slice(0, -TRACE_FILE_EXTENSION.length))
      .filter(isTraceChainId);
  }

  /** The summaries of the traces of `chainIds` that load, {@link LIST_CONCURRENCY} at a time; the others are skipped. */
  async #summarize(chainIds: readonly string[]): Promise<TraceSummary[]> {
    const oneLarge = serialQueue();
    const loaded = await inBatches(chainIds, async (chainId) => {
      const summarize = async (): Promise<TraceSummary | undefined> => {
        try {
          return summarizeTrace(await this.load(chainId));
        } catch (error) {
          if (isChainRuntimeError(error)) return undefined; // unreadable or vanished: not listed
          throw error;
        }
      };
      return (await fileSize(this.pathOf(chainId))) > LIST_LARGE_FILE_BYTES ? oneLarge(summarize) : summarize();
    });
    return loaded.filter((summary) => summary !== undefined);
  }

  /**
   * Summaries that hold the `limit` newest readable traces of `chainIds` (the caller orders and
   * cuts them), loading few of them. Each file's creation time is read from its first record
   * alone, a few bytes (see {@link readCreatedAt}); files are then loaded newest first until
   * `limit` loaded traces come before every file left. A file whose first record cannot be read
   * so is loaded whole, as an unlimited list would. So the result is the unlimited list's first
   * `limit`: a trace's creation time is that of its first record, and a file that does not load
   * is skipped either way.
   */
  async #newestSummaries(chainIds: readonly string[], limit: number): Promise<TraceSummary[]> {
    const heads = await inBatches(chainIds, async (chainId) => ({ chainId, createdAt: await readCreatedAt(this.pathOf(chainId)) }));
    const unknown = await this.#summarize(heads.filter((head) => head.createdAt === undefined).map((head) => head.chainId));
    // In list order; a summary with no calls stands in for each, for orderTraceSummaries to sort.
    const known = orderTraceSummaries(heads.flatMap(({ chainId, createdAt }) => (createdAt === undefined ? [] : [{ chainId, createdAt, calls: 0 }])));
    const loaded: TraceSummary[] = [];
    for (let next = 0; next < known.length; ) {
      const candidate = known[next] as TraceSummary;
      // Every loaded file comes before the candidate (they were taken in order); of the others, count those that do.
      const before = loaded.length + unknown.filter((summary) => orderTraceSummaries([candidate, summary])[0] === summary).length;
      if (before >= limit) break;
      const batch = known.slice(next, next + Math.min(LIST_CONCURRENCY, limit - before));
      loaded.push(...(await this.#summarize(batch.map((head) => head.chainId))));
      next += batch.length;
    }
    return [...unknown, ...loaded];
  }

  /**
   * Deletes trace files by age and count (see {@link TracePruneOptions}) with their claims and
   * leases; chains still being written (by this store, another store object or another live
   * process: see {@link liveWriter}) are kept. Unreadable files are left alone.
   * @throws ChainRuntimeError `TRACE_INVALID` for bad options, `STORE_FAILED` when a file cannot be deleted.
   */
  async prune(options: TracePruneOptions): Promise<number> {
    const summaries = await this.list();
    const ended = new Set(summaries.filter((summary) => summary.status !== undefined).map((summary) => summary.chainId));
    let removed = 0;
    for (const chainId of selectTracesToPrune(summaries, options)) {
      if (this.#isWriting(chainId) || (!ended.has(chainId) && (await this.liveWriter(chainId)) !== undefined)) continue;
      if (await removeFile(this.pathOf(chainId), chainId, "trace")) removed += 1;
      await removeFile(this.#claimPath(chainId), chainId, "resume claim");
      await removeFile(this.#leasePath(chainId), chainId, "live-writer lease");
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
    } catch (cause) {
      throw new ChainRuntimeError("STORE_FAILED", `Could not create the trace folder ${this.dir}: ${describeThrown(cause)}`, { cause, details: { chainId } });
    }
    try {
      handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | SAFE_OPEN_FLAGS);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "EEXIST") return readClaim(path, chainId);
      throw new ChainRuntimeError("STORE_FAILED", `Could not record the resume claim of ${chainId}: ${describeThrown(cause)}`, {
        cause,
        details: { chainId, path },
      });
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

  /**
   * Who is still writing `chainId` (see {@link TraceStore.liveWriter}): this store, or the process
   * its `<chainId>.live` lease names while that process lives. A lease from another host, or one
   * that cannot be read, counts as live.
   * @throws ChainRuntimeError `TRACE_INVALID` for a bad chain id.
   */
  async liveWriter(chainId: string): Promise<string | undefined> {
    const path = this.#leasePath(chainId);
    if (this.#isWriting(chainId)) return "this process";
    let text: string;
    try {
      text = await readSmallFile(path);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      return `an unknown writer (its lease ${path} cannot be read: ${describeThrown(cause)})`;
    }
    let lease: Partial<Lease>;
    try {
      lease = JSON.parse(text) as Partial<Lease>;
    } catch {
      return `an unknown writer (its lease ${path} does not parse)`;
    }
    const { pid, host, started } = lease;
    if (!Number.isSafeInteger(pid) || typeof host !== "string") return `an unknown writer (its lease ${path} names no process)`;
    if (host !== hostname()) return `process ${String(pid)} on ${host}`;
    if (pid === process.pid) return "this process";
    return isProcessAlive(pid as number, started) ? `process ${String(pid)}` : undefined;
  }

  #claimPath(chainId: string): string {
    assertTraceChainId(chainId);
    return join(this.dir, `${chainId}${RESUME_CLAIM_EXTENSION}`);
  }

  #leasePath(chainId: string): string {
    assertTraceChainId(chainId);
    return join(this.dir, `${chainId}${LIVE_WRITER_EXTENSION}`);
  }

  #isWriting(chainId: string): boolean {
    const writer = this.#writers.get(chainId);
    return writer !== undefined && !writer.broken;
  }

  #ensureDir(): Promise<void> {
    this.#dirReady ??= makeDirectory(this.dir).then(
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
  /** Where the writer's live-writer lease goes (see the module comment). */
  readonly leasePath: string;
  readonly maxFileBytes: number;
  /** The store's bound on open trace files: a slot is taken before the file is opened, given back once it is closed. */
  readonly openFiles: OpenFileBudget;
  readonly ensureDir: () => Promise<void>;
  /** True when the writer's first frame is `chain-start`: the file must not exist yet. */
  readonly createsLog: boolean;
  /** Called when the writer has closed its file after `chain-end` and has nothing queued. */
  readonly onRetire: (writer: ChainLogWriter) => void;
}

/**
 * The single writer of one chain's file: a queue drained one batch at a time. Between batches it
 * keeps the file open, and lets it go when the store needs the slot (see {@link OpenFileBudget}).
 */
class ChainLogWriter implements FileHolder {
  readonly #options: ChainLogWriterOptions;
  #pending: PendingFrame[] = [];
  #draining: Promise<void> | undefined;
  #handle: FileHandle | undefined;
  #ended = false;
  #dirSyncDue = false;
  /** True once the file was opened (a writer that creates its log does so exclusively, once). */
  #opened = false;
  /** Bytes in the file: what it held when opened, plus what this writer wrote. */
  #size = 0;
  #leased = false;
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
      this.#startDrain();
    });
  }

  /** The chain ended with no chain-end to write: once what is queued is written, retire as after one. */
  end(): void {
    if (this.#failure !== undefined) return;
    this.#ended = true;
    this.#startDrain();
  }

  #startDrain(): void {
    this.#options.openFiles.busy(this);
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
      // Between events: the file may be closed for another chain, and reopened for the next.
      if (this.#handle !== undefined && this.#pending.length === 0) this.#options.openFiles.idle(this);
    });
  }

  /** Closes the file between events (the store needs its slot); the next batch reopens it. */
  async letGo(): Promise<void> {
    if (this.#draining !== undefined || this.#pending.length > 0) return;
    await this.#closeHandle();
  }

  /** Resolves when nothing is queued or being written. Never rejects. */
  async idle(): Promise<void> {
    while (this.#draining !== undefined) await this.#draining;
  }

  async close(): Promise<void> {
    await this.idle();
    await this.#closeHandle();
    await this.#releaseLease();
  }

  async #drain(): Promise<void> {
    for (;;) {
      if (this.#pending.length === 0) {
        if (!this.#ended) return;
        await this.#closeHandle();
        // A result of an abandoned call may have been queued while the file closed.
        if (this.#pending.length > 0) continue;
        await this.#releaseLease();
        if (this.#pending.length > 0) continue;
        this.#options.onRetire(this);
        return;
      }
      const batch = this.#pending;
      this.#pending = [];
      try {
        const handle = await this.#open();
        const bytes = batch.length === 1 ? (batch[0] as PendingFrame).frame : Buffer.concat(batch.map((item) => item.frame));
        if (this.#size + bytes.length > this.#options.maxFileBytes) {
          throw new ChainRuntimeError(
            "STORE_FAILED",
            `The trace of ${this.#options.chainId} would grow past ${this.#options.maxFileBytes} bytes (the store's maxFileBytes): ` +
              `large tool results belong in a blob store (ToolChainTool's blobStore), which keeps only their refs in the trace.`,
            { details: { chainId: this.#options.chainId, bytes: this.#size + bytes.length } },
          );
        }
        await writeAll(handle, bytes);
        this.#size += bytes.length;
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
          : new ChainRuntimeError("STORE_FAILED", `Could not write the trace of ${this.#options.chainId}: ${describeThrown(cause)}`, {
              cause,
              details: { chainId: this.#options.chainId, path: this.#options.path },
            });
        const failed = [...batch, ...this.#pending];
        this.#pending = [];
        for (const item of failed) item.reject(this.#failure);
        await this.#closeHandle();
        // A broken writer writes nothing more: the chain is no longer being written here.
        await this.#releaseLease();
        return;
      }
      for (const item of batch) item.resolve();
    }
  }

  /**
   * Opens the file for appending; when it already holds a torn final frame, cuts it off first.
   * A writer that creates its log opens it exclusively the first time, and only that one, once
   * the file is its own, takes the chain's lease (before its first frame): a run refused the
   * chain id, or a late appender, never touches the lease of the chain's writer.
   */
  async #open(): Promise<FileHandle> {
    if (this.#handle !== undefined) return this.#handle;
    await this.#options.ensureDir();
    const slot = this.#options.openFiles.acquire();
    if (slot !== undefined) await slot;
    let handle: FileHandle;
    try {
      handle = await this.#openFile();
    } catch (cause) {
      this.#options.openFiles.release();
      throw cause;
    }
    this.#handle = handle;
    return handle;
  }

  /** {@link #open}'s file, once it has a slot. */
  async #openFile(): Promise<FileHandle> {
    const reopened = this.#opened;
    const exclusive = this.#options.createsLog && !reopened;
    let handle: FileHandle;
    try {
      if (reopened) {
        // Its own file, let go between events (see letGo): never created again. One removed
        // meanwhile would be a log without its start.
        handle = await open(this.#options.path, constants.O_WRONLY | constants.O_APPEND | SAFE_OPEN_FLAGS);
      } else {
        handle = await this.#openWith(constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (exclusive ? constants.O_EXCL : 0) | SAFE_OPEN_FLAGS);
      }
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === "EEXIST") throw chainIdTakenError(this.#options.chainId);
      if (code === "ENOENT" && reopened) {
        throw new ChainRuntimeError("STORE_FAILED", `The trace file of ${this.#options.chainId} was removed while the chain was being written.`, {
          cause,
          details: { chainId: this.#options.chainId, path: this.#options.path },
        });
      }
      throw cause;
    }
    this.#opened = true;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        throw new ChainRuntimeError("STORE_FAILED", `${this.#options.path} is not a regular file; refusing to append the trace of ${this.#options.chainId} to it.`, {
          details: { chainId: this.#options.chainId, path: this.#options.path },
        });
      }
      // This writer's own file, let go between events (see letGo), ends where it wrote: read as is.
      if (!reopened || stats.size !== this.#size) {
        this.#size = stats.size;
        if (stats.size === 0) {
          this.#dirSyncDue = true;
        } else {
          const { validBytes } = decodeTraceFrames(await readTraceBytes(this.#options.path));
          if (validBytes < stats.size) {
            await handle.truncate(validBytes);
            this.#size = validBytes;
          }
        }
      }
    } catch (cause) {
      await this.#discard(handle, exclusive);
      if (isChainRuntimeError(cause) && cause.code !== "STORE_FAILED") {
        throw new ChainRuntimeError(
          "STORE_FAILED",
          `The trace file of ${this.#options.chainId} is corrupt or not a trace; refusing to append to it.`,
          { cause, details: { chainId: this.#options.chainId, path: this.#options.path } },
        );
      }
      throw cause;
    }
    if (exclusive) {
      try {
        await this.#takeLease();
      } catch (cause) {
        await this.#discard(handle, exclusive);
        throw cause;
      }
    }
    return handle;
  }

  /**
   * Closes a file {@link #openFile} could not finish opening; one it has just created (empty, and
   * this writer's alone) is removed too, so a failed start (out of descriptors for the lease, say)
   * leaves no empty log holding the chain id that no store can load or prune.
   */
  async #discard(handle: FileHandle, created: boolean): Promise<void> {
    await handle.close().catch(() => undefined);
    if (created) await unlink(this.#options.path).catch(() => undefined);
  }

  async #openWith(flags: number): Promise<FileHandle> {
    try {
      return await open(this.#options.path, flags, 0o644);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code !== "ENOENT") throw cause;
      // The folder vanished since the store created it (cleaned up by hand): make it again, once.
      await makeDirectory(this.#options.dir);
      return await open(this.#options.path, flags, 0o644);
    }
  }

  /** Writes this process's lease (see the module comment); called once, by the writer that created the log. */
  async #takeLease(): Promise<void> {
    const lease: Lease = { pid: process.pid, host: hostname(), started: ownStartTime() };
    const temporary = `${this.#options.leasePath}.${process.pid}.tmp`;
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | SAFE_OPEN_FLAGS;
    const handle = await open(temporary, flags, 0o644).catch(async (cause: unknown) => {
      if ((cause as NodeJS.ErrnoException).code !== "ENOENT") throw cause;
      // The folder vanished since the store created it (see #openWith).
      await makeDirectory(this.#options.dir);
      return open(temporary, flags, 0o644);
    });
    try {
      await handle.writeFile(`${JSON.stringify(lease)}\n`);
    } finally {
      await handle.close().catch(() => undefined);
    }
    await rename(temporary, this.#options.leasePath);
    this.#leased = true;
  }

  /** Removes the lease, if this writer took it. Never rejects: a lease left behind names a process that will end. */
  async #releaseLease(): Promise<void> {
    if (!this.#leased) return;
    this.#leased = false;
    await unlink(this.#options.leasePath).catch(() => undefined);
  }

  async #closeHandle(): Promise<void> {
    const handle = this.#handle;
    if (handle === undefined) return;
    this.#handle = undefined;
    this.#options.openFiles.busy(this);
    await handle.close().catch(() => undefined);
    this.#options.openFiles.release();
  }

  #brokenError(): ChainRuntimeError {
    return new ChainRuntimeError(
      "STORE_FAILED",
      `The trace writer of ${this.#options.chainId} failed earlier; no more events are accepted for it.`,
      { cause: this.#failure, details: { chainId: this.#options.chainId } },
    );
  }
}

/** Runs the tasks given to it one after another (each starts when the one before has settled). */
function serialQueue(): <R>(task: () => Promise<R>) => Promise<R> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const run = tail.then(task, task);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** The size of the file at `path`, bytes (a link's target's); 0 when it cannot be read, as the load then says why. */
async function fileSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** `task` of each of `items`, {@link LIST_CONCURRENCY} at a time, in the order of `items`. */
async function inBatches<T, R>(items: readonly T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += LIST_CONCURRENCY) {
    results.push(...(await Promise.all(items.slice(start, start + LIST_CONCURRENCY).map(task))));
  }
  return results;
}

/**
 * When the chain whose log is at `path` was created, read from the log's first record alone
 * (its `chain-start`), or `undefined` when that cannot be read so: not a regular file, a first
 * record that is not whole, does not decode or is not a `chain-start` with a finite time. Opens
 * without blocking and follows a link, as `loadTraceFile` does. Never throws.
 */
async function readCreatedAt(path: string): Promise<number | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size < TRACE_FRAME_HEADER_BYTES || stats.size > MAX_TRACE_FILE_BYTES) return undefined;
    const header = await readAt(handle, TRACE_FRAME_HEADER_BYTES);
    const frameBytes = TRACE_FRAME_HEADER_BYTES + header.readUInt32BE(0);
    if (frameBytes > stats.size) return undefined;
    const [first] = decodeTraceFrames(await readAt(handle, frameBytes)).events;
    if (first?.type !== "chain-start" || !Number.isFinite(first.createdAt)) return undefined;
    return first.createdAt;
  } catch {
    return undefined; // the whole file is loaded instead, and says what is wrong with it if anything
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The first `bytes` bytes of the file; fewer when it is shorter. */
async function readAt(handle: FileHandle, bytes: number): Promise<Buffer> {
  const buffer = Buffer.alloc(bytes);
  let filled = 0;
  while (filled < bytes) {
    const { bytesRead } = await handle.read(buffer, filled, bytes - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
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
      text = await readSmallFile(path);
    } catch (cause) {
      throw new ChainRuntimeError("STORE_FAILED", `Could not read the resume claim of ${chainId}: ${describeThrown(cause)}`, { cause, details: { chainId, path } });
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

/** What a live-writer lease holds. */
interface Lease {
  readonly pid: number;
  readonly host: string;
  /** The process's start time (clock ticks after boot, from /proc), where the platform tells. */
  readonly started?: number | undefined;
}

/**
 * The text of a small regular file, read without following a link or blocking.
 * @throws the file system's error (`ENOENT` and so on), or one with code `ENOTREG` or `EFBIG`.
 */
async function readSmallFile(path: string): Promise<string> {
  return (await readRegularFile(path, { maxBytes: MAX_SMALL_FILE_BYTES })).toString("utf8");
}

/**
 * True while process `pid` runs and, where `started` is known and the platform tells, is the
 * same process that took the lease (not a later one that reused its pid).
 */
function isProcessAlive(pid: number, started: number | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (started === undefined) return true;
  const now = processStartTime(pid);
  return now === undefined || now === started;
}

let ownStart: { readonly started: number | undefined } | undefined;

/** This process's start time (see {@link processStartTime}), read once: it never changes. */
function ownStartTime(): number | undefined {
  ownStart ??= { started: processStartTime(process.pid) };
  return ownStart.started;
}

/** Process `pid`'s start time in clock ticks after boot (Linux `/proc/<pid>/stat`), or `undefined` elsewhere. */
function processStartTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces and parentheses); start time is field 22.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const started = Number(fields[19]);
    return Number.isSafeInteger(started) ? started : undefined;
  } catch {
    return undefined;
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
