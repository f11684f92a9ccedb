import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { join } from "node:path";
import { ChainRuntimeError, describeThrown } from "../index.ts";
import { makeDirectory } from "../kernel/make-directory.ts";

/**
 * Creates the folders of the store (`<store>/traces`, `<store>/blobs`, as the file stores would
 * on first use) and checks isochain may write in them, before anything runs. A store that cannot
 * be written would otherwise be found out mid-run: the trace store refuses every tool call
 * (`STORE_FAILED`, since a call not on disk could be repeated by a resume), and the run would
 * end with its calls refused.
 * @throws ChainRuntimeError `CLI_USAGE` naming the store and what is wrong with it.
 */
export async function prepareStore(store: string, folders: readonly ("traces" | "blobs")[]): Promise<void> {
  for (const folder of folders) {
    const dir = join(store, folder);
    try {
      await makeDirectory(dir);
      await access(dir, constants.W_OK | constants.X_OK);
    } catch (error) {
      throw new ChainRuntimeError(
        "CLI_USAGE",
        `The store ${store} cannot be used: ${storeErrorReason(error, dir)}. Pass a folder isochain may write (it is created if missing) with --store DIR.`,
        { cause: error, details: { store, dir } },
      );
    }
  }
}

function storeErrorReason(error: unknown, dir: string): string {
  const { code, path } = (error ?? {}) as { code?: unknown; path?: unknown };
  const where = typeof path === "string" ? path : dir;
  switch (code) {
    case "ENOTDIR":
      return `a part of ${where} is a file, not a folder`;
    case "EEXIST":
      return `${where} is a file, not a folder`;
    case "EACCES":
    case "EPERM":
      return `permission denied on ${where}`;
    case "EROFS":
      return `${where} is on a read-only file system`;
    case "ENOENT":
      // Its parent exists (makeDirectory made or found it): the file system takes no folder there (/proc).
      return `${where} cannot be created: the file system there refuses new folders`;
    default:
      return `${where}: ${describeThrown(error)}`;
  }
}
