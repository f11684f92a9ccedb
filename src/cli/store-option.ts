import { ChainRuntimeError } from "../index.ts";
import { shellWord } from "./shell-word.ts";

/** Where the CLI keeps artifacts and traces when `--store` is not given. */
export const DEFAULT_STORE = ".isochain";

/**
 * Refuses an empty `--store`, as `--out ""` is refused: the store's folders would be `blobs` and
 * `traces` in the working directory (`join("", "traces")` is `traces`), which nobody asked for.
 * Called before anything is read or created.
 * @throws ChainRuntimeError `CLI_USAGE` saying so and what to pass instead.
 */
export function checkStoreOption(store: string): void {
  if (store !== "") return;
  throw new ChainRuntimeError(
    "CLI_USAGE",
    `The store "" cannot be used: the path is empty. Pass a folder with --store DIR, or leave out --store for the default ${DEFAULT_STORE}.`,
    { details: { option: "--store", store } },
  );
}

/**
 * The `--store` words of a command the CLI prints for the user to run next (` --store DIR`, with
 * its leading space), or nothing for the default store: the printed command must find the trace
 * where this one put it.
 */
export function storeWords(store: string): string {
  return store === DEFAULT_STORE ? "" : ` --store ${shellWord(store)}`;
}
