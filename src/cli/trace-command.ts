import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { exportTraceJson, FileTraceStore, traceToTest } from "../index.ts";
import { formatTrace, formatTraceList } from "./format-trace.ts";
import { resolveTrace } from "./resolve-trace.ts";
import { USAGE } from "./usage.ts";
import { writeErr, writeOut } from "./terminal-text.ts";

/** `isochain trace ls|show|export`. Resolves to the exit code. */
export async function traceCommand(args: readonly string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      store: { type: "string", default: ".isochain" },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
      test: { type: "boolean", default: false },
      import: { type: "string", default: "isochain" },
      out: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    writeOut(`${USAGE}\n`);
    return 0;
  }
  const store = new FileTraceStore({ dir: join(values.store, "traces") });
  if (sub === "ls") {
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    const summaries = await store.list(limit === undefined ? {} : { limit });
    writeOut(values.json ? `${JSON.stringify(summaries, null, 2)}\n` : formatTraceList(summaries));
    return 0;
  }
  if (sub === "show" || sub === "export") {
    const ref = positionals[0];
    if (!ref) {
      writeErr(`isochain trace ${sub}: needs a chain id or a .trace file\n\n${USAGE}\n`);
      return 2;
    }
    const trace = await resolveTrace(ref, store);
    let text: string;
    if (sub === "show") text = values.json ? `${exportTraceJson(trace)}\n` : formatTrace(trace);
    else text = values.test ? traceToTest(trace, { importFrom: values.import }) : `${exportTraceJson(trace)}\n`;
    if (values.out) {
      await mkdir(dirname(values.out), { recursive: true });
      await writeFile(values.out, text);
      writeOut(`wrote ${values.out}\n`);
    } else {
      writeOut(text);
    }
    return 0;
  }
  writeErr(`isochain trace: expected ls, show or export${sub ? `, got "${sub}"` : ""}\n\n${USAGE}\n`);
  return 2;
}
