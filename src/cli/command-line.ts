import { parseArgs, type ParseArgsConfig } from "node:util";
import { ChainRuntimeError, suggestNames } from "../index.ts";

/**
 * `parseArgs` for one command, strict, with its mistakes (an unknown option, a missing value)
 * thrown as `CLI_USAGE` like every other command-line mistake, and no more positional arguments
 * than `positionals` names (a second script after the first is not silently dropped). A negative
 * number after an option that takes a value is that option's value (see {@link joinNegativeValues}).
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
    parsed = parseArgs({ args: joinNegativeValues(args, options), options, allowPositionals: true, allowNegative: true, strict: true });
  } catch (error) {
    const unknown = (error as { code?: unknown }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? /'(-[^']*)'/u.exec(String((error as Error).message))?.[1] : undefined;
    if (unknown !== undefined) {
      // A flag on by default is written --no-<name> (parseArgs' allowNegative), as the help says.
      const names = Object.entries(options).map(([name, option]) => (option.type === "boolean" && option.default === true ? `--no-${name}` : `--${name}`));
      const near = suggestNames(unknown, names);
      throw new ChainRuntimeError(
        "CLI_USAGE",
        `isochain ${command}: unknown option ${unknown}${near.length > 0 ? `; did you mean ${near.join(" or ")}?` : ""} (options: ${names.join(", ")}; see isochain --help)`,
        { cause: error, details: { command, option: unknown } },
      );
    }
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

/**
 * `args` with each value that is a negative number joined to the long option before it, when that
 * option takes a value: `--max-calls -1` becomes `--max-calls=-1`. `parseArgs` refuses a value
 * starting with `-` given as the next argument ("argument is ambiguous ... use '--max-calls=-XYZ'"),
 * so `-1` would be told a rule of the parser instead of the option's own range, which `1.5` and
 * `abc` get. Nothing after `--` is touched, and a value starting with `-` and a letter (`--tools
 * --json`, a forgotten value) is still refused as ambiguous.
 */
function joinNegativeValues(args: readonly string[], options: NonNullable<ParseArgsConfig["options"]>): string[] {
  const joined: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] ?? "";
    const next = args[index + 1];
    if (arg === "--") return [...joined, ...args.slice(index)];
    if (next !== undefined && /^-[0-9.]/.test(next) && takesValue(arg, options)) {
      joined.push(`${arg}=${next}`);
      index += 1;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** Whether `arg` is a long option, without an inline `=value`, that takes a value. */
function takesValue(arg: string, options: NonNullable<ParseArgsConfig["options"]>): boolean {
  if (!arg.startsWith("--") || arg.includes("=")) return false;
  const name = arg.slice(2);
  return Object.hasOwn(options, name) && options[name]?.type === "string";
}
