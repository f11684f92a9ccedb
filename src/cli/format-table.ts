import { terminalText } from "./terminal-text.ts";

/**
 * `rows` under `header` as aligned plain-text columns, two spaces apart, no trailing spaces.
 * Cells are escaped for the terminal before they are measured, so one holding a control or bidi
 * character (printed as `\u202e`, six columns) is as wide as it prints; widths count code points,
 * so a character outside the BMP (a surrogate pair) is one column.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = [header, ...rows].map((row) => header.map((_, column) => terminalText(row[column] ?? "")));
  const widths = header.map((_, column) => Math.max(...cells.map((row) => codePoints(row[column] ?? ""))));
  return cells
    .map((row) => row.map((cell, column) => cell + " ".repeat(Math.max(0, (widths[column] ?? 0) - codePoints(cell)))).join("  ").trimEnd())
    .join("\n");
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}
