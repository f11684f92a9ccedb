/**
 * FileApprovalStore: one JSON file per request, its decision written beside it.
 *
 * ```
 * <dir>/<key>.request.json             { version: 2, nonce, request }
 * <dir>/<key>.<nonce>.decision.json    { version: 2, id, nonce, decision, decidedAt }
 * ```
 *
 * `key` is the request id itself when it is plain (`[A-Za-z0-9_-]`, up to 100 characters), and
 * `~` + sha256(id) otherwise, so no id can name a path outside `dir`. `nonce` is 32 random hex
 * digits naming one *queueing* of the id: drawn when `putPending` finds no request for the id,
 * kept when it replaces one, gone with `remove`.
 *
 * Version-1 files (written before nonces) are still read: `<key>.request.json` `{ version: 1,
 * request }` is a queueing of its own whose decision is `<key>.decision.json` `{ version: 1, id,
 * decision, decidedAt }`; replacing or deciding such a request keeps writing version 1, and a new
 * queueing is always version 2.
 *
 * Invariants:
 * - Requests are written atomically (temp file, fsync, rename, directory fsync).
 * - A decision belongs to one queueing: its file is named by the nonce the request file carries,
 *   and a decision of another nonce counts for nothing. So a re-queued request never starts out
 *   decided, however a `decide`, `remove` and `putPending` interleave, across processes too.
 * - `decide` reads the nonce, then links the decision of that queueing. When the id is removed
 *   (and maybe queued again) in between, the decision lands on a queueing that is gone: the
 *   decide counts as made before the remove, and its file is left to the sweep below. It is not
 *   taken back: a waiter may have read it and removed the request meanwhile, which looks the same
 *   from here. `getDecision` reads the nonce before and after the decision, so it never reports
 *   one that landed after its request was gone.
 * - `remove` deletes the request before its decision: the other order would make a decided
 *   request pending again for a moment, open to a second decision.
 * - A decision is created exclusively (temp file hard-linked into place): the first decision of a
 *   queueing wins across processes too, and a second one sees `APPROVAL_NOT_FOUND`.
 * - A request is pending iff its request file exists and the decision file of its nonce does not.
 * - A file is read only when it is a regular file: opened without blocking and checked with
 *   `fstat` first, so a FIFO or device at a store path fails with `STORE_FAILED` (and is left out
 *   of `listPending`) instead of blocking a libuv thread forever.
 * - `listPending` sweeps, best effort, the temp files and the decisions of gone queueings that are
 *   older than {@link STALE_FILE_MS}: what a process killed mid-write, or a `decide` that lost a
 *   race with `remove`, leaves. A writer stopped for longer than that between writing its temp
 *   file and moving it into place fails with `STORE_FAILED`.
 */
import { randomBytes } from "node:crypto";
import { lstat, readdir, unlink } from "node:fs/promises";
import { join, resolve as resolvePath } from "node:path";
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import {
  ChainRuntimeError,
  isChainRuntimeError,
  sha256Hex,
  type ApprovalDecision,
  type ApprovalRequest,
} from "../kernel/index.ts";
import type { ApprovalStore } from "./approval-store.ts";
import {
  approvalNotPending,
  checkApprovalDecision,
  checkApprovalId,
  checkApprovalRequest,
  compareApprovalRequests,
  isApprovalDecision,
} from "./check-approval-args.ts";
import { clipText } from "../kernel/bound-error-text.ts";
import { makeDirectory } from "../kernel/make-directory.ts";
import { readRegularFileText } from "./read-regular-file.ts";
import { createJsonExclusive, isApprovalTempName, writeJsonAtomic } from "./write-json-atomic.ts";

/** Every field of {@link FileApprovalStoreOptions}. */
const FILE_APPROVAL_STORE_OPTION_NAMES = optionNames<FileApprovalStoreOptions>({ dir: true, now: true });

/** Directory a {@link FileApprovalStore} uses when none is given, relative to the working directory. */
export const DEFAULT_APPROVAL_DIR = ".isochain/approvals";

/** Options of a {@link FileApprovalStore}. */
export interface FileApprovalStoreOptions {
  /**
   * Directory of the store; created on the first write. A relative path is resolved against
   * `process.cwd()` when the store is constructed.
   * @defaultValue `".isochain/approvals"` ({@link DEFAULT_APPROVAL_DIR})
   */
  readonly dir?: string;
  /** The clock that stamps `decidedAt`, for tests. @defaultValue `Date.now` */
  readonly now?: () => number;
}

const REQUEST_SUFFIX = ".request.json";
const DECISION_SUFFIX = ".decision.json";
const PLAIN_ID = /^[A-Za-z0-9_-]{1,100}$/;
/** A file key as {@link FileApprovalStore.fileKey} makes them: what the sweep may touch. */
const FILE_KEY = /^(?:[A-Za-z0-9_-]{1,100}|~[0-9a-f]{64})$/;
const NONCE = /^[0-9a-f]{32}$/;
const FILE_VERSION = 2;
/** Version of the files written before nonces: a request without one, its decision at `<key>.decision.json`. */
const NONCE_LESS_VERSION = 1;

/**
 * Age in ms after which `listPending` deletes a temp file, or the decision of a queueing that is
 * gone (10 minutes): far longer than any write takes between creating its temp file and moving
 * it into place.
 */
const STALE_FILE_MS = 10 * 60 * 1000;

/**
 * A request file as read: the request and the nonce of its queueing, `undefined` for a
 * version-1 file.
 */
interface RequestEntry {
  readonly request: ApprovalRequest;
  readonly nonce: string | undefined;
}

/**
 * A durable {@link ApprovalStore} on the local filesystem, safe to share between processes:
 * a server process can decide what a chain in another process is waiting on, and decisions
 * survive restarts. See the module comment for the layout.
 *
 * Errors: I/O failures, corrupt files and paths that are not regular files (a FIFO, a directory)
 * throw `ChainRuntimeError` `STORE_FAILED` with the cause; `listPending` leaves such a request
 * out and lists the rest. See {@link ApprovalStore} for the rest.
 */
export class FileApprovalStore implements ApprovalStore {
  /** Absolute directory of the store. */
  readonly dir: string;
  readonly #now: () => number;

  /** @param options - see {@link FileApprovalStoreOptions}. */
  constructor(options: FileApprovalStoreOptions = {}) {
    checkOptionNames("FileApprovalStore", options, FILE_APPROVAL_STORE_OPTION_NAMES);
    const dir = options.dir ?? DEFAULT_APPROVAL_DIR;
    if (typeof dir !== "string" || dir === "") {
      throw new ChainRuntimeError("ARGUMENT_INVALID", "FileApprovalStore dir must be a non-empty string.", {
        details: { argument: "dir" },
      });
    }
    this.dir = resolvePath(dir);
    this.#now = options.now ?? Date.now;
  }

  /** The file name stem used for `id` (exposed for tools that inspect the directory). */
  static fileKey(id: string): string {
    return PLAIN_ID.test(id) ? id : `~${sha256Hex(id)}`;
  }

  /**
   * See {@link ApprovalStore.putPending}. Replacing a request keeps its queueing (and so its
   * decision); a request file that cannot be read as one (damaged, or not a regular file) is
   * replaced by a new queueing, so no decision carries over to it.
   */
  async putPending(request: ApprovalRequest): Promise<void> {
    const copy = checkApprovalRequest(request);
    await this.#io("putPending", copy.id, async () => {
      await makeDirectory(this.dir);
      const path = this.#requestPath(copy.id);
      let current: RequestEntry | undefined;
      try {
        current = await this.#readRequestFile(path, copy.id);
      } catch (error) {
        if (!isChainRuntimeError(error)) throw error;
      }
      const nonce = current === undefined ? randomBytes(16).toString("hex") : current.nonce;
      await writeJsonAtomic(
        path,
        nonce === undefined ? { version: NONCE_LESS_VERSION, request: copy } : { version: FILE_VERSION, nonce, request: copy },
      );
    });
  }

  /** See {@link ApprovalStore.listPending}. Also sweeps stale files (see the module comment). */
  async listPending(): Promise<ApprovalRequest[]> {
    return this.#io("listPending", undefined, async () => {
      let names: string[];
      try {
        names = await readdir(this.dir);
      } catch (error) {
        if (errorCode(error) === "ENOENT") return [];
        throw error;
      }
      const present = new Set(names);
      const nonces = new Map<string, string | undefined>();
      const pending: ApprovalRequest[] = [];
      for (const name of names) {
        if (!name.endsWith(REQUEST_SUFFIX) || name.startsWith(".")) continue;
        const key = name.slice(0, -REQUEST_SUFFIX.length);
        // One unreadable request file must not hide the whole queue: it is left out here (a
        // `get` of its id still reports it), and every other request is listed.
        const entry = await this.#readRequestFile(join(this.dir, name), undefined).catch(() => undefined);
        if (entry === undefined) continue;
        nonces.set(key, entry.nonce);
        if (!present.has(decisionFileName(key, entry.nonce))) pending.push(entry.request);
      }
      await this.#sweep(names, present, nonces);
      return pending.sort(compareApprovalRequests);
    });
  }

  /** See {@link ApprovalStore.get}. */
  async get(id: string): Promise<ApprovalRequest | undefined> {
    checkApprovalId(id);
    return this.#io("get", id, async () => (await this.#readRequestFile(this.#requestPath(id), id))?.request);
  }

  /**
   * See {@link ApprovalStore.decide}. The decision is recorded for the queueing of `id` that was
   * current when the request was read: when the id is removed and queued again meanwhile, the
   * decide counts as made before the remove, and the new request stays pending.
   */
  async decide(id: string, decision: ApprovalDecision): Promise<void> {
    checkApprovalId(id);
    checkApprovalDecision(decision);
    await this.#io("decide", id, async () => {
      const requestPath = this.#requestPath(id);
      const entry = await this.#readRequestFile(requestPath, id);
      if (entry === undefined) throw approvalNotPending(id, false);
      const { nonce } = entry;
      const decisionPath = this.#decisionPath(id, nonce);
      const decidedAt = this.#now();
      const created = await createJsonExclusive(
        decisionPath,
        nonce === undefined
          ? { version: NONCE_LESS_VERSION, id, decision, decidedAt }
          : { version: FILE_VERSION, id, nonce, decision, decidedAt },
      );
      if (!created) throw approvalNotPending(id, true);
    });
  }

  /** See {@link ApprovalStore.getDecision}. */
  async getDecision(id: string): Promise<ApprovalDecision | undefined> {
    checkApprovalId(id);
    return this.#io("getDecision", id, async () => {
      const requestPath = this.#requestPath(id);
      const entry = await this.#readRequestFile(requestPath, id);
      if (entry === undefined) return undefined;
      const decision = await this.#readDecisionFile(id, entry.nonce);
      if (decision === undefined) return undefined;
      // Removed (and maybe queued again) since the first read: this decision may have landed after
      // its request was gone, and counts for nothing.
      const after = await this.#readRequestFile(requestPath, id);
      return after !== undefined && after.nonce === entry.nonce ? decision : undefined;
    });
  }

  /** See {@link ApprovalStore.remove}. A request file that cannot be read is removed too. */
  async remove(id: string): Promise<void> {
    checkApprovalId(id);
    await this.#io("remove", id, async () => {
      const requestPath = this.#requestPath(id);
      const entry = await this.#readRequestFile(requestPath, id).catch(() => undefined);
      // Request first: see the module comment.
      await unlinkIfPresent(requestPath);
      // Without a readable request the decision's name is unknown: the sweep deletes it later.
      if (entry !== undefined) await unlinkIfPresent(this.#decisionPath(id, entry.nonce));
    });
  }

  #requestPath(id: string): string {
    return join(this.dir, `${FileApprovalStore.fileKey(id)}${REQUEST_SUFFIX}`);
  }

  #decisionPath(id: string, nonce: string | undefined): string {
    return join(this.dir, decisionFileName(FileApprovalStore.fileKey(id), nonce));
  }

  /** Reads a request file; `undefined` when absent. `expectedId` guards against a mismatched file. */
  async #readRequestFile(path: string, expectedId: string | undefined): Promise<RequestEntry | undefined> {
    const parsed = await readJson(path, "request");
    if (parsed === undefined) return undefined;
    const file = parsed as { version?: unknown; nonce?: unknown; request?: unknown };
    let nonce: string | undefined;
    if (file.version === FILE_VERSION && typeof file.nonce === "string" && NONCE.test(file.nonce)) nonce = file.nonce;
    else if (file.version !== NONCE_LESS_VERSION || file.nonce !== undefined) throw corrupt(path, "request", "its version or nonce is not one this store writes");
    let request: ApprovalRequest;
    try {
      request = checkApprovalRequest(file.request);
    } catch (error) {
      throw corrupt(path, "request", "it holds no valid approval request", error);
    }
    if (expectedId !== undefined && request.id !== expectedId) throw corrupt(path, "request", `it holds the request of another id (${clipText(JSON.stringify(request.id), 80)})`);
    return { request, nonce };
  }

  /** Reads the decision of the queueing `nonce` of `id`; `undefined` when there is none. */
  async #readDecisionFile(id: string, nonce: string | undefined): Promise<ApprovalDecision | undefined> {
    const path = this.#decisionPath(id, nonce);
    const parsed = await readJson(path, "decision");
    if (parsed === undefined) return undefined;
    const file = parsed as { version?: unknown; id?: unknown; nonce?: unknown; decision?: unknown };
    const versionOk = nonce === undefined ? file.version === NONCE_LESS_VERSION : file.version === FILE_VERSION;
    if (!versionOk || file.nonce !== nonce || file.id !== id) throw corrupt(path, "decision", "its version, id or nonce does not match its request's");
    if (!isApprovalDecision(file.decision)) throw corrupt(path, "decision", `its decision ${clipText(JSON.stringify(file.decision) ?? String(file.decision), 40)} is not "approved", "denied" or "skipped"`);
    return file.decision;
  }

  /**
   * Deletes the temp files, and the decisions whose queueing is gone, that are older than
   * {@link STALE_FILE_MS}. `names` is the listing `listPending` read, `nonces` the nonce of each
   * key whose request file it could read. Best effort: any failure leaves the file.
   */
  async #sweep(names: readonly string[], present: ReadonlySet<string>, nonces: ReadonlyMap<string, string | undefined>): Promise<void> {
    for (const name of names) {
      let requestName: string | undefined;
      if (!isApprovalTempName(name)) {
        const decision = parseDecisionFileName(name);
        if (decision === undefined) continue;
        if (nonces.has(decision.key)) {
          if (nonces.get(decision.key) === decision.nonce) continue;
        } else {
          requestName = `${decision.key}${REQUEST_SUFFIX}`;
          // A request that is there but could not be read: leave its files alone.
          if (present.has(requestName)) continue;
        }
      }
      try {
        const stats = await lstat(join(this.dir, name));
        if (Date.now() - stats.mtimeMs < STALE_FILE_MS) continue;
        // Not in the listing: make sure the request is still absent before its decision goes (an
        // lstat that fails otherwise leaves the file, and so does the catch below).
        if (requestName !== undefined) {
          const requestGone = await lstat(join(this.dir, requestName)).then(
            () => false,
            (error: unknown) => errorCode(error) === "ENOENT",
          );
          if (!requestGone) continue;
        }
        await unlink(join(this.dir, name));
      } catch {
        // best effort: a read-only directory, or another process swept it first
      }
    }
  }

  async #io<T>(operation: string, id: string | undefined, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isChainRuntimeError(error)) throw error;
      throw new ChainRuntimeError(
        "STORE_FAILED",
        `FileApprovalStore ${operation} failed${id === undefined ? "" : ` for ${JSON.stringify(id)}`}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { details: { operation, dir: this.dir, ...(id === undefined ? {} : { id }) }, cause: error },
      );
    }
  }
}

/** `<key>.<nonce>.decision.json`, or `<key>.decision.json` for a version-1 queueing. */
function decisionFileName(key: string, nonce: string | undefined): string {
  return nonce === undefined ? `${key}${DECISION_SUFFIX}` : `${key}.${nonce}${DECISION_SUFFIX}`;
}

/** The key and nonce of a decision file name as {@link decisionFileName} makes them, else `undefined`. */
function parseDecisionFileName(name: string): { key: string; nonce: string | undefined } | undefined {
  if (!name.endsWith(DECISION_SUFFIX)) return undefined;
  const stem = name.slice(0, -DECISION_SUFFIX.length);
  const dot = stem.indexOf(".");
  const key = dot === -1 ? stem : stem.slice(0, dot);
  const nonce = dot === -1 ? undefined : stem.slice(dot + 1);
  if (!FILE_KEY.test(key) || (nonce !== undefined && !NONCE.test(nonce))) return undefined;
  return { key, nonce };
}

async function readJson(path: string, kind: ApprovalFileKind): Promise<unknown> {
  const text = await readRegularFileText(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw corrupt(path, kind, "it is not JSON", error);
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

/** The two kinds of file of the store: a queued request, and the decision on it. */
type ApprovalFileKind = "request" | "decision";

/** What repairs a damaged file of each kind (see the module comment for the layout). */
const REPAIR: Readonly<Record<ApprovalFileKind, string>> = {
  request: "Queue the request again (putPending replaces the file; a decision on the old one no longer counts) or remove the file to drop it.",
  decision: "Remove the file, then decide again: a decision file is never overwritten.",
};

function corrupt(path: string, kind: ApprovalFileKind, why: string, cause?: unknown): ChainRuntimeError {
  return new ChainRuntimeError("STORE_FAILED", `Approval ${kind} file ${path} is corrupt: ${why}. ${REPAIR[kind]}`, {
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined;
}
