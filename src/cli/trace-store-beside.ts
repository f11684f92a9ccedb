import { dirname, resolve } from "node:path";
import { FileTraceStore, isChainRuntimeError, type TraceStore } from "../index.ts";

/**
 * The trace store a resume of a `.trace` file given by path uses: `store` (the `--store` one,
 * where the resumed chain is written), unless the file sits in another folder. Then that folder
 * is the file's own trace store, and it takes part: the resume claims the trace there too (so a
 * resume of the same file under another `--store`, or none, is refused as a second resume of
 * it), and the chains the file resumes are read from there when `store` lacks them.
 */
export function storeForTraceFile(store: FileTraceStore, file: string | undefined): TraceStore {
  if (file === undefined) return store;
  const folder = dirname(resolve(file));
  if (folder === resolve(store.dir)) return store;
  const beside = new FileTraceStore({ dir: folder });
  return {
    durable: store.durable,
    append: (chainId, event) => store.append(chainId, event),
    load: (chainId) =>
      store.load(chainId).catch((error: unknown) => {
        if (isChainRuntimeError(error) && error.code === "TRACE_NOT_FOUND") return beside.load(chainId);
        throw error;
      }),
    list: (options) => store.list(options),
    prune: (options) => store.prune(options),
    claimResume: async (chainId, resumedAs) => (await beside.claimResume(chainId, resumedAs)) ?? store.claimResume(chainId, resumedAs),
    liveWriter: async (chainId) => (await store.liveWriter(chainId)) ?? beside.liveWriter(chainId),
    close: () => store.close(),
  };
}
