import { writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { ChainRuntimeError } from "../index.ts";
import { makeDirectory } from "../kernel/make-directory.ts";
import { fileErrorReason } from "./file-error-reason.ts";

/**
 * Writes `text` to the file `path` names (`--out FILE`), creating its folder if missing.
 * @throws ChainRuntimeError `CLI_USAGE` naming the path, why it cannot be written (a folder, a
 * part of the path that is a file, no permission) and what to pass instead; never Node's own
 * error (`EISDIR: illegal operation on a directory, open ...`).
 */
export async function writeOutputFile(path: string, text: string): Promise<void> {
  if (path === "") throw outputError(path, "the path is empty", undefined);
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
