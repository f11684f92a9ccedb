#!/usr/bin/env -S node --no-node-snapshot
/**
 * The `isochain` command. Delivery only: parses arguments, calls the public API, prints.
 *
 *   isochain run <script.ts> --tools <module.ts> [--approve auto|deny|prompt] [--max-calls N]
 *                [--driver in-process] [--store DIR] [--json]
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  AutoApprovalHandler,
  type ApprovalHandler,
  type ArtifactRef,
  type ChainRunResult,
  CliApprovalHandler,
  FileBlobStore,
  isChainRuntimeError,
  ToolChainTool,
} from "../index.ts";
import { loadToolModule } from "./load-tools.ts";
import { formatRun } from "./format-run.ts";

const USAGE = `Usage:
  isochain run <script.ts> --tools <module.ts> [options]

Options for run:
  --tools <module>        module exporting the tools (named exports, a Toolbox, or an array)
  --approve <mode>        auto | deny | prompt (default: prompt on a terminal, else deny)
  --max-calls <n>         tool-call budget (default 50)
  --store <dir>           where artifacts are kept (default .isochain)
  --json                  print the ChainRunResult as JSON
  -h, --help              this text`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  if (command === "run") return runCommand(rest);
  process.stderr.write(`isochain: unknown command "${command}"\n\n${USAGE}\n`);
  return 2;
}

async function runCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      tools: { type: "string" },
      approve: { type: "string" },
      "max-calls": { type: "string" },
      store: { type: "string", default: ".isochain" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const scriptPath = positionals[0];
  if (!scriptPath || !values.tools) {
    process.stderr.write(`isochain run: needs a script and --tools <module>\n\n${USAGE}\n`);
    return 2;
  }
  const code = await readFile(scriptPath, "utf8");
  const toolbox = await loadToolModule(values.tools);
  const blobStore = new FileBlobStore({ dir: join(values.store, "blobs") });
  const maxToolCalls = values["max-calls"] === undefined ? undefined : Number(values["max-calls"]);
  const artifacts = new Map<ArtifactRef, string>();
  const approvalHandler = approvalHandlerFor(values.approve);
  const chain = new ToolChainTool({
    toolbox,
    blobStore,
    ...(approvalHandler ? { approvalHandler } : {}),
    ...(maxToolCalls === undefined ? {} : { policy: { maxToolCalls } }),
    hooks: {
      TOOL_END: ({ tool, result }) => {
        if (result.status !== "ok") return;
        if (result.artifactRef) artifacts.set(result.artifactRef, `${tool} result`);
        for (const file of result.files ?? []) artifacts.set(file.artifactRef, file.path);
      },
    },
  });
  let run: ChainRunResult;
  try {
    run = await chain.run(code);
  } finally {
    await chain.close();
  }
  if (run.returnArtifactRef) artifacts.set(run.returnArtifactRef as ArtifactRef, "return value");
  if (values.json) {
    process.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
  } else {
    process.stdout.write(await formatRun(run, { scriptPath, code, artifacts, blobStore }));
  }
  return run.status === "ok" ? 0 : 1;
}

function approvalHandlerFor(mode: string | undefined): ApprovalHandler | undefined {
  const chosen = mode ?? (process.stdin.isTTY ? "prompt" : "deny");
  switch (chosen) {
    case "auto":
      return new AutoApprovalHandler("approved");
    case "deny":
      return undefined;
    case "prompt":
      return new CliApprovalHandler({ input: process.stdin, output: process.stderr });
    default:
      throw new Error(`--approve must be auto, deny or prompt; got "${chosen}"`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = isChainRuntimeError(error) ? `${error.code}: ${error.message}` : String((error as Error)?.message ?? error);
    process.stderr.write(`isochain: ${message}\n`);
    process.exitCode = 2;
  },
);
