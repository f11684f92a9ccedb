import { ChainRuntimeError } from "../kernel/index.ts";
import { FILE_TOO_LARGE, NOT_REGULAR_FILE, readRegularFile } from "../kernel/read-regular-file.ts";

/**
 * Largest approval file read, bytes: 64 MiB, past any request this store writes (a call's
 * arguments are at most 8 MiB, and JSON at most six times that). A bigger file was not written by
 * it, and read whole (a 1.2 GB one planted there took the host to 1.3 GB on every poll).
 */
export const MAX_APPROVAL_FILE_BYTES = 64 * 1024 * 1024;

/**
 * The UTF-8 text of the regular file at `path`, or `undefined` when nothing is there. Read
 * through `readRegularFile` (no blocking open, `fstat` first), so a FIFO planted where the store
 * expects one of its files fails instead of holding a libuv thread forever. A symlink is followed,
 * and what it points to is checked.
 *
 * @throws ChainRuntimeError `STORE_FAILED` when `path` is not a regular file or is over
 * {@link MAX_APPROVAL_FILE_BYTES}; fs errors other than `ENOENT` as they are.
 */
export async function readRegularFileText(path: string): Promise<string | undefined> {
  try {
    return (await readRegularFile(path, { followLinks: true, maxBytes: MAX_APPROVAL_FILE_BYTES })).toString("utf8");
  } catch (error) {
    const { code, fileType, bytes } = (error ?? {}) as { code?: unknown; fileType?: string; bytes?: number };
    if (code === "ENOENT") return undefined;
    if (code === FILE_TOO_LARGE) {
      throw new ChainRuntimeError(
        "STORE_FAILED",
        `Approval file ${path} is ${bytes ?? "too many"} bytes, over the ${MAX_APPROVAL_FILE_BYTES} an approval file is read up to: the store did not write it. Remove it.`,
        { details: { path, bytes } },
      );
    }
    if (code === NOT_REGULAR_FILE) {
      throw new ChainRuntimeError(
        "STORE_FAILED",
        `Approval file ${path} is a ${fileType ?? "special file"}, not a regular file; the approval store reads only files it wrote. Remove it.`,
        { details: { path, fileType } },
      );
    }
    throw error;
  }
}
