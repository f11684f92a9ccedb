import { type ChainRunResult, describeThrown } from "../kernel/index.ts";
import type { TracedChainRunResult } from "./traced-chain-run-result.ts";

/** Bounds of the text summary the model reads. */
export interface RunSummaryLimits {
  /** Bytes of the return value shown inline. @defaultValue 4096 */
  readonly maxReturnBytes: number;
  /** Bytes of console output shown. @defaultValue 4096 */
  readonly maxOutputBytes: number;
  /** Trace lines shown; the rest are counted. @defaultValue 60 */
  readonly maxTraceLines: number;
}

const DEFAULT_LIMITS: RunSummaryLimits = { maxReturnBytes: 4096, maxOutputBytes: 4096, maxTraceLines: 60 };

/**
 * The compact text a model reads after `run_chain`: status, return value, console output and one
 * line per call (seq, tool, status, ms). Every part is bounded, so a flood of calls or output
 * never floods the model's context.
 */
export function summarizeRun(run: ChainRunResult, limits: Partial<RunSummaryLimits> = {}): string {
  const bounds = { ...DEFAULT_LIMITS, ...limits };
  const lines: string[] = [];
  const calls = run.stats.toolCalls;
  lines.push(`status: ${run.status} (${Math.round(run.durationMs)} ms, ${calls} tool call${calls === 1 ? "" : "s"})`);
  if (run.error) {
    const where = run.error.line === undefined ? "" : ` at line ${run.error.line}${run.error.column === undefined ? "" : `, column ${run.error.column}`}`;
    lines.push(`error (${run.error.phase})${where}: ${run.error.name}: ${run.error.message}`);
    if (run.error.codeFrame) lines.push(run.error.codeFrame);
  }
  const traceError = (run as TracedChainRunResult).traceError;
  if (traceError) lines.push(`trace incomplete: ${traceError.code}: ${traceError.message} (${traceError.lostEvents} event(s) lost)`);
  for (const warning of run.warnings ?? []) lines.push(`warning (${warning.code}): ${warning.message}`);
  if (run.pendingApproval) {
    lines.push(`waiting for approval of ${run.pendingApproval.tool} (request ${run.pendingApproval.id})`);
  }
  if (run.returnArtifactRef) {
    lines.push(`return value: stored as artifact ${run.returnArtifactRef} (too large to show inline)`);
  } else if (run.returnValue !== undefined) {
    lines.push(`return value:\n${truncate(showJson(run.returnValue), bounds.maxReturnBytes)}`);
  }
  if (run.outputText) lines.push(`console output:\n${truncate(run.outputText, bounds.maxOutputBytes)}`);
  if (run.callTrace.length > 0) {
    lines.push("calls:");
    const shown = run.callTrace.slice(0, bounds.maxTraceLines);
    for (const record of shown) {
      const reason = record.status === "ok" ? "" : ` ${record.code ?? ""}`.trimEnd();
      lines.push(`  #${record.seq} ${record.tool} ${record.status}${reason} ${Math.round(record.durationMs)}ms`);
    }
    const hidden = run.callTrace.length - shown.length + (run.droppedCallRecords ?? 0);
    if (hidden > 0) lines.push(`  … ${hidden} more call${hidden === 1 ? "" : "s"} not shown`);
  }
  return lines.join("\n");
}

/** `value` as indented JSON; a value JSON cannot show (a result built by hand) is said to be one, never thrown. */
function showJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? `(${typeof value}: not JSON)`;
  } catch (error) {
    return `(a value that cannot be shown as JSON: ${describeThrown(error)})`;
  }
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes, with a marker saying how much was cut. */
export function truncate(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= maxBytes) return text;
  const cut = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "");
  return `${cut}… [truncated ${bytes - Buffer.byteLength(cut, "utf8")} bytes]`;
}
