import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type ApprovalDecision,
  ChainRuntimeError,
  FileBlobStore,
  FileTraceStore,
  type InDoubtDecision,
  isApprovalDecision,
  replay,
  type ReplayReport,
  resumeChain,
} from "../index.ts";
import { approvalHandlerFor } from "./approval-handler-for.ts";
import { formatRun } from "./format-run.ts";
import { loadToolModule } from "./load-tools.ts";
import { resolveTrace } from "./resolve-trace.ts";
import { USAGE } from "./usage.ts";
import { writeErr, writeOut } from "./terminal-text.ts";

/**
 * `isochain replay <id|file> [--resume]`. Strict (the default) needs no tools and exits 0 when
 * the replay is identical, 1 at a divergence. Resume runs the rest live (`--tools`), exits 0
 * when the resumed chain ends `ok`.
 */
export async function replayCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      resume: { type: "boolean", default: false },
      tools: { type: "string" },
      "in-doubt": { type: "string", multiple: true },
      decision: { type: "string" },
      approve: { type: "string" },
      force: { type: "boolean", default: false },
      store: { type: "string", default: ".isochain" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    writeOut(`${USAGE}\n`);
    return 0;
  }
  const ref = positionals[0];
  if (!ref) {
    writeErr(`isochain replay: needs a chain id or a .trace file\n\n${USAGE}\n`);
    return 2;
  }
  const traceStore = new FileTraceStore({ dir: join(values.store, "traces") });
  const trace = await resolveTrace(ref, traceStore);

  if (!values.resume) {
    const report = await replay(trace, { mode: "strict" });
    if (values.json) writeOut(`${JSON.stringify(report, null, 2)}\n`);
    else writeOut(formatStrict(report));
    return report.identical ? 0 : 1;
  }

  if (!values.tools) {
    writeErr("isochain replay --resume: needs --tools <module> (calls not in the trace run live)\n");
    return 2;
  }
  const toolbox = await loadToolModule(values.tools);
  const blobStore = new FileBlobStore({ dir: join(values.store, "blobs") });
  const inDoubt = parseInDoubt(values["in-doubt"] ?? []);
  const approvalMode = values.approve === "suspend" || (values.approve === undefined && trace.outcome?.status === "suspended") ? "suspend" : "wait";
  const approvalHandler = approvalMode === "suspend" ? undefined : approvalHandlerFor(values.approve);
  const common = {
    toolbox,
    blobStore,
    inDoubt,
    approvalMode,
    force: values.force,
    ...(approvalHandler ? { approvalHandler } : {}),
  } as const;
  let report: ReplayReport;
  if (trace.outcome?.status === "suspended") {
    const decision = values.decision;
    if (!isApprovalDecision(decision)) {
      writeErr(`isochain replay --resume: chain ${trace.chainId} is suspended for approval; pass --decision approved|denied|skipped\n`);
      return 2;
    }
    // The trace as read (a .trace file may sit outside the store): resume that one.
    report = await resumeChain(trace.chainId, decision as ApprovalDecision, { ...common, traceStore, trace });
  } else {
    if (values.decision !== undefined) {
      throw new ChainRuntimeError("CLI_USAGE", `--decision applies to a suspended chain; ${trace.chainId} is ${trace.outcome?.status ?? "not ended"}.`);
    }
    report = await replay(trace, { ...common, mode: "resume", traceStore });
  }
  if (values.json) {
    writeOut(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    writeOut(formatResume(report));
    writeOut(await formatRun(report.run, { scriptPath: `(resumed from ${trace.chainId})`, code: trace.source, artifacts: new Map(), blobStore }));
    if (report.run.pendingApproval) {
      writeOut(
        `\nsuspended again: waiting for approval of ${report.run.pendingApproval.tool}\n` +
          `resume with: isochain replay ${report.run.chainId} --resume --decision approved|denied|skipped --tools ${values.tools}\n`,
      );
    }
  }
  return report.run.status === "ok" && report.identical ? 0 : 1;
}

function parseInDoubt(entries: readonly string[]): Record<string, InDoubtDecision> {
  const decisions: Record<string, InDoubtDecision> = {};
  for (const entry of entries) {
    const [callId, decision] = entry.split("=");
    if (!callId || (decision !== "assume-done" && decision !== "re-execute")) {
      throw new ChainRuntimeError("CLI_USAGE", `--in-doubt takes <callId>=assume-done|re-execute (e.g. c2=assume-done); got "${entry}".`);
    }
    decisions[callId] = decision;
  }
  return decisions;
}

function formatStrict(report: ReplayReport): string {
  const out: string[] = [];
  const calls = report.replayedCalls.length;
  if (report.identical) {
    out.push(`replay of chain ${report.sourceChainId}: identical (${calls} call${calls === 1 ? "" : "s"} answered from the trace, outcome ${report.run.status})`);
    if (report.partialAt) out.push(`note: the trace ends in doubt at ${report.partialAt} (the chain died or was suspended there); the replay stopped there too.`);
  } else {
    out.push(`replay of chain ${report.sourceChainId}: DIVERGED (${report.divergence?.kind}${report.divergence?.callId ? ` at ${report.divergence.callId}` : ""})`);
    if (report.divergence) out.push(report.divergence.message);
  }
  return `${out.join("\n")}\n`;
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
