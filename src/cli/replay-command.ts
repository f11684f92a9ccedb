import { join } from "node:path";
import {
  type ApprovalDecision,
  ChainRuntimeError,
  type ChainTrace,
  FileBlobStore,
  FileTraceStore,
  type InDoubtDecision,
  isApprovalDecision,
  isChainRuntimeError,
  replay,
  type ReplayReport,
  resumeChain,
} from "../index.ts";
import { approvalHandlerFor } from "./approval-handler-for.ts";
import { clipText } from "./clip-text.ts";
import { parseCommandLine } from "./command-line.ts";
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, runExitCode } from "./exit-codes.ts";
import { formatRun } from "./format-run.ts";
import { loadToolModule } from "./load-tools.ts";
import { prepareStore } from "./prepare-store.ts";
import { namesTraceFile, resolveTrace } from "./resolve-trace.ts";
import { resumeCommand } from "./resume-command.ts";
import { checkStoreOption, DEFAULT_STORE, storeWords } from "./store-option.ts";
import { storeForTraceFile } from "./trace-store-beside.ts";
import { USAGE } from "./usage.ts";
import { oneLineText, writeErr, writeOut } from "./terminal-text.ts";

/**
 * `isochain replay <id|file> [--resume]`. Strict (the default) needs no tools and exits 0 when
 * the replay is identical, 1 at a divergence. Resume runs the rest live (`--tools`) and exits
 * as a run does (see exit-codes.ts): 0 when the resumed chain ends `ok`, 3 when it is suspended
 * again, 1 otherwise (or when it stopped at a divergence).
 */
export async function replayCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(
    "replay",
    args,
    {
      resume: { type: "boolean", default: false },
      tools: { type: "string" },
      "in-doubt": { type: "string", multiple: true },
      decision: { type: "string" },
      approve: { type: "string" },
      force: { type: "boolean", default: false },
      store: { type: "string", default: DEFAULT_STORE },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    ["one chain id or .trace file"],
  );
  if (values.help) {
    writeOut(`${USAGE}\n`);
    return EXIT_OK;
  }
  const ref = positionals[0];
  if (!ref) {
    writeErr(`isochain replay: needs a chain id or a .trace file\n\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  if (!values.resume) {
    // A strict replay runs nothing live and decides nothing: a decision given to it would look
    // taken and be ignored.
    const resumeOnly = [
      values.decision === undefined ? undefined : "--decision",
      values["in-doubt"] === undefined ? undefined : "--in-doubt",
      values.approve === undefined ? undefined : "--approve",
      values.force ? "--force" : undefined,
    ].filter((option) => option !== undefined);
    if (resumeOnly.length > 0) {
      throw new ChainRuntimeError(
        "CLI_USAGE",
        `${resumeOnly.join(", ")} appl${resumeOnly.length === 1 ? "ies" : "y"} to a resume; a strict replay runs no call live and decides nothing. ` +
          `Add --resume --tools <module> to resume the chain, or remove ${resumeOnly.length === 1 ? "it" : "them"}.`,
        { details: { options: resumeOnly } },
      );
    }
  }
  const inDoubt = parseInDoubt(values["in-doubt"] ?? []);
  checkStoreOption(values.store);
  const traceStore = new FileTraceStore({ dir: join(values.store, "traces") });
  const trace = await resolveTrace(ref, traceStore, values.store);

  if (!values.resume) {
    const report = await replay(trace, { mode: "strict" });
    if (values.json) writeOut(`${JSON.stringify(report, null, 2)}\n`);
    else writeOut(formatStrict(report, trace));
    return report.identical ? EXIT_OK : EXIT_FAILED;
  }

  if (!values.tools) {
    writeErr("isochain replay --resume: needs --tools <module> (calls not in the trace run live)\n");
    return EXIT_USAGE;
  }
  const suspended = trace.outcome?.status === "suspended";
  const decision = values.decision;
  if (decision !== undefined && !isApprovalDecision(decision)) {
    throw new ChainRuntimeError("CLI_USAGE", `--decision must be approved, denied or skipped; got ${JSON.stringify(decision)}.`);
  }
  if (suspended && !isApprovalDecision(decision)) {
    writeErr(`isochain replay --resume: chain ${trace.chainId} is suspended for approval; pass --decision approved|denied|skipped\n`);
    return EXIT_USAGE;
  }
  if (!suspended && decision !== undefined) {
    throw new ChainRuntimeError("CLI_USAGE", `--decision applies to a suspended chain; ${trace.chainId} is ${trace.outcome?.status ?? "not ended"}.`);
  }
  const approvalMode = values.approve === "suspend" || (values.approve === undefined && suspended) ? "suspend" : "wait";
  const approvalHandler = approvalMode === "suspend" ? undefined : approvalHandlerFor(values.approve);
  const toolbox = await loadToolModule(values.tools);
  await prepareStore(values.store, ["blobs", "traces"]);
  const blobStore = new FileBlobStore({ dir: join(values.store, "blobs") });
  // A .trace file outside this store's traces folder: its own folder is claimed too.
  const resumeStore = storeForTraceFile(traceStore, namesTraceFile(ref) ? ref : undefined);
  const common = {
    toolbox,
    blobStore,
    inDoubt,
    approvalMode,
    force: values.force,
    ...(approvalHandler ? { approvalHandler } : {}),
  } as const;
  let report: ReplayReport;
  try {
    report = suspended
      ? // The trace as read (a .trace file may sit outside the store): resume that one.
        await resumeChain(trace.chainId, decision as ApprovalDecision, { ...common, traceStore: resumeStore, trace })
      : await replay(trace, { ...common, mode: "resume", traceStore: resumeStore });
  } catch (error) {
    throw inDoubtUsageError(error, trace, values.store) ?? error;
  }
  if (values.json) {
    writeOut(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    writeOut(formatResume(report));
    writeOut(await formatRun(report.run, { scriptPath: `(resumed from ${trace.chainId})`, code: trace.source, artifacts: new Map(), blobStore }));
    if (report.run.pendingApproval) {
      writeOut(`\nsuspended again: waiting for approval of ${report.run.pendingApproval.tool}\n`);
      if (!report.run.traceError) {
        writeOut(`resume with: ${resumeCommand(report.run.chainId, values.tools, values.store)}\n`);
      }
    }
  }
  if (report.run.traceError) {
    writeErr(`isochain: the trace of the resumed chain is incomplete (${report.run.traceError.code}: ${report.run.traceError.message}); calls after the failure were refused.\n`);
  }
  return report.identical ? runExitCode(report.run) : EXIT_FAILED;
}

/** `--in-doubt cN=assume-done|re-execute`, each given at most once per call. */
function parseInDoubt(entries: readonly string[]): Record<string, InDoubtDecision> {
  const decisions = new Map<string, InDoubtDecision>();
  for (const entry of entries) {
    const match = /^([^=]+)=(assume-done|re-execute)$/.exec(entry);
    const callId = match?.[1];
    const decision = match?.[2] as InDoubtDecision | undefined;
    if (callId === undefined || decision === undefined) {
      throw new ChainRuntimeError("CLI_USAGE", `--in-doubt takes <callId>=assume-done|re-execute (e.g. c2=assume-done); got "${entry}".`, {
        details: { option: "--in-doubt", value: entry },
      });
    }
    if (decisions.has(callId)) {
      throw new ChainRuntimeError("CLI_USAGE", `--in-doubt decides ${callId} twice (${callId}=${decisions.get(callId)} and ${entry}); give one decision per call.`, {
        details: { option: "--in-doubt", value: entry },
      });
    }
    decisions.set(callId, decision);
  }
  // fromEntries: a call id "__proto__" stays a key, not the object's prototype.
  return Object.fromEntries(decisions);
}

/**
 * The library refuses an `inDoubt` decision naming no in-doubt call of the trace
 * (`ARGUMENT_INVALID`, `details.argument` `inDoubt.<callId>` and `details.reason`): said in the
 * CLI's terms.
 */
function inDoubtUsageError(error: unknown, trace: ChainTrace, store: string): ChainRuntimeError | undefined {
  if (!isChainRuntimeError(error) || error.code !== "ARGUMENT_INVALID") return undefined;
  const argument = error.details.argument;
  if (typeof argument !== "string" || !argument.startsWith("inDoubt.")) return undefined;
  const callId = argument.slice("inDoubt.".length);
  const reason = error.details.reason;
  const why = typeof reason === "string" ? reason : error.message;
  return new ChainRuntimeError(
    "CLI_USAGE",
    `--in-doubt ${callId}: ${why} Decide only the calls \`isochain trace show ${trace.chainId}${storeWords(store)}\` lists as in doubt.`,
    { cause: error, details: { option: "--in-doubt", callId } },
  );
}

function formatStrict(report: ReplayReport, trace: ChainTrace): string {
  const out: string[] = [];
  const calls = report.replayedCalls.length;
  if (report.identical) {
    // Stopped where the recording ends, the replay's own status is its stop, not the chain's outcome.
    const outcome = report.partialAt === undefined ? `, outcome ${report.run.status}` : "";
    out.push(`replay of chain ${oneLineText(report.sourceChainId)}: identical (${calls} call${calls === 1 ? "" : "s"} answered from the trace${outcome})`);
    if (report.partialAt !== undefined) out.push(partialNote(report.partialAt, trace));
  } else {
    const at = report.divergence?.callId ? ` at ${oneLineText(report.divergence.callId)}` : "";
    out.push(`replay of chain ${oneLineText(report.sourceChainId)}: DIVERGED (${report.divergence?.kind}${at})`);
    if (report.divergence) out.push(report.divergence.message);
    // A missing call's message already ends with the script's failure (see replay()).
    const failure = report.divergence?.kind === "missing-call" ? undefined : replayedFailure(report.run);
    if (failure !== undefined) out.push(failure);
  }
  return `${out.join("\n")}\n`;
}

/**
 * Why a strict replay stopped at `partialAt` (see `ReplayReport.partialAt`): the trace either
 * has that call in doubt (started, its result never logged), or has no outcome and no such call
 * (the chain died between calls: no call is in doubt).
 */
function partialNote(partialAt: string, trace: ChainTrace): string {
  const call = trace.calls.find((entry) => entry.callId === partialAt);
  if (call === undefined) {
    const ended = trace.outcome === undefined ? "has no outcome and ends" : "ends (its caller cancelled the chain)";
    const why = trace.outcome === undefined ? "the chain died between calls: no call is in doubt" : "no call is in doubt";
    return `note: the trace ${ended} before ${partialAt} (${why}); the replay stopped when the script made ${partialAt}.`;
  }
  const status = trace.outcome?.status;
  const why =
    status === undefined
      ? "the chain died there"
      : status === "suspended"
        ? "the chain was suspended there"
        : `its result was never logged: the chain ended ${status} first`;
  return `note: the trace ends in doubt at ${partialAt} (${why}); the replay stopped there too.`;
}

/** Most characters of the replayed script's error (name and message) shown under a divergence. */
const MAX_REPLAY_ERROR_CHARS = 300;

/**
 * Why the replayed script itself failed (it did not compile, it threw), as one line, or
 * `undefined` when it did not fail. A divergence says only which call or outcome differs; when
 * the script failed, that is usually why, and its error is in no other line of the report.
 */
function replayedFailure(run: ReplayReport["run"]): string | undefined {
  const error = run.error;
  if (!error) return undefined;
  const where = error.line === undefined ? "" : ` at line ${error.line}${error.column === undefined ? "" : `, column ${error.column}`}`;
  // The name and message are the script's own: any length, any lines.
  const thrown = clipText(`${error.name}: ${error.message}`.replace(/\s+/g, " ").trim(), MAX_REPLAY_ERROR_CHARS);
  return `the replayed script failed [${error.phase}]${where}: ${thrown}`;
}

function formatResume(report: ReplayReport): string {
  const out: string[] = [];
  out.push(`resumed chain ${report.sourceChainId} as ${report.run.chainId}`);
  out.push(`  answered from the trace: ${report.replayedCalls.join(" ") || "(none)"}`);
  out.push(`  ran live: ${report.liveCalls.join(" ") || "(none)"}`);
  for (const call of report.inDoubt) {
    const what =
      call.resolution === "in-doubt"
        ? "not run again; the script got IN_DOUBT (decide with --in-doubt " + call.callId + "=assume-done|re-execute)"
        : call.resolution === "assume-done"
          ? "assumed done"
          : "run again";
    out.push(`  in doubt: ${call.callId} ${call.tool} (${call.risk}): ${what}`);
  }
  if (report.toolboxChanged) out.push("  note: the toolbox differs from the one the chain was recorded with");
  if (report.divergence) out.push(`  stopped: ${report.divergence.message}`);
  return `${out.join("\n")}\n\n`;
}
