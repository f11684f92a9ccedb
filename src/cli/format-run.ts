import type { ArtifactRef, BlobStore, ChainRunResult } from "../index.ts";
import { clipText } from "./clip-text.ts";
import { formatTable } from "./format-table.ts";

/** What `formatRun` prints besides the run itself. */
export interface FormatRunOptions {
  readonly scriptPath: string;
  readonly code: string;
  /** Artifacts the run produced, with a label each. */
  readonly artifacts: ReadonlyMap<ArtifactRef, string>;
  readonly blobStore: BlobStore;
}

/** The human-readable report of one run: status, error or warnings, return value, console output, trace, artifacts. */
export async function formatRun(run: ChainRunResult, options: FormatRunOptions): Promise<string> {
  const out: string[] = [];
  out.push(`chain ${run.chainId}  ${options.scriptPath}`);
  out.push(`status: ${run.status}  ${run.durationMs.toFixed(1)} ms  ${run.stats.toolCalls} tool call(s)  cpu ${run.stats.cpuMs.toFixed(1)} ms`);
  if (run.error) {
    const where = run.error.line === undefined ? "" : ` (line ${run.error.line}, column ${run.error.column ?? "?"})`;
    out.push("", `error [${run.error.phase}]${where}: ${run.error.name}: ${run.error.message}`);
    if (run.error.codeFrame) out.push(run.error.codeFrame);
  }
  if (run.warnings) out.push("", ...run.warnings.map((warning) => `warning (${warning.code}): ${warning.message}`));
  // A run that did not end ok returned nothing: no section ("undefined" would read as a value).
  if (run.status === "ok") {
    out.push("", "return value:");
    if (run.returnArtifactRef) out.push(`  (offloaded) ${run.returnArtifactRef}`);
    else out.push(indent(run.returnValue === undefined ? "undefined" : JSON.stringify(run.returnValue, null, 2)));
  }
  if (run.outputText) out.push("", "console output:", indent(run.outputText.replace(/\n$/, "")));
  out.push("", "trace:");
  const rows = run.callTrace.map((record) => [
    String(record.seq),
    record.callId,
    record.tool,
    record.status,
    record.durationMs.toFixed(1),
    record.status === "ok" ? "" : clipText(`${record.code ?? ""} ${record.error ?? ""}`.trim(), 80),
  ]);
  out.push(rows.length === 0 ? "  (no tool calls)" : indent(formatTable(["seq", "call", "tool", "status", "ms", "note"], rows)));
  if (run.droppedCallRecords) out.push(`  … ${run.droppedCallRecords} more calls counted, not kept`);
  if (options.artifacts.size > 0) {
    out.push("", "artifacts:");
    for (const [ref, label] of options.artifacts) {
      const stat = await options.blobStore.stat(ref);
      out.push(`  ${ref}  ${stat ? `${stat.bytes} bytes ${stat.mimeType}` : "(missing)"}  ${label}`);
    }
  }
  return `${out.join("\n")}\n`;
}

function indent(text: string): string {
  return text.split("\n").map((line) => `  ${line}`).join("\n");
}
