import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { ChainRuntimeError } from "../index.ts";
import { makeDirectory } from "../kernel/make-directory.ts";
import { fileErrorReason } from "./file-error-reason.ts";

/** What an output file must never replace: the store's folders and the trace file read. */
export interface KeptPaths {
  /** The store's data folders (`traces`: append-only logs, leases, claims; `blobs`: artifacts). */
  readonly storeDirs: readonly string[];
  /** The `.trace` file the command read, when it read one by path. */
  readonly traceFile?: string;
}

/**
 * Writes `text` to the file `path` names (`--out FILE`), creating its folder if missing.
 * @throws ChainRuntimeError `CLI_USAGE` naming the path, why it cannot be written (a folder, a
 * part of the path that is a file, no permission, a file of the trace store or the trace being
 * read: written over, a trace would be lost) and what to pass instead; never Node's own error
 * (`EISDIR: illegal operation on a directory, open ...`).
 */
export async function writeOutputFile(path: string, text: string, kept: KeptPaths): Promise<void> {
  if (path === "") throw outputError(path, "the path is empty", undefined);
  const target = canonicalPath(path);
  if (kept.traceFile !== undefined && target === canonicalPath(kept.traceFile)) {
    throw outputError(path, "it is the trace file being read, which the output would replace", undefined);
  }
  const storeDir = kept.storeDirs.find((dir) => isWithin(canonicalPath(dir), target));
  if (storeDir !== undefined) {
    throw outputError(path, `it is in the store's folder ${storeDir}, whose files are its data (traces, artifacts), which the output would replace`, undefined);
  }
  const folder = dirname(path);
  try {
    await makeDirectory(folder);
  } catch (error) {
    throw outputError(path, folderErrorReason(error, folder), error);
  }
  try {
    await writeFile(path, text);
  } catch (error) {
    throw outputError(path, fileErrorReason(error), error);
  }
}

/** Why the folder of the output file could not be created, in words (see prepare-store.ts). */
function folderErrorReason(error: unknown, folder: string): string {
  switch ((error as { code?: unknown } | null)?.code) {
    case "EEXIST":
      return `${folder} is a file, not a folder`;
    case "ENOTDIR":
      return `a part of ${folder} is a file, not a folder`;
    default:
      return `could not create its folder ${folder}: ${fileErrorReason(error)}`;
  }
}

function outputError(path: string, reason: string, cause: unknown): ChainRuntimeError {
  return new ChainRuntimeError(
    "CLI_USAGE",
    `Could not write --out ${path === "" ? '""' : path}: ${reason}. Pass the path of a file to write (a missing folder is created), or leave out --out to print to stdout.`,
    { cause, details: { option: "--out", path } },
  );
}

/**
 * `path` made absolute with its links followed (as far as they exist; a link to nothing yet, to
 * where it points, since a write through it creates that), so two spellings of one file compare
 * equal. Never throws.
 */
function canonicalPath(path: string, links = 0): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    // A dangling link: where a write would land.
    if (links < MAX_LINKS) {
      try {
        if (lstatSync(absolute).isSymbolicLink()) return canonicalPath(resolve(dirname(absolute), readlinkSync(absolute)), links + 1);
      } catch {
        // nothing there: the path as written
      }
    }
    // Not there yet: its nearest folder that is, and the rest as written.
    const folder = dirname(absolute);
    return folder === absolute ? absolute : resolve(canonicalPath(folder, links), basename(absolute));
  }
}

/** Links followed by {@link canonicalPath} before it takes a path as written (the system's own limit is 40). */
const MAX_LINKS = 40;

/** True when `path` is `folder` or inside it (both canonical). */
function isWithin(folder: string, path: string): boolean {
  const rel = relative(folder, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
