/**
 * Calls into esbuild's asynchronous API, which talks to one long-lived esbuild process over
 * pipes and never blocks the calling thread (its synchronous API waits on a worker thread with
 * `Atomics.wait` and no timeout: a worker that could not start hangs the thread for good).
 *
 * - A process that could not start leaves nothing behind in esbuild: the next call starts one.
 *   esbuild reads the new child's stdin before it listens for the child's `error` event, so when
 *   the spawn fails (EMFILE) it throws a TypeError, and the `error` Node emits a tick later would
 *   end the host as an uncaught exception: {@link callEsbuild} listens for it and reports it.
 * - A process that died (killed from outside) is kept by esbuild, refusing every later call
 *   ("The service is no longer running"): the first caller to hear so stops it (`esbuild.stop()`,
 *   the only way to drop it), so the next call starts a new one. Nothing is stopped otherwise: a
 *   call in flight on a live process that is stopped never settles, and the stop also ends the
 *   worker of esbuild's synchronous API (started again by its next call).
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
/** The process esbuild's calls went to: counted up when a dead one is stopped. */
let generation = 0;

/** esbuild, loaded on first use (a sandbox child, handed the built prelude, never loads it). */
export function esbuild(): typeof Esbuild {
  loaded ??= require("esbuild") as typeof Esbuild;
  return loaded;
}

/**
 * `call(esbuild)`, for a call into esbuild's asynchronous API; see the module comment for what
 * happens when esbuild's process cannot start or has died. A failure in which esbuild did not
 * read the input is passed on with its reason: the spawn's error, or that the process is out of
 * file descriptors (esbuild then fails finding its own binary, and says it was installed for
 * another platform).
 */
export async function callEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>): Promise<T> {
  const started = generation;
  const spawned: SpawnWatch = {};
  try {
    return await withSpawnWatched(spawned, () => call(esbuild()));
  } catch (error) {
    if (esbuildMessages(error) !== undefined) throw error;
    if (started === generation && /^The service (?:is no longer running|was stopped)/u.test(messageOf(error))) {
      // Dead, and not stopped since this call began: no call can be in flight on it.
      generation++;
      void esbuild()
        .stop()
        .catch(() => undefined);
    }
    // A spawn that failed says why a tick after esbuild has thrown for it.
    if (spawned.child !== undefined) await new Promise<void>((resolve) => process.nextTick(resolve));
    const reason = spawned.error ?? outOfDescriptors();
    if (reason !== undefined) throw new Error(`esbuild's process did not start: ${reason.message}`, { cause: error });
    throw error;
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
