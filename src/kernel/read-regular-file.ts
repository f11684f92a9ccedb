/**
 * readRegularFile: read a file a store owns without ever blocking on something that is not one.
 *
 * The kernel's only file-system helper, kept out of its barrel (import it by path) so the
 * vocabulary stays pure; it imports nothing but `node:fs`, so every store may share it.
 *
 * Invariants:
 * - The open never waits: `O_NONBLOCK` makes a FIFO planted where a store expects a file open at
 *   once instead of holding a libuv threadpool thread forever (four such opens stall every fs call
 *   of the process). `O_NONBLOCK` changes nothing for a regular file.
 * - Nothing is read before `fstat` says "regular file": a FIFO, socket, device (`/dev/zero` never
 *   ends) or directory fails with code `ENOTREG`; a file over `maxBytes` fails with `EFBIG`.
 * - A symbolic link is not followed unless asked (`O_NOFOLLOW`); one at `path` fails with
 *   `ENOTREG` too. Links in the directories above `path` are the caller's business.
 * - Same syscalls as `fs.readFile`: open, fstat, read, close; the bytes are read to the size fstat
 *   gave, into memory of their own (never a slice of Node's shared buffer pool).
 * @module
 */
import { constants, type Stats } from "node:fs";
import { lstat, open, type FileHandle } from "node:fs/promises";

/** The `code` of the error {@link readRegularFile} throws for a path that is not a regular file. */
export const NOT_REGULAR_FILE = "ENOTREG";

/** The `code` of the error {@link readRegularFile} throws for a file over `maxBytes`. */
export const FILE_TOO_LARGE = "EFBIG";

/** Options of {@link readRegularFile}. */
export interface ReadRegularFileOptions {
  /** Open what a symbolic link at `path` points to (then checked like `path`). @defaultValue `false` */
  readonly followLinks?: boolean;
  /** Largest file read, bytes: a bigger one fails with `EFBIG` before a byte is read. @defaultValue no limit */
  readonly maxBytes?: number;
}

/** What {@link readRegularFile} throws of its own; fs errors (`ENOENT`, `EACCES`, ...) pass as they are. */
export interface ReadRegularFileError extends Error {
  readonly code: typeof NOT_REGULAR_FILE | typeof FILE_TOO_LARGE;
  readonly path: string;
  /** For `ENOTREG`: what is there instead (`"FIFO"`, `"directory"`, `"symbolic link"`, ...). */
  readonly fileType?: string;
  /** For `EFBIG`: the file's size. */
  readonly bytes?: number;
}

/** Bytes asked of one `read` call: under the 2 GiB a single read may return. */
const MAX_READ_CHUNK = 1 << 30;
/** First buffer for a regular file that reports size 0 (procfs and the like, or truly empty). */
const UNKNOWN_SIZE_CHUNK = 64 * 1024;

/**
 * The bytes of the regular file at `path`. See the module comment for what is refused and why.
 *
 * @throws an `Error` with `code` {@link NOT_REGULAR_FILE} (`ENOTREG`) when `path` is not a
 * regular file (or is a link and `followLinks` is off), {@link FILE_TOO_LARGE} (`EFBIG`) when it
 * is over `maxBytes` (see {@link ReadRegularFileError}); the file system's own errors as they are.
 */
export async function readRegularFile(path: string, options: ReadRegularFileOptions = {}): Promise<Buffer> {
  const followLinks = options.followLinks ?? false;
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | (followLinks ? 0 : (constants.O_NOFOLLOW ?? 0)));
  } catch (error) {
    throw followLinks ? error : await linkRefusal(path, error);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw readError(NOT_REGULAR_FILE, path, `${path} is a ${fileTypeOf(stats)}, not a regular file`, { fileType: fileTypeOf(stats) });
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (stats.size > maxBytes) {
      throw readError(FILE_TOO_LARGE, path, `${path} is ${stats.size} bytes, over the ${maxBytes} it is read up to`, { bytes: stats.size });
    }
    return stats.size > 0 ? await readKnownSize(handle, stats.size) : await readToEnd(handle, path, maxBytes);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Reads up to `size` bytes (fewer if the file shrank) into a buffer of their own. */
async function readKnownSize(handle: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafeSlow(size);
  let filled = 0;
  while (filled < size) {
    const { bytesRead } = await handle.read(buffer, filled, Math.min(size - filled, MAX_READ_CHUNK), null);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === size ? buffer : buffer.subarray(0, filled);
}

/** Reads a file whose size fstat does not tell, to its end or past `maxBytes` (then `EFBIG`). */
async function readToEnd(handle: FileHandle, path: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafeSlow(UNKNOWN_SIZE_CHUNK);
    const { bytesRead } = await handle.read(chunk, 0, chunk.byteLength, null);
    if (bytesRead === 0) break;
    total += bytesRead;
    if (total > maxBytes) throw readError(FILE_TOO_LARGE, path, `${path} is over the ${maxBytes} bytes it is read up to`, { bytes: total });
    chunks.push(chunk.subarray(0, bytesRead));
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
}

/**
 * The error for a failed `O_NOFOLLOW` open: a link at `path` (ELOOP on Linux and macOS, EMLINK
 * on FreeBSD, EFTYPE on NetBSD) becomes `ENOTREG`; anything else is returned as it was.
 */
async function linkRefusal(path: string, error: unknown): Promise<unknown> {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "ELOOP" && code !== "EMLINK" && code !== "EFTYPE") return error;
  const isLink = await lstat(path).then((stats) => stats.isSymbolicLink(), () => false);
  if (!isLink) return error;
  return readError(NOT_REGULAR_FILE, path, `${path} is a symbolic link, not a regular file (links are not followed)`, {
    fileType: "symbolic link",
    cause: error,
  });
}

function readError(
  code: ReadRegularFileError["code"],
  path: string,
  message: string,
  extra: { fileType?: string; bytes?: number; cause?: unknown },
): ReadRegularFileError {
  const { cause, ...fields } = extra;
  const error = new Error(message, cause === undefined ? undefined : { cause });
  return Object.assign(error, { code, path, ...fields });
}

function fileTypeOf(stats: Stats): string {
  if (stats.isFIFO()) return "FIFO";
  if (stats.isDirectory()) return "directory";
  if (stats.isSocket()) return "socket";
  if (stats.isCharacterDevice()) return "character device";
  if (stats.isBlockDevice()) return "block device";
  if (stats.isSymbolicLink()) return "symbolic link";
  return "special file";
}
