import { randomUUID } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Suffix of the temp files {@link writeFileAtomic} writes before renaming them into place. */
export const TEMP_FILE_SUFFIX = ".tmp";

/**
 * Writes `data` to `path` so that a reader (or a crash) sees either the old file or the whole
 * new one, never a torn write: the bytes go to a temp file in the same directory
 * (`.<name>.<uuid>.tmp`), are fsynced, renamed over `path`, and the directory is fsynced so the
 * rename itself is durable. On failure the temp file is removed and the fs error is rethrown
 * as is (callers wrap it in their own `STORE_FAILED`).
 */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const temp = tempPathFor(path);
  try {
    const handle = await open(temp, "wx", 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** A fresh temp path beside `path`, named so {@link isTempFileName} recognises it. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomUUID()}${TEMP_FILE_SUFFIX}`);
}

/** True for a file name {@link tempPathFor} makes. */
export function isTempFileName(name: string): boolean {
  return name.startsWith(".") && name.endsWith(TEMP_FILE_SUFFIX);
}

/**
 * fsyncs a directory so a rename or unlink in it survives a power loss. Platforms that cannot
 * open or sync a directory (Windows) are ignored: there the rename is as durable as it gets.
 */
export async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // EISDIR / EPERM / EINVAL on platforms without directory fsync: nothing more to do.
  } finally {
    await handle?.close().catch(() => {});
  }
}
