import { type FileTraceStore, isChainRuntimeError, type TraceSummary } from "../index.ts";

/**
 * Why each trace of `chainIds` that `listed` leaves out cannot be read: the error of loading it
 * again (`CODE: message`, the message naming the file). `store.list()` skips such files without a
 * word; `trace ls` says so. A trace that loads now (written since) or is gone is left out.
 */
export async function unreadableTraces(store: FileTraceStore, chainIds: readonly string[], listed: readonly TraceSummary[]): Promise<string[]> {
  const shown = new Set(listed.map((summary) => summary.chainId));
  const reasons: string[] = [];
  for (const chainId of chainIds) {
    if (shown.has(chainId)) continue;
    try {
      await store.load(chainId);
    } catch (error) {
      if (!isChainRuntimeError(error)) throw error;
      if (error.code !== "TRACE_NOT_FOUND") reasons.push(`${error.code}: ${error.message}`);
    }
  }
  return reasons;
}
