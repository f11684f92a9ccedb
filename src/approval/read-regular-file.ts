import { ChainRuntimeError } from "../kernel/index.ts";
import { NOT_REGULAR_FILE, readRegularFile } from "../kernel/read-regular-file.ts";

/**
 * The UTF-8 text of the regular file at `path`, or `undefined` when nothing is there. Read
 * through `readRegularFile` (no blocking open, `fstat` first), so a FIFO planted where the store
 * expects one of its files fails instead of holding a libuv thread forever. A symlink is followed,
 * and what it points to is checked.
 *
 * @throws ChainRuntimeError `STORE_FAILED` when `path` is not a regular file; fs errors other than
 * `ENOENT` as they are.
 */
export async function readRegularFileText(path: string): Promise<string | undefined> {
  try {
    return (await readRegularFile(path, { followLinks: true })).toString("utf8");
  } catch (error) {
    const { code, fileType } = (error ?? {}) as { code?: unknown; fileType?: string };
    if (code === "ENOENT") return undefined;
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
