import { randomUUID } from "node:crypto";
import { link, open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Suffix of the temp files written before they are moved into place. */
export const APPROVAL_TEMP_SUFFIX = ".tmp";

/** `.<name of the target file>.<uuid>.tmp`: the names {@link writeTemp} gives, and no others. */
const TEMP_NAME = /^\..+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/**
 * True when `name` (a bare file name) is one of the temp files these writers create: left in
 * the directory only when a process dies between writing and moving it into place.
 */
export function isApprovalTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

/**
 * Writes `value` as JSON to `path` atomically: a temp file in the same directory is written,
 * fsynced and renamed over `path`, then the directory is fsynced. Readers see the old file or
 * the whole new one. fs errors are rethrown as is; the temp file never stays behind.
 */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const temp = await writeTemp(path, value);
  try {
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(path));
}

/**
 * Like {@link writeJsonAtomic} but only when `path` does not exist yet, across processes too:
 * the temp file is hard-linked to `path`, which fails when `path` exists. Returns `false` (and
 * writes nothing) when `path` already existed.
 */
export async function createJsonExclusive(path: string, value: unknown): Promise<boolean> {
  const temp = await writeTemp(path, value);
  try {
    await link(temp, path);
  } catch (error) {
    if ((error as { code?: string }).code === "EEXIST") return false;
    throw error;
  } finally {
    await unlink(temp).catch(() => {});
  }
  await syncDirectory(dirname(path));
  return true;
}

async function writeTemp(path: string, value: unknown): Promise<string> {
  const temp = join(dirname(path), `.${basename(path)}.${randomUUID()}${APPROVAL_TEMP_SUFFIX}`);
  try {
    const handle = await open(temp, "wx", 0o644);
    try {
      await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  return temp;
}

async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // platforms without directory fsync (Windows): the rename is as durable as it gets
  } finally {
    await handle?.close().catch(() => {});
  }
}
