import { join } from "node:path";
import { ChainRuntimeError, exportTraceJson, FileTraceStore, traceToTest } from "../index.ts";
import { parseCommandLine } from "./command-line.ts";
import { EXIT_OK, EXIT_USAGE } from "./exit-codes.ts";
import { formatTrace, formatTraceList } from "./format-trace.ts";
import { writeOutputFile } from "./output-file.ts";
import { parseCount } from "./parse-count.ts";
import { namesTraceFile, resolveTrace } from "./resolve-trace.ts";
import { checkStoreOption, DEFAULT_STORE } from "./store-option.ts";
import { unreadableTraces } from "./stored-traces.ts";
import { USAGE } from "./usage.ts";
import { writeErr, writeOut } from "./terminal-text.ts";

/** `--limit`: how many traces `trace ls` lists, newest first. */
const LIMIT_OPTION = { name: "--limit", unit: "traces", min: 1, max: 1_000_000, example: 20 } as const;

/** `isochain trace ls|show|export`. Resolves to the exit code. */
export async function traceCommand(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "ls" && sub !== "show" && sub !== "export") {
    if (sub === "-h" || sub === "--help") {
      writeOut(`${USAGE}\n`);
      return EXIT_OK;
    }
    writeErr(`isochain trace: expected ls, show or export${sub ? `, got "${sub}"` : ""}\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  const { values, positionals } = parseCommandLine(
    `trace ${sub}`,
    rest,
    {
      store: { type: "string", default: DEFAULT_STORE },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
      test: { type: "boolean", default: false },
      import: { type: "string" },
      out: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    sub === "ls" ? [] : ["one chain id or .trace file"],
  );
  if (values.help) {
    writeOut(`${USAGE}\n`);
    return EXIT_OK;
  }
  refuseMisplacedOptions(sub, values);
  checkStoreOption(values.store);
  const store = new FileTraceStore({ dir: join(values.store, "traces") });
  if (sub === "ls") {
    const limit = parseCount(LIMIT_OPTION, values.limit);
    // Named before the list is read: a trace written in between is listed, not taken for unreadable.
    const stored = await store.chainIds();
    const summaries = await store.list(limit === undefined ? {} : { limit });
    writeOut(values.json ? `${JSON.stringify(summaries, null, 2)}\n` : formatTraceList(summaries));
    // The list skips a file it cannot read; say so, and why. Under a limit the list reached, the
    // files past it were never read (that is the point of --limit): nothing is known of them.
    if (limit === undefined || summaries.length < limit) {
      for (const reason of await unreadableTraces(store, stored, summaries)) writeErr(`isochain trace ls: not listed, could not be read: ${reason}\n`);
    }
    return EXIT_OK;
  }
  const ref = positionals[0];
  if (!ref) {
    writeErr(`isochain trace ${sub}: needs a chain id or a .trace file\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  const trace = await resolveTrace(ref, store, values.store);
  let text: string;
  if (sub === "show") text = values.json ? `${exportTraceJson(trace)}\n` : formatTrace(trace);
  else text = values.test ? traceToTest(trace, { importFrom: values.import ?? "isochain" }) : `${exportTraceJson(trace)}\n`;
  if (values.out !== undefined) {
    await writeOutputFile(values.out, text, { storeDirs: [join(values.store, "traces"), join(values.store, "blobs")], ...(namesTraceFile(ref) ? { traceFile: ref } : {}) });
    writeOut(`wrote ${values.out}\n`);
  } else {
    writeOut(text);
  }
  return EXIT_OK;
}

/** Options one subcommand takes given to another are refused, not silently ignored. */
function refuseMisplacedOptions(sub: "ls" | "show" | "export", values: { limit?: string | undefined; test?: boolean | undefined; import?: string | undefined }): void {
  const misplaced =
    sub !== "ls" && values.limit !== undefined
      ? "--limit applies to trace ls"
      : sub !== "export" && (values.test === true || values.import !== undefined)
        ? "--test and --import apply to trace export"
        : values.import !== undefined && values.test !== true
          ? "--import names the module the --test file imports; it needs --test"
          : undefined;
  if (misplaced !== undefined) throw new ChainRuntimeError("CLI_USAGE", `isochain trace ${sub}: ${misplaced}. Remove it, or see isochain --help.`);
}
