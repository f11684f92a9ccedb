import { existsSync } from "node:fs";
import { ChainRuntimeError, type ChainTrace, type FileTraceStore, isChainRuntimeError, isTraceChainId, loadTraceFile } from "../index.ts";
import { storeWords } from "./store-option.ts";

/**
 * The trace `ref` names: a trace file (see {@link namesTraceFile}), else a chain id in `store`, else the one chain id in `store` that starts with `ref`. Prefixes
 * are matched against the file names, and only the one match is loaded: a store of thousands of
 * traces is not read whole to find one.
 * @param storeOption - `--store` as given, for the command the messages suggest.
 * @throws ChainRuntimeError `TRACE_NOT_FOUND` when nothing matches, `CLI_USAGE` when a prefix is
 * ambiguous, `TRACE_INVALID` (naming the file and why) when the trace named cannot be read.
 */
export async function resolveTrace(ref: string, store: FileTraceStore, storeOption: string): Promise<ChainTrace> {
  if (namesTraceFile(ref)) return loadTraceFile(ref);
  const whole = await loadWholeId(ref, store);
  if (whole !== undefined) return whole;
  const matches = (await store.chainIds()).filter((chainId) => chainId.startsWith(ref)).sort();
  if (matches.length === 1 && matches[0]) return store.load(matches[0]);
  if (matches.length > 1) {
    throw new ChainRuntimeError("CLI_USAGE", `"${ref}" matches ${matches.length} traces (${matches.slice(0, 3).join(", ")}, ...): give more of the id.`);
  }
  throw new ChainRuntimeError(
    "TRACE_NOT_FOUND",
    `No trace "${ref}": not a .trace file, and no chain id in the store starts with it. See \`isochain trace ls${storeWords(storeOption)}\`.`,
  );
}

/**
 * True when `ref` names a trace file, not a chain id: anything ending in `.trace`, or an existing
 * file given by a path, or by a name no chain id can have (`export.json`).
 */
export function namesTraceFile(ref: string): boolean {
  return ref.endsWith(".trace") || ((ref.includes("/") || !isTraceChainId(ref)) && existsSync(ref));
}

/**
 * The trace of chain `ref` in `store`, or `undefined` when `ref` is no chain id the store takes
 * or it has no such file (`ref` may then be a prefix). A file that is there and cannot be read
 * is an error of its own, said as it is: never "no trace".
 */
async function loadWholeId(ref: string, store: FileTraceStore): Promise<ChainTrace | undefined> {
  try {
    store.pathOf(ref);
  } catch {
    return undefined; // not a chain id: no file can be named so
  }
  try {
    return await store.load(ref);
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "TRACE_NOT_FOUND") return undefined;
    throw error;
  }
}
