import { describeKind } from "../kernel/check-option-shape.ts";
import { ChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace, TraceCallEntry } from "./chain-trace.ts";
import { checkChainTrace } from "./check-chain-trace.ts";

const COLUMNS = ["seq", "callId", "tool", "status", "ms"] as const;

/**
 * The calls of a trace as a plain-text table for `isochain trace show`, one row per call in
 * `seq` order: `seq`, `callId`, `tool`, status and duration in ms. The status is the call's
 * record status (`ok`, `error`, `denied`, `timeout`, with the failure code in parentheses) when
 * it completed, else its state (`in-doubt`, `started`); the duration is `-` when unknown.
 * Columns are separated by two spaces; no trailing spaces. A trace without calls gives the
 * header and `(no calls)`. Throws `ChainRuntimeError` `TRACE_INVALID` for what is not a trace.
 */
export function renderTraceTable(trace: ChainTrace): string {
  checkChainTrace(trace, "renderTraceTable()");
  const rows: string[][] = [[...COLUMNS]];
  for (const call of trace.calls) {
    rows.push([
      String(call.seq),
      call.callId,
      call.tool,
      describeCallStatus(call),
      call.durationMs === undefined ? "-" : String(Math.round(call.durationMs)),
    ]);
  }
  const widths = columnWidths(rows);
  const lines = rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd(),
  );
  if (trace.calls.length === 0) lines.push("(no calls)");
  return lines.join("\n");
}

/**
 * The widest cell of each column. A loop, not `Math.max(...cells)`: spreading one argument per
 * row overflows the call stack on a trace of some 150 000 calls.
 */
function columnWidths(rows: readonly (readonly string[])[]): number[] {
  const widths = COLUMNS.map(() => 0);
  for (const row of rows) {
    for (const [column, cell] of row.entries()) widths[column] = Math.max(widths[column] ?? 0, cell.length);
  }
  return widths;
}

function describeCallStatus(call: TraceCallEntry): string {
  if (call.state !== "completed") return call.state;
  const status = call.status ?? call.result?.status ?? "completed";
  const code = call.result !== undefined && "code" in call.result ? call.result.code : undefined;
  return code === undefined ? status : `${status} (${code})`;
}

/**
 * What JavaScript counts as the end of a line (ECMA-262 LineTerminatorSequence): an error's line
 * number counts these, so the script must be split on the same ones for the marker to land on
 * the failing line. CRLF is one terminator.
 */
const LINE_TERMINATOR = /\r\n|[\n\r\u2028\u2029]/;

/**
 * The script with 1-based line numbers in a gutter, the line `line` marked with `>` (the
 * failing line of a chain error). With `line` absent or outside the script, nothing is marked.
 *
 *       1 | const rows = await tools.crm_query({});
 *     > 2 | rows.nope.length;
 *
 * Throws `ChainRuntimeError` `ARGUMENT_INVALID` when `source` is not a string or `line` is
 * given and not a number.
 */
export function renderScriptWithMarker(source: string, line?: number): string {
  if (typeof source !== "string") {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `renderScriptWithMarker() source must be the script's text (a string); got ${describeKind(source)}.`, {
      details: { argument: "source" },
    });
  }
  if (line !== undefined && typeof line !== "number") {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `renderScriptWithMarker() line must be a 1-based line number when given; got ${describeKind(line)}.`, {
      details: { argument: "line" },
    });
  }
  const lines = source.split(LINE_TERMINATOR);
  const width = String(lines.length).length;
  return lines
    .map((text, index) => {
      const number = index + 1;
      const marker = number === line ? ">" : " ";
      return `${marker} ${String(number).padStart(width)} | ${text}`.trimEnd();
    })
    .join("\n");
}
