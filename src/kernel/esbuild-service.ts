/**
 * Calls into esbuild's asynchronous API, which talks to one long-lived esbuild process over
 * pipes and never blocks the calling thread (its synchronous API waits on a worker thread with
 * `Atomics.wait` and no timeout: a worker that could not start hangs the thread for good).
 *
 * A process that could not start (the host out of file descriptors) or that died refuses every
 * later call of esbuild's: the first caller to hear of it stops it, so the next call starts a new
 * one. A failure of an older process, heard late, stops nothing.
 * @module
 */
import type * as ChildProcess from "node:child_process";
import { createRequire } from "node:module";
import type * as Esbuild from "esbuild";

const require = createRequire(import.meta.url);
/** The module object esbuild spawns its process through (`require("child_process")`). */
const childProcess = require("node:child_process") as typeof ChildProcess;

let loaded: typeof Esbuild | undefined;
/** Counts stops: a call stops the process only if none was stopped since the call began. */
let generation = 0;
/** The last failure of a process esbuild spawned, until a caller reports it. */
let lastSpawnError: Error | undefined;

/** esbuild, loaded on first use (a sandbox child, handed the built prelude, never loads it). */
export function esbuild(): typeof Esbuild {
  loaded ??= require("esbuild") as typeof Esbuild;
  return loaded;
}

/**
 * `call(esbuild)`; when it fails without esbuild having read the input (no `errors` listed: the
 * process did not start or is gone), esbuild's process is stopped before the failure is passed on.
 */
export async function callEsbuild<T>(call: (api: typeof Esbuild) => Promise<T>): Promise<T> {
  const started = generation;
  try {
    return await withSpawnFailuresHeard(() => call(esbuild()));
  } catch (error) {
    if (esbuildMessages(error) !== undefined) throw error;
    // A spawn that failed says why a tick after esbuild has thrown for it.
    await new Promise<void>((resolve) => process.nextTick(resolve));
    const spawnError = lastSpawnError;
    lastSpawnError = undefined;
    if (started === generation) {
      generation++;
      await esbuild()
        .stop()
        .catch(() => undefined);
    }
    if (spawnError !== undefined) throw new Error(`esbuild's process did not start: ${spawnError.message}`, { cause: spawnError });
    throw error;
  }
}

/** The messages of a failure in which esbuild read the input and refused it; `undefined` for any other. */
export function esbuildMessages(error: unknown): Esbuild.Message[] | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const errors = (error as { errors?: unknown }).errors;
  return Array.isArray(errors) && errors.length > 0 ? (errors as Esbuild.Message[]) : undefined;
}

/**
 * `start()`, with a listener on the `error` event of every child process it spawns. esbuild starts
 * its process inside the API call that first needs it, and reads the child's stdin before it
 * listens for the child's `error`: when the spawn fails (EMFILE), there is no stdin, esbuild
 * throws (a failure the caller gets), and the `error` event Node emits a tick later, heard by no
 * one, would end the host as an uncaught exception. Only the synchronous part of `start` runs with
 * the listener installed: nothing else can spawn meanwhile.
 */
function withSpawnFailuresHeard<T>(start: () => T): T {
  const spawn = childProcess.spawn;
  childProcess.spawn = function spawnHeard(this: unknown, ...args: unknown[]) {
    const child = (spawn as (...spawnArgs: unknown[]) => ChildProcess.ChildProcess).apply(this, args);
    child.on("error", noteSpawnError);
    return child;
  } as typeof spawn;
  try {
    return start();
  } finally {
    childProcess.spawn = spawn;
  }
}

/** Kept for the caller of the failed call to report (see {@link withSpawnFailuresHeard}). */
function noteSpawnError(error: Error): void {
  lastSpawnError = error;
}
