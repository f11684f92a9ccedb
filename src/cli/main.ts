#!/usr/bin/env -S node --no-node-snapshot
/**
 * The `isochain` command. Delivery only: parses arguments, calls the public API, prints.
 *
 *   isochain run <script.ts> --tools <module.ts> [--approve auto|deny|prompt|suspend] [--max-calls N]
 *                [--store DIR] [--no-trace] [--json]
 *   isochain trace ls|show|export ...
 *   isochain replay <id|file> [--resume --tools <module.ts>] ...
 *   isochain bench [--quick] [--filter TEXT] ...   (the suite of a source checkout)
 */
import { join } from "node:path";
import {
  type ArtifactRef,
  describeThrown,
  FileBlobStore,
  FileTraceStore,
  isChainRuntimeError,
  MAX_TOOL_CALLS,
  type TracedChainRunResult,
  ToolChainTool,
} from "../index.ts";
import { approvalHandlerFor } from "./approval-handler-for.ts";
import { benchCommand } from "./bench-command.ts";
import { clipText } from "./clip-text.ts";
import { parseCommandLine } from "./command-line.ts";
import { EXIT_OK, EXIT_USAGE, runExitCode } from "./exit-codes.ts";
import { formatRun } from "./format-run.ts";
import { readScriptFile } from "./input-file.ts";
import { loadToolModule } from "./load-tools.ts";
import { stalledStep } from "./pending-step.ts";
import { parseCount } from "./parse-count.ts";
import { prepareStore } from "./prepare-store.ts";
import { replayCommand } from "./replay-command.ts";
import { resumeCommand } from "./resume-command.ts";
import { checkStoreOption, DEFAULT_STORE, storeWords } from "./store-option.ts";
import { traceCommand } from "./trace-command.ts";
import { USAGE } from "./usage.ts";
import { reportStrayErrors } from "./stray-errors.ts";
import { guardOutput, outputExitCode, writeErr, writeOut } from "./terminal-text.ts";

/** `--max-calls`: the tool-call budget of the run (ChainPolicy.maxToolCalls). */
const MAX_CALLS_OPTION = { name: "--max-calls", unit: "tool calls", min: 0, max: MAX_TOOL_CALLS, example: 50 } as const;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    writeOut(`${USAGE}\n`);
    return command === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (command === "run") return runCommand(rest);
  if (command === "trace") return traceCommand(rest);
  if (command === "replay") return replayCommand(rest);
  if (command === "bench") return benchCommand(rest);
  writeErr(`isochain: unknown command "${command}"\n\n${USAGE}\n`);
  return EXIT_USAGE;
}

async function runCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(
    "run",
    args,
    {
      tools: { type: "string" },
      approve: { type: "string" },
      "max-calls": { type: "string" },
      store: { type: "string", default: DEFAULT_STORE },
      trace: { type: "boolean", default: true },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    ["one script"],
  );
  if (values.help) {
    writeOut(`${USAGE}\n`);
    return EXIT_OK;
  }
  const scriptPath = positionals[0];
  if (!scriptPath || !values.tools) {
    writeErr(`isochain run: needs a script and --tools <module>\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  // Every check of the command line before anything is read or created.
  const maxToolCalls = parseCount(MAX_CALLS_OPTION, values["max-calls"]);
  checkStoreOption(values.store);
  const suspend = values.approve === "suspend";
  const approvalHandler = suspend ? undefined : approvalHandlerFor(values.approve);
  const code = await readScriptFile(scriptPath);
  const toolbox = await loadToolModule(values.tools);
  const traced = values.trace || suspend;
  await prepareStore(values.store, traced ? ["blobs", "traces"] : ["blobs"]);
  const blobStore = new FileBlobStore({ dir: join(values.store, "blobs") });
  const artifacts = new Map<ArtifactRef, string>();
  const traceStore = traced ? new FileTraceStore({ dir: join(values.store, "traces") }) : undefined;
  if (suspend && !values.trace) writeErr("isochain run: --approve suspend needs the trace; --no-trace ignored\n");
  const chain = new ToolChainTool({
    toolbox,
    blobStore,
    ...(approvalHandler ? { approvalHandler } : {}),
    ...(traceStore ? { traceStore } : {}),
    ...(suspend ? { approvalMode: "suspend" as const } : {}),
    ...(maxToolCalls === undefined ? {} : { policy: { maxToolCalls } }),
    hooks: {
      TOOL_END: ({ tool, result }) => {
        if (result.status !== "ok") return;
        if (result.artifactRef) artifacts.set(result.artifactRef, `${tool} result`);
        for (const file of result.files ?? []) artifacts.set(file.artifactRef, file.path);
      },
    },
  });
  let run: TracedChainRunResult;
  try {
    run = await chain.run(code);
  } finally {
    await chain.close();
  }
  if (run.returnArtifactRef) artifacts.set(run.returnArtifactRef as ArtifactRef, "return value");
  if (values.json) {
    writeOut(`${JSON.stringify(run, null, 2)}\n`);
  } else {
    writeOut(await formatRun(run, { scriptPath, code, artifacts, blobStore }));
    if (traceStore && !run.traceError) writeOut(`\ntrace saved: ${run.chainId}  (isochain trace show ${run.chainId.slice(0, 8)}${storeWords(values.store)})\n`);
    if (run.pendingApproval) {
      writeOut(`\nsuspended: waiting for approval of ${run.pendingApproval.tool} (${run.pendingApproval.risk}) with ${clipText(argumentText(run.pendingApproval.args), 160)}\n`);
      if (!run.traceError) writeOut(`resume with: ${resumeCommand(run.chainId, values.tools, values.store)}\n`);
    }
  }
  if (run.traceError) {
    writeErr(
      `isochain: the trace is incomplete (${run.traceError.code}: ${run.traceError.message}; ${run.traceError.lostEvents} event(s) lost): ` +
        "tool calls after the failure were refused, and the run cannot be replayed or resumed.\n",
    );
  }
  return runExitCode(run);
}

/** The arguments of a pending call as one line of JSON; never throws. */
function argumentText(args: unknown): string {
  try {
    return JSON.stringify(args) ?? "(none)";
  } catch {
    return "(arguments not serialisable as JSON)";
  }
}

/**
 * Said when the event loop drains while `main` is unsettled: a promise it awaited will never
 * settle. Called on `beforeExit`; once, and only before `main` settled (see pending-step.ts).
 */
function reportStall(): void {
  if (settled) return;
  settled = true;
  const stalled =
    stalledStep() ?? "the command never finished: a step it awaited never settled, and nothing was left to run. Please report this with the command line.";
  writeErr(`isochain: ${stalled}\n`);
  process.exitCode = EXIT_USAGE;
}

/** Whether `main` has settled (or its stall was reported). */
let settled = false;
guardOutput();
reportStrayErrors();
// Until `main` settles: a command whose awaited promise never settles (nothing left to run, so
// Node exits) did not do what was asked, and must not exit 0. See pending-step.ts.
process.exitCode = EXIT_USAGE;
process.on("beforeExit", reportStall);
process.on("exit", (code) => {
  process.exitCode = outputExitCode(code);
});
main(process.argv.slice(2)).then(
  (code) => {
    settled = true;
    process.exitCode = code;
  },
  (error: unknown) => {
    settled = true;
    const message = isChainRuntimeError(error) ? `${error.code}: ${error.message}` : describeThrown(error);
    writeErr(`isochain: ${message}\n`);
    process.exitCode = EXIT_USAGE;
  },
);
