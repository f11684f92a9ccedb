/**
 * Calls into esbuild's asynchronous API, which talks to one long-lived esbuild process over
 * pipes and never blocks the calling thread (its synchronous API waits on a worker thread with
 * `Atomics.wait` and no timeout: a worker that could not start hangs the thread for good).
 *
 * - The asynchronous calls go to a copy of esbuild's module of their own ({@link asyncEsbuild}),
 *   so stopping its process never touches the worker of the synchronous API (`esbuild()`).
 * - A call may be bounded in time (`timeoutMs`): esbuild's time grows with the square of the
 *   messages it reports (20 000 redeclarations of one `let`, 180 KB, took its process 11 s; one
 *   64 KB line of duplicate keys, 30 s and 4 GB of host memory for the messages' copies of the
 *   line), and nothing in esbuild stops it. Past the bound the process is stopped (the only way
 *   to end its work) and the call rejects with {@link EsbuildTimeoutError}; the other calls in
 *   flight on that process run again on a new one, as if they had just been made. Only esbuild's
 *   time counts: an answer that came while the host's thread was held past the bound is taken.
 * - An answer is bounded in size ({@link MAX_ESBUILD_ANSWER_BYTES}): each of esbuild's messages
 *   carries a copy of its whole line, and esbuild's module buffers an answer whole before it
 *   decodes it on the host's thread, so thousands of errors on a long line make hundreds of MB
 *   of host memory well within the time bound (150 redeclarations on one 750 KB line: a 107 MB
 *   answer, 590 MiB of host memory at its peak). The size is read from the head of the answer as
 *   its first bytes come: past the bound the process is stopped before the rest is read. The call
 *   rejects with {@link EsbuildAnswerTooLargeError} when it was the only one in flight; otherwise
 *   the calls in flight run again one at a time (calls made meanwhile wait behind them), so the
 *   one the answer was for comes alone; a call that hears of two such answers rejects too.
 * - A process that could not start leaves nothing behind in esbuild: the next call starts one.
 *   esbuild reads the new child's stdin before it listens for the child's `error` event, so when
 *   the spawn fails (EMFILE) it throws a TypeError, and the `error` Node emits a tick later would
 *   end the host as an uncaught exception: {@link callEsbuild} listens for it and reports it.
 * - A process that died (killed from outside) is kept by esbuild, refusing every later call
 *   ("The service is no longer running"): the first caller to hear so stops it, so the next
 *   call starts a new one. A call in flight on a process that is stopped never settles in
 *   esbuild: each call races its process's stop, so none is left waiting on one.
 * @module
 */
import type * as ChildProcess from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { devNull } from "node:os";
import type * as Os from "node:os";
import { join } from "node:path";
import type * as Esbuild from "esbuild";

const require = createRequire(import.meta.url);
/** The module object esbuild spawns its process through (`require("child_process")`). */
const childProcess = require("node:child_process") as typeof ChildProcess;
/** The module object esbuild asks for its temporary folder (`require("os").tmpdir()`). */
const os = require("node:os") as typeof Os;

let loaded: typeof Esbuild | undefined;
let loadedForAsync: typeof Esbuild | undefined;

/** esbuild, loaded on first use (a sandbox child, handed the built prelude, never loads it); for its synchronous API. */
export function esbuild(): typeof Esbuild {
  loaded ??= require("esbuild") as typeof Esbuild;
  return loaded;
}

/**
 * A second copy of esbuild's module (evaluated afresh, outside the require cache), for the
 * asynchronous calls: its process can be stopped without ending the synchronous API's worker.
 */
function asyncEsbuild(): typeof Esbuild {
  if (loadedForAsync !== undefined) return loadedForAsync;
  const path = require.resolve("esbuild");
  const shared = require.cache[path];
  delete require.cache[path];
  try {
    loadedForAsync = require(path) as typeof Esbuild;
  } finally {
    if (shared === undefined) delete require.cache[path];
    else require.cache[path] = shared;
  }
  return loadedForAsync;
}

/**
 * Why a process was stopped, as its calls in flight hear it: `oversized` for an answer past
 * {@link MAX_ESBUILD_ANSWER_BYTES} while other calls were in flight too (any of them may have
 * caused it), `oversized-alone` when the one call in flight did.
 */
type StopCause = "stopped" | "oversized" | "oversized-alone";

/**
 * The process the asynchronous calls go to now: the calls in flight on it are told when it is
 * stopped (each listens only while it is in flight, so nothing holds a finished call's result).
 */
interface ServiceTerm {
  /** Told when the process is stopped (see {@link StopCause}); one listener per call in flight on it. */
  readonly onStop: Set<(cause: StopCause) => void>;
  stop(oversized?: boolean): void;
  /** The process, once a call of this term spawned it. */
  child?: ChildProcess.ChildProcess;
  /** The folder of this process's temporary files, made when esbuild first asks for one (see {@link withTempFolder}). */
  tempFolder?: string | undefined;
}

let term: ServiceTerm | undefined;

function currentTerm(): ServiceTerm {
  if (term !== undefined) return term;
  const created: ServiceTerm = {
    onStop: new Set(),
    stop: (oversized = false) => {
      if (term !== created) return;
      term = undefined;
      void asyncEsbuild()
        .stop()
        .catch(() => undefined);
      const cause: StopCause = !oversized ? "stopped" : created.onStop.size === 1 ? "oversized-alone" : "oversized";
      for (const listener of created.onStop) listener(cause);
      created.onStop.clear();
      removeTempFolder(created);
    },
  };
  term = created;
  return created;
}

/**
 * Stops the process of the asynchronous calls, as a call past its bound does: calls in flight on
 * it run again on a new one, and the next call starts one. For tests that need it gone.
 */
export function stopEsbuildService(): void {
  currentTerm().stop();
}

/** What {@link callEsbuild} rejects with when its call ran past `timeoutMs` (esbuild's process was stopped). */
export class EsbuildTimeoutError extends Error {
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`esbuild did not finish within ${timeoutMs} ms and was stopped`);
    this.name = "EsbuildTimeoutError";
    this.timeoutMs = timeoutMs;
  }
}

/**
 * What {@link callEsbuild} rejects with when esbuild's answer to its call was over
 * {@link MAX_ESBUILD_ANSWER_BYTES} (esbuild's process was stopped before the answer was read):
 * found so with no other call in flight, or twice.
 */
export class EsbuildAnswerTooLargeError extends Error {
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    super(`esbuild's answer was over ${maxBytes} bytes and was not read`);
    this.name = "EsbuildAnswerTooLargeError";
    this.maxBytes = maxBytes;
  }
}

/**
 * Largest answer of esbuild's process to one call read, bytes (see the module comment). The
 * largest a compile legitimately gets, the output and source map of a script of 2 Mi characters
 * or its one error with a copy of its line, stays under 20 MB.
 */
export const MAX_ESBUILD_ANSWER_BYTES = 24 * 1024 * 1024;

/** The bound in force (a test lowers it: {@link setEsbuildAnswerBound}). */
let maxAnswerBytes = MAX_ESBUILD_ANSWER_BYTES;

/** Sets the bound on esbuild's answers, for tests; returns the previous one. Applies to processes started from now on. */
export function setEsbuildAnswerBound(bytes: number): number {
  const previous = maxAnswerBytes;
  maxAnswerBytes = bytes;
  return previous;
}

/**
 * Stops for an oversized answer a call may be in flight for, among other calls, before it
 * rejects: which call the answer was for is not known then, and the calls run again.
 */
const OVERSIZED_STOPS = 2;

/** Options of {@link callEsbuild}. */
export interface CallEsbuildOptions {
  /** Longest the call may take, retries included; past it esbuild's process is stopped. @defaultValue no bound */
  readonly timeoutMs?: number;
}

/**
 * Times a call with no bound of its own runs again because another call's bound stopped the
 * process it was on; a bounded call runs again until its own bound.
 */
const MAX_RESTARTS = 8;

type Attempt<T> = { readonly kind: "done"; readonly value: T } | { readonly kind: "stopped"; readonly cause: StopCause } | { readonly kind: "timeout" };

/**
 * `call(esbuild)`, for a call into esbuild's asynchronous API, within `timeoutMs` when given; see
 * the module comment for the bound and for what happens when esbuild's process cannot start or
 * has died. A failure in which esbuild did not read the input is passed on with its reason: the
 * spawn's error, or that the process is out of file descriptors (esbuild then fails finding its
 * own binary, and says it was installed for another platform).
 * @throws EsbuildTimeoutError past `timeoutMs`.
 * @throws EsbuildAnswerTooLargeError when esbuild's answer to it was too large (see the class).
 */
export async function callEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>, options: CallEsbuildOptions = {}): Promise<T> {
  const { timeoutMs } = options;
  const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
  let oversized = 0;
  for (let restarts = 0; ; restarts++) {
    // Run again after an oversized answer, or made while such calls wait their turn: one at a time.
    const attempt = oversized === 0 && queued === 0 ? await attemptEsbuild(call, deadline) : await withinBound(oneAtATime(() => attemptEsbuild(call, deadline)), deadline);
    if (attempt.kind === "done") return attempt.value;
    if (attempt.kind === "timeout") throw new EsbuildTimeoutError(timeoutMs ?? 0);
    if (attempt.cause === "oversized-alone" || (attempt.cause === "oversized" && ++oversized >= OVERSIZED_STOPS)) {
      throw new EsbuildAnswerTooLargeError(maxAnswerBytes);
    }
    if (deadline === undefined && restarts >= MAX_RESTARTS) throw new Error(`esbuild's process was stopped ${restarts + 1} times while this call ran (other calls ran past their time bound)`);
  }
}

/** The turn of the last call queued by {@link oneAtATime}. */
let retryTurn: Promise<unknown> = Promise.resolve();
/** Calls queued by {@link oneAtATime} that have not finished. */
let queued = 0;

/**
 * `attempt`, after the calls queued here before it have run: the calls stopped together for an
 * oversized answer run again one at a time, and calls made meanwhile wait behind them, so the
 * one the answer was for finds itself alone on the process when it comes again (and rejects),
 * and the others do not hear of it twice.
 */
function oneAtATime<T>(attempt: () => Promise<T>): Promise<T> {
  queued++;
  const turn = retryTurn.then(attempt);
  const done = turn.finally(() => queued--);
  retryTurn = done.catch(() => undefined);
  return done;
}

/** `attempt`, or a timeout at `deadline` if it is still waiting for its turn then (a call sent by then ends by its own timer). */
function withinBound<T>(attempt: Promise<Attempt<T>>, deadline: number | undefined): Promise<Attempt<T>> {
  if (deadline === undefined) return attempt;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<Attempt<T>>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()), { kind: "timeout" })));
  return Promise.race([attempt, bound]).finally(() => clearTimeout(timer));
}

/** One try of {@link callEsbuild} on the current process: its result, or that the process was stopped under it, or the bound passed. */
async function attemptEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>, deadline: number | undefined): Promise<Attempt<T>> {
  // Past its bound before it was sent (it waited for its turn: see oneAtATime): nothing to stop.
  if (deadline !== undefined && performance.now() >= deadline) return { kind: "timeout" };
  const current = currentTerm();
  const spawned: SpawnWatch = {};
  let timer: NodeJS.Timeout | undefined;
  let onStop: ((cause: StopCause) => void) | undefined;
  try {
    let done: Attempt<T> | undefined;
    const racers: Promise<Attempt<T>>[] = [
      withSpawnWatched(spawned, current, () => withTempFolder(current, () => call(asyncEsbuild()))).then((value) => (done = { kind: "done", value })),
      new Promise((resolve) => current.onStop.add((onStop = (cause) => resolve({ kind: "stopped", cause })))),
    ];
    if (deadline !== undefined) {
      racers.push(new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()), { kind: "timeout" }))));
    }
    const attempt = await Promise.race(racers);
    if (attempt.kind === "timeout") {
      // A host thread held past the bound runs the timer before it reads an answer that came
      // meanwhile: one turn of I/O first, so only esbuild's own time counts.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (done !== undefined) return done;
      // Past its bound, the call's work is stopped with the process: nothing else ends it.
      current.stop();
    }
    return attempt;
  } catch (error) {
    if (esbuildMessages(error) !== undefined) throw error;
    // Dead: no call can be in flight on it (they hear the same and stop racing it).
    if (/^The service (?:is no longer running|was stopped)/u.test(messageOf(error))) current.stop();
    // A spawn that failed says why a tick after esbuild has thrown for it.
    if (spawned.child !== undefined) await new Promise<void>((resolve) => process.nextTick(resolve));
    const reason = spawned.error ?? outOfDescriptors();
    if (reason !== undefined) throw new Error(`esbuild's process did not start: ${reason.message}`, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
    if (onStop !== undefined) current.onStop.delete(onStop);
    // The last call in flight on a process that goes on: its temporary folder is empty (esbuild
    // deletes its files once it has read them), and goes too; a later large input makes another.
    if (term === current && current.onStop.size === 0 && current.tempFolder !== undefined) {
      removeFolder(current.tempFolder);
      tempFolders.delete(current.tempFolder);
      current.tempFolder = undefined;
    }
  }
}

/** The messages of a failure in which esbuild read the input and refused it; `undefined` for any other. */
export function esbuildMessages(error: unknown): Esbuild.Message[] | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const errors = (error as { errors?: unknown }).errors;
  return Array.isArray(errors) && errors.length > 0 ? (errors as Esbuild.Message[]) : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What one call spawned, and the error its child emitted, if any. */
interface SpawnWatch {
  child?: ChildProcess.ChildProcess;
  error?: Error;
}

/**
 * `start()`, with a listener on the `error` event of a child process it spawns and a watch on the
 * size of its answers, which stops `owner` past the bound (see the module comment). Only the
 * synchronous part of `start` runs with the listeners installed: nothing else can spawn meanwhile.
 */
function withSpawnWatched<T>(watch: SpawnWatch, owner: ServiceTerm, start: () => T): T {
  const spawn = childProcess.spawn;
  childProcess.spawn = function spawnWatched(this: unknown, ...args: unknown[]) {
    const child = (spawn as (...spawnArgs: unknown[]) => ChildProcess.ChildProcess).apply(this, args);
    watch.child = child;
    owner.child = child;
    child.on("error", (error: Error) => {
      watch.error ??= error;
    });
    watchAnswerSizes(child, maxAnswerBytes, () => owner.stop(true));
    return child;
  } as typeof spawn;
  try {
    return start();
  } finally {
    childProcess.spawn = spawn;
  }
}

/**
 * `start()`, with esbuild's temporary folder (`os.tmpdir()`, asked for while a call is made) that
 * of `owner`'s process, a folder of its own. esbuild passes an input over 1 MiB through a file
 * there, and its process writes the output and map beside it, which esbuild reads and deletes
 * once answered: a process stopped in between left them (8-30 MB a time, measured) in the
 * machine's temporary folder for good. The folder goes with its process (see {@link removeTempFolder}).
 */
function withTempFolder<T>(owner: ServiceTerm, start: () => T): T {
  const tmpdir = os.tmpdir;
  os.tmpdir = function esbuildTempFolder() {
    if (owner.tempFolder === undefined) {
      owner.tempFolder = mkdtempSync(join(tmpdir(), "isochain-esbuild-"));
      tempFolders.add(owner.tempFolder);
    }
    return owner.tempFolder;
  };
  try {
    return start();
  } finally {
    os.tmpdir = tmpdir;
  }
}

/** Temporary folders of esbuild processes not removed yet: removed as this process exits too. */
const tempFolders = new Set<string>();
process.once("exit", () => {
  for (const folder of tempFolders) removeFolder(folder);
});

/** Removes the temporary folder of a stopped process, once the process has exited (it may still be writing there). */
function removeTempFolder(owner: ServiceTerm): void {
  const folder = owner.tempFolder;
  if (folder === undefined) return;
  const child = owner.child;
  const remove = (): void => {
    removeFolder(folder);
    tempFolders.delete(folder);
  };
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) remove();
  else child.once("exit", remove);
}

function removeFolder(folder: string): void {
  try {
    rmSync(folder, { recursive: true, force: true });
  } catch {
    // gone already, or not ours to remove any more
  }
}

/**
 * Reads the head of each packet esbuild's process writes (esbuild's protocol: a 32-bit
 * little-endian length, then that many bytes) and calls `oversized` once, at the first chunk of
 * one longer than `maxBytes`, before the rest of it is sent or buffered.
 */
function watchAnswerSizes(child: ChildProcess.ChildProcess, maxBytes: number, oversized: () => void): void {
  let headBytes = 0;
  let length = 0;
  let bodyLeft = 0;
  let tripped = false;
  child.stdout?.on("data", (chunk: Uint8Array) => {
    let i = 0;
    while (i < chunk.length && !tripped) {
      if (bodyLeft > 0) {
        const taken = Math.min(bodyLeft, chunk.length - i);
        bodyLeft -= taken;
        i += taken;
        continue;
      }
      length += (chunk[i] as number) * 2 ** (8 * headBytes);
      headBytes++;
      i++;
      if (headBytes < 4) continue;
      if (length > maxBytes) {
        tripped = true;
        oversized();
        return;
      }
      bodyLeft = length;
      headBytes = 0;
      length = 0;
    }
  });
}

/** An EMFILE/ENFILE error when this process cannot open one more file now; `undefined` when it can. */
function outOfDescriptors(): Error | undefined {
  try {
    closeSync(openSync(devNull, "r"));
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === "EMFILE" || code === "ENFILE" ? new Error(`this process is out of file descriptors (${code})`) : undefined;
  }
}
