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
import { closeSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { devNull } from "node:os";
import type * as Esbuild from "esbuild";

const require = createRequire(import.meta.url);
/** The module object esbuild spawns its process through (`require("child_process")`). */
const childProcess = require("node:child_process") as typeof ChildProcess;

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
 * The process the asynchronous calls go to now: the calls in flight on it are told when it is
 * stopped (each listens only while it is in flight, so nothing holds a finished call's result).
 */
interface ServiceTerm {
  readonly onStop: Set<() => void>;
  stop(): void;
}

let term: ServiceTerm | undefined;

function currentTerm(): ServiceTerm {
  if (term !== undefined) return term;
  const created: ServiceTerm = {
    onStop: new Set(),
    stop: () => {
      if (term !== created) return;
      term = undefined;
      void asyncEsbuild()
        .stop()
        .catch(() => undefined);
      for (const listener of created.onStop) listener();
      created.onStop.clear();
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

type Attempt<T> = { readonly kind: "done"; readonly value: T } | { readonly kind: "stopped" } | { readonly kind: "timeout" };

/**
 * `call(esbuild)`, for a call into esbuild's asynchronous API, within `timeoutMs` when given; see
 * the module comment for the bound and for what happens when esbuild's process cannot start or
 * has died. A failure in which esbuild did not read the input is passed on with its reason: the
 * spawn's error, or that the process is out of file descriptors (esbuild then fails finding its
 * own binary, and says it was installed for another platform).
 * @throws EsbuildTimeoutError past `timeoutMs`.
 */
export async function callEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>, options: CallEsbuildOptions = {}): Promise<T> {
  const { timeoutMs } = options;
  const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
  for (let restarts = 0; ; restarts++) {
    const attempt = await attemptEsbuild(call, deadline);
    if (attempt.kind === "done") return attempt.value;
    if (attempt.kind === "timeout") throw new EsbuildTimeoutError(timeoutMs ?? 0);
    if (deadline === undefined && restarts >= MAX_RESTARTS) throw new Error(`esbuild's process was stopped ${restarts + 1} times while this call ran (other calls ran past their time bound)`);
  }
}

/** One try of {@link callEsbuild} on the current process: its result, or that the process was stopped under it, or the bound passed. */
async function attemptEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>, deadline: number | undefined): Promise<Attempt<T>> {
  const current = currentTerm();
  const spawned: SpawnWatch = {};
  let timer: NodeJS.Timeout | undefined;
  let onStop: (() => void) | undefined;
  try {
    let done: Attempt<T> | undefined;
    const racers: Promise<Attempt<T>>[] = [
      withSpawnWatched(spawned, () => call(asyncEsbuild())).then((value) => (done = { kind: "done", value })),
      new Promise((resolve) => current.onStop.add((onStop = () => resolve({ kind: "stopped" })))),
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
 * `start()`, with a listener on the `error` event of a child process it spawns (see the module
 * comment). Only the synchronous part of `start` runs with the listener installed: nothing else
 * can spawn meanwhile.
 */
function withSpawnWatched<T>(watch: SpawnWatch, start: () => T): T {
  const spawn = childProcess.spawn;
  childProcess.spawn = function spawnWatched(this: unknown, ...args: unknown[]) {
    const child = (spawn as (...spawnArgs: unknown[]) => ChildProcess.ChildProcess).apply(this, args);
    watch.child = child;
    child.on("error", (error: Error) => {
      watch.error ??= error;
    });
    return child;
  } as typeof spawn;
  try {
    return start();
  } finally {
    childProcess.spawn = spawn;
  }
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
