import { parseArgs, type ParseArgsConfig } from "node:util";
import { ChainRuntimeError } from "../index.ts";

/**
 * `parseArgs` for one command, strict, with its mistakes (an unknown option, a missing value)
 * thrown as `CLI_USAGE` like every other command-line mistake, and no more positional arguments
 * than `positionals` names (a second script after the first is not silently dropped).
 * @param command the command as typed, e.g. `run` or `trace show`, for the messages.
 * @param positionals what each positional argument is, e.g. `["a script"]`.
 */
export function parseCommandLine<const T extends NonNullable<ParseArgsConfig["options"]>>(
  command: string,
  args: readonly string[],
  options: T,
  positionals: readonly string[],
): ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; allowNegative: true; strict: true }>> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options, allowPositionals: true, allowNegative: true, strict: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ChainRuntimeError("CLI_USAGE", `isochain ${command}: ${message} (see isochain --help)`, { cause: error });
  }
  if (parsed.positionals.length > positionals.length) {
    const extra = parsed.positionals.slice(positionals.length);
    const takes = positionals.length === 0 ? "takes no arguments besides its options" : `takes ${positionals.join(" and ")}`;
    throw new ChainRuntimeError(
      "CLI_USAGE",
      `isochain ${command} ${takes}; got ${extra.length} more: ${extra.map((arg) => JSON.stringify(arg)).join(" ")}. Remove ${extra.length === 1 ? "it" : "them"} (run one command per script or trace).`,
      { details: { command, extra } },
    );
  }
  return parsed;
}
