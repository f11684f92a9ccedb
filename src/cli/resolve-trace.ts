import { existsSync } from "node:fs";
import { ChainRuntimeError, type ChainTrace, isChainRuntimeError, loadTraceFile, type TraceStore } from "../index.ts";

/**
 * The trace `ref` names: a trace file path (anything ending in `.trace`, or an existing file),
 * else a chain id in `store`, else the one chain id in `store` that starts with `ref`.
 * @throws ChainRuntimeError `TRACE_NOT_FOUND` when nothing matches, `CLI_USAGE` when a prefix is ambiguous.
 */
export async function resolveTrace(ref: string, store: TraceStore): Promise<ChainTrace> {
  if (ref.endsWith(".trace") || (ref.includes("/") && existsSync(ref))) return loadTraceFile(ref);
  try {
    return await store.load(ref);
  } catch (error) {
    if (!isChainRuntimeError(error) || (error.code !== "TRACE_NOT_FOUND" && error.code !== "TRACE_INVALID")) throw error;
    const matches = (await store.list()).filter((summary) => summary.chainId.startsWith(ref));
    if (matches.length === 1 && matches[0]) return store.load(matches[0].chainId);
    if (matches.length > 1) {
      throw new ChainRuntimeError("CLI_USAGE", `"${ref}" matches ${matches.length} traces (${matches.slice(0, 3).map((m) => m.chainId).join(", ")}, ...): give more of the id.`);
    }
    throw new ChainRuntimeError("TRACE_NOT_FOUND", `No trace "${ref}": not a .trace file, and no chain id in the store starts with it. See \`isochain trace ls\`.`);
  }
}
