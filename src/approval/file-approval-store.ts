/**
 * FileApprovalStore: one JSON file per request, its decision written beside it.
 *
 * ```
 * <dir>/<key>.request.json    { version: 1, request }
 * <dir>/<key>.decision.json   { version: 1, id, decision, decidedAt }
 * ```
 *
 * `key` is the request id itself when it is plain (`[A-Za-z0-9_-]`, up to 100 characters), and
 * `~` + sha256(id) otherwise, so no id can name a path outside `dir`.
 *
 * Invariants:
 * - Requests are written atomically (temp file, fsync, rename, directory fsync).
 * - A decision is created exclusively (temp file hard-linked into place): the first decision
 *   wins across processes too, and a second one sees `APPROVAL_NOT_FOUND`.
 * - A request is pending iff its request file exists and its decision file does not.
 * - A decision counts only beside its request: a `decide` racing a `remove` can leave a decision
 *   file without a request; `getDecision` ignores it and the next `putPending` (or `remove`) of
 *   that id deletes it, so a re-queued request never starts out decided.
 */
import { mkdir, readdir, readFile, unlink } from "node:fs/promises";
import { join, resolve as resolvePath } from "node:path";
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
import { createJsonExclusive, writeJsonAtomic } from "./write-json-atomic.ts";

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
const FILE_VERSION = 1;

/**
 * A durable {@link ApprovalStore} on the local filesystem, safe to share between processes:
 * a server process can decide what a chain in another process is waiting on, and decisions
 * survive restarts. See the module comment for the layout.
 *
 * Errors: I/O failures and corrupt files throw `ChainRuntimeError` `STORE_FAILED` with the cause;
 * see {@link ApprovalStore} for the rest.
 */
export class FileApprovalStore implements ApprovalStore {
  /** Absolute directory of the store. */
  readonly dir: string;
  readonly #now: () => number;

  /** @param options - see {@link FileApprovalStoreOptions}. */
  constructor(options: FileApprovalStoreOptions = {}) {
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

  /** See {@link ApprovalStore.putPending}. */
  async putPending(request: ApprovalRequest): Promise<void> {
    const copy = checkApprovalRequest(request);
    await this.#io("putPending", copy.id, async () => {
      await mkdir(this.dir, { recursive: true });
      if ((await readJson(this.#requestPath(copy.id))) === undefined) await unlinkIfPresent(this.#decisionPath(copy.id));
      await writeJsonAtomic(this.#requestPath(copy.id), { version: FILE_VERSION, request: copy });
    });
  }

  /** See {@link ApprovalStore.listPending}. */
  async listPending(): Promise<ApprovalRequest[]> {
    return this.#io("listPending", undefined, async () => {
      let names: string[];
      try {
        names = await readdir(this.dir);
      } catch (error) {
        if (errorCode(error) === "ENOENT") return [];
        throw error;
      }
      const decided = new Set(names.filter((n) => n.endsWith(DECISION_SUFFIX)).map((n) => n.slice(0, -DECISION_SUFFIX.length)));
      const pending: ApprovalRequest[] = [];
      for (const name of names) {
        if (!name.endsWith(REQUEST_SUFFIX) || name.startsWith(".")) continue;
        const key = name.slice(0, -REQUEST_SUFFIX.length);
        if (decided.has(key)) continue;
        // One unreadable request file must not hide the whole queue: it is left out here (a
        // `get` of its id still reports it), and every other request is listed.
        const request = await this.#readRequestFile(join(this.dir, name), undefined).catch(() => undefined);
        if (request !== undefined) pending.push(request);
      }
      return pending.sort(compareApprovalRequests);
    });
  }

  /** See {@link ApprovalStore.get}. */
  async get(id: string): Promise<ApprovalRequest | undefined> {
    checkApprovalId(id);
    return this.#io("get", id, () => this.#readRequestFile(this.#requestPath(id), id));
  }

  /** See {@link ApprovalStore.decide}. */
  async decide(id: string, decision: ApprovalDecision): Promise<void> {
    checkApprovalId(id);
    checkApprovalDecision(decision);
    await this.#io("decide", id, async () => {
      if ((await this.#readRequestFile(this.#requestPath(id), id)) === undefined) throw approvalNotPending(id, false);
      const created = await createJsonExclusive(this.#decisionPath(id), {
        version: FILE_VERSION,
        id,
        decision,
        decidedAt: this.#now(),
      });
      if (!created) throw approvalNotPending(id, true);
    });
  }

  /** See {@link ApprovalStore.getDecision}. */
  async getDecision(id: string): Promise<ApprovalDecision | undefined> {
    checkApprovalId(id);
    return this.#io("getDecision", id, async () => {
      const path = this.#decisionPath(id);
      const parsed = await readJson(path);
      if (parsed === undefined) return undefined;
      const file = parsed as { version?: unknown; id?: unknown; decision?: unknown };
      if (file.version !== FILE_VERSION || file.id !== id || !isApprovalDecision(file.decision)) throw corrupt(path);
      if ((await readJson(this.#requestPath(id))) === undefined) return undefined;
      return file.decision;
    });
  }

  /** See {@link ApprovalStore.remove}. */
  async remove(id: string): Promise<void> {
    checkApprovalId(id);
    await this.#io("remove", id, async () => {
      await unlinkIfPresent(this.#requestPath(id));
      await unlinkIfPresent(this.#decisionPath(id));
    });
  }

  #requestPath(id: string): string {
    return join(this.dir, `${FileApprovalStore.fileKey(id)}${REQUEST_SUFFIX}`);
  }

  #decisionPath(id: string): string {
    return join(this.dir, `${FileApprovalStore.fileKey(id)}${DECISION_SUFFIX}`);
  }

  /** Reads a request file; `undefined` when absent. `expectedId` guards against a mismatched file. */
  async #readRequestFile(path: string, expectedId: string | undefined): Promise<ApprovalRequest | undefined> {
    const parsed = await readJson(path);
    if (parsed === undefined) return undefined;
    const file = parsed as { version?: unknown; request?: unknown };
    if (file.version !== FILE_VERSION) throw corrupt(path);
    let request: ApprovalRequest;
    try {
      request = checkApprovalRequest(file.request);
    } catch (error) {
      throw corrupt(path, error);
    }
    if (expectedId !== undefined && request.id !== expectedId) throw corrupt(path);
    return request;
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

async function readJson(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw corrupt(path, error);
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
  }
}

function corrupt(path: string, cause?: unknown): ChainRuntimeError {
  return new ChainRuntimeError("STORE_FAILED", `Approval file ${path} is corrupt.`, {
    details: { path },
    ...(cause === undefined ? {} : { cause }),
  });
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined;
}
