/**
 * makeDirectory: `mkdir -p` that always ends.
 *
 * Node's `mkdir(path, { recursive: true })` never settles on some file systems: where creating a
 * folder fails with `ENOENT` although its parent exists (`/proc/<name>` on Linux), it creates the
 * parent (which exists), tries again, and loops for good on a threadpool thread, holding a core
 * and keeping the process alive. A store told to live there would hang its caller forever.
 *
 * Invariants:
 * - Each folder on the way is tried at most twice (once going up, once coming down), so the call
 *   ends after at most 2 x (depth of `dir`) mkdir calls, with the error of the one that failed.
 * - Same outcome as a recursive mkdir otherwise: folders that exist are fine (a link to one
 *   too), `EEXIST` when `dir` is something else, `ENOTDIR` when a part of it is a file, and a
 *   concurrent call creating the same folders is no error.
 * - Kept out of the kernel's barrel (import it by path) like `readRegularFile`; it imports only
 *   `node:fs` and `node:path`.
 * @module
 */
import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/** Creates `dir` and the folders above it that are missing; resolves once `dir` is a folder. */
export async function makeDirectory(dir: string): Promise<void> {
  const missing: string[] = [];
  let current = resolve(dir);
  // Up: find the deepest folder that exists (or is created at the first try).
  for (;;) {
    try {
      await mkdir(current);
      break;
    } catch (error) {
      const code = codeOf(error);
      if (code === "EEXIST") {
        // What is there must be a folder: at `dir` itself, anything else is the caller's error.
        if (!(await isDirectory(current))) throw error;
        break;
      }
      const parent = dirname(current);
      if (code !== "ENOENT" || parent === current) throw error;
      missing.push(current);
      current = parent;
    }
  }
  // Down: each missing folder once. ENOENT again here (its parent exists) is final: no retry.
  for (let i = missing.length - 1; i >= 0; i--) {
    const path = missing[i] as string;
    try {
      await mkdir(path);
    } catch (error) {
      if (codeOf(error) !== "EEXIST" || !(await isDirectory(path))) throw error;
    }
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}
