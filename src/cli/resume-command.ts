import { shellWord } from "./shell-word.ts";
import { storeWords } from "./store-option.ts";

/**
 * The command that resumes suspended chain `chainId`, as `run` and `replay --resume` print it:
 * with the tool module and store this run used (`--store` left out for the default), each
 * quoted for a POSIX shell as needed. `approved|denied|skipped` is for the user to pick one of.
 */
export function resumeCommand(chainId: string, tools: string, store: string): string {
  return `isochain replay ${shellWord(chainId)} --resume --decision approved|denied|skipped --tools ${shellWord(tools)}${storeWords(store)}`;
}
