/**
 * The files the CLI is pointed at: the script (`run <script>`) and the tool module (`--tools`).
 * Neither may hang or exhaust the process:
 *
 * - The script is opened with `O_NONBLOCK` (a FIFO opens at once instead of waiting for a
 *   writer forever), must be a regular file by `fstat` (a FIFO, a device such as `/dev/zero`, a
 *   socket or a folder is refused before a byte is read), and is read up to
 *   {@link MAX_SCRIPT_BYTES}: a longer file cannot be a script isochain compiles, so it is
 *   refused without reading the rest.
 * - The tool module is loaded by `import()`, which reads the path itself: it is `stat`ed first and
 *   must be a regular file (a FIFO would hang the import). A file swapped for a FIFO between the
 *   check and the import is not caught; the path is the user's own.
 *
 * The stores' `readRegularFile` (src/kernel/read-regular-file.ts) does the same, but it is kept
 * out of the public entry, which is all the CLI may import (eslint.config.js); hence this one,
 * which also follows a link at the path (the user named it) and reads past a size fstat gave.
 * @module
 */
import { isUtf8 } from "node:buffer";
import { constants, type Stats } from "node:fs";
import { type FileHandle, open, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { ChainRuntimeError, isChainRuntimeError, MAX_SCRIPT_CHARS } from "../index.ts";
import { fileErrorReason } from "./file-error-reason.ts";

/**
 * Most bytes of a script the CLI reads: {@link MAX_SCRIPT_CHARS} characters at 4 bytes each, the
 * most UTF-8 spends on one. A file over it is refused unread; one under it but over the character
 * limit still reaches the compiler, which says how long it is.
 */
export const MAX_SCRIPT_BYTES = 4 * MAX_SCRIPT_CHARS;

/**
 * The text of the script at `path` (UTF-8).
 * @throws ChainRuntimeError `CLI_USAGE` when it does not exist, is not a regular file, cannot be
 * read or is over {@link MAX_SCRIPT_BYTES}.
 */
export async function readScriptFile(path: string): Promise<string> {
  const fail = (reason: string, cause?: unknown): ChainRuntimeError =>
    new ChainRuntimeError("CLI_USAGE", `Could not read the script ${path}: ${reason}.`, { cause, details: { path } });
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    throw fail(fileErrorReason(error), error);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw fail(`it is ${fileKind(stats)}, not a regular file; pass the path of a .ts file`);
    if (stats.size > MAX_SCRIPT_BYTES) throw fail(tooLong(stats.size));
    // Read to the end, not to the size fstat gave (a file may grow, procfs says 0), but never
    // more than one byte past the limit.
    const buffer = Buffer.alloc(MAX_SCRIPT_BYTES + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.byteLength - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
      if (filled > MAX_SCRIPT_BYTES) throw fail(tooLong(filled, "at least "));
    }
    const bytes = buffer.subarray(0, filled);
    if (!isUtf8(bytes)) throw fail(notUtf8(bytes));
    return bytes.toString("utf8");
  } catch (error) {
    throw isChainRuntimeError(error) ? error : fail(fileErrorReason(error), error);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/**
 * Checks that the tool module at `path` is a regular file, so `import()` cannot hang on it.
 * @throws ChainRuntimeError `CLI_USAGE` when it does not exist or is not a regular file.
 */
export async function checkToolModuleFile(path: string): Promise<void> {
  let stats: Stats;
  try {
    stats = await stat(resolve(path));
  } catch (error) {
    throw new ChainRuntimeError("CLI_USAGE", `Could not load the tool module ${path}: ${fileErrorReason(error)}.`, { cause: error, details: { path } });
  }
  if (!stats.isFile()) {
    throw new ChainRuntimeError(
      "CLI_USAGE",
      `Could not load the tool module ${path}: it is ${fileKind(stats)}, not a regular file; pass the path of a .ts or .js module.`,
      { details: { path } },
    );
  }
}

function tooLong(bytes: number, prefix = ""): string {
  return (
    `it is ${prefix}${bytes} bytes, and scripts are compiled up to ${MAX_SCRIPT_CHARS} characters ` +
    `(so read up to ${MAX_SCRIPT_BYTES} bytes); keep the script to the logic and pass data through tools`
  );
}

function fileKind(stats: Stats): string {
  if (stats.isDirectory()) return "a folder";
  if (stats.isFIFO()) return "a FIFO (named pipe)";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isSocket()) return "a socket";
  return "a special file";
}

/**
 * Where the first byte that is not UTF-8 is, and what to do: read as UTF-8 anyway, it would turn
 * into U+FFFD in a string the tools receive, without a word.
 */
function notUtf8(bytes: Buffer): string {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  const at = text.indexOf("\uFFFD");
  const before = at < 0 ? "" : text.slice(0, at);
  const line = before.split("\n").length;
  const column = before.length - before.lastIndexOf("\n");
  return `it is not UTF-8 text (line ${line}, column ${column} is not a UTF-8 character); save it as UTF-8`;
}
