import { type ChainTrace, renderScriptWithMarker, renderTraceTable, suspendedCalls, type TraceSummary } from "../index.ts";
import { formatTable } from "./format-table.ts";
import { oneLineText } from "./terminal-text.ts";

/** `isochain trace ls`: one line per trace, newest first. */
export function formatTraceList(summaries: readonly TraceSummary[]): string {
  if (summaries.length === 0) return "(no traces)\n";
  const rows = summaries.map((summary) => [
    summary.chainId,
    new Date(summary.createdAt).toISOString(),
    summary.status ?? "(no end)",
    String(summary.calls),
    summary.parentChainId ?? "",
  ]);
  return `${formatTable(["chain", "created", "status", "calls", "parent"], rows)}\n`;
}

/**
 * `isochain trace show`: the chain's header, its calls as a table (status, timings), the outcome
 * and the script with the failing line marked.
 */
export function formatTrace(trace: ChainTrace): string {
  // First, before any field is read: it checks the trace's shape (TRACE_INVALID naming the
  // field), so what is not a trace is refused as such, never met as a TypeError below.
  const waiting = suspendedCalls(trace);
  const out: string[] = [];
  const outcome = trace.outcome;
  out.push(`chain ${oneLineText(trace.chainId)}${trace.parentChainId ? `  (resumes ${oneLineText(trace.parentChainId)})` : ""}`);
  out.push(
    `status: ${outcome?.status ?? "no end recorded (crashed or still running)"}` +
      `  created ${new Date(trace.createdAt).toISOString()}` +
      (outcome ? `  ${outcome.durationMs.toFixed(1)} ms` : "") +
      `  seed ${trace.seed}  clock ${new Date(trace.clockStart).toISOString()}`,
  );
  out.push(`toolbox: ${trace.toolbox.tools.map((tool) => oneLineText(tool.risk === "safe" ? tool.name : `${tool.name} (${tool.risk})`)).join(", ") || "(none)"}`);
  // The table measures its cells as given: escape the ones a script or a hand-made trace
  // controls (a tool name it called, known or not; a call id) first, so the columns line up as
  // printed and no line break in them starts a row of its own.
  const shown = { ...trace, calls: trace.calls.map((call) => ({ ...call, callId: oneLineText(call.callId), tool: oneLineText(call.tool) })) };
  out.push("", "calls:", indent(renderTraceTable(shown)));
  const inDoubt = shown.calls.filter((call) => call.state !== "completed");
  if (inDoubt.length > 0 && outcome?.status !== "suspended") {
    out.push(`  in doubt (started, never finished): ${inDoubt.map((call) => `${call.callId} ${call.tool}`).join(", ")}`);
  }
  for (const request of trace.approvalRequests) {
    const callId = waiting.get(request.id);
    const note = callId === undefined ? "" : `: ${oneLineText(callId)} waits for it (it never ran; resume with --decision)`;
    out.push(`  approval requested: ${oneLineText(`${request.tool} (${request.risk}) request ${request.id}`)}${note}`);
  }
  if (outcome?.error) {
    const where = outcome.error.line === undefined ? "" : ` at line ${outcome.error.line}${outcome.error.column === undefined ? "" : `, column ${outcome.error.column}`}`;
    out.push("", `error [${outcome.error.phase}]${where}: ${outcome.error.name}: ${outcome.error.message}`);
  }
  if (outcome?.returnArtifactRef) out.push("", `return value: (offloaded) ${outcome.returnArtifactRef}`);
  else if (outcome?.returnValue !== undefined) out.push("", "return value:", indent(JSON.stringify(outcome.returnValue, null, 2)));
  if (outcome?.outputText) out.push("", "console output:", indent(outcome.outputText.replace(/\n$/, "")));
  out.push("", "script:", renderScriptWithMarker(trace.source.replace(/\n$/, ""), outcome?.error?.line));
  return `${out.join("\n")}\n`;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `  ${line}`.trimEnd())
    .join("\n");
}
