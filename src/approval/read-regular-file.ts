import { constants, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { ChainRuntimeError } from "../kernel/index.ts";

/**
 * The UTF-8 text of the regular file at `path`, or `undefined` when nothing is there.
 *
 * The file is opened with `O_NONBLOCK` and checked with `fstat` before anything is read: a FIFO
 * planted where a store expects one of its files would otherwise hold the open (and the libuv
 * threadpool thread running it) forever, so four of them stall every fs call of the process,
 * and a device such as `/dev/zero` never ends. A symlink is followed, and what it points to is
 * checked.
 *
 * The same pattern as `readTraceBytes` (src/trace/load-trace-file.ts) and the blob store's read
 * (src/artifacts/): one shared helper can replace the three.
 *
 * @throws ChainRuntimeError `STORE_FAILED` when `path` is not a regular file; fs errors other than
 * `ENOENT` as they are.
 */
export async function readRegularFileText(path: string): Promise<string | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) {
      throw new ChainRuntimeError(
        "STORE_FAILED",
        `Approval file ${path} is a ${describeFileType(stats)}, not a regular file; the approval store reads only files it wrote. Remove it.`,
        { details: { path, fileType: describeFileType(stats) } },
      );
    }
    return await handle.readFile("utf8");
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function describeFileType(stats: Stats): string {
  if (stats.isFIFO()) return "FIFO";
  if (stats.isDirectory()) return "directory";
  if (stats.isCharacterDevice()) return "character device";
  if (stats.isBlockDevice()) return "block device";
  if (stats.isSocket()) return "socket";
  return "special file";
}
