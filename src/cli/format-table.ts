import { oneLineText } from "./terminal-text.ts";

/**
 * `rows` under `header` as aligned plain-text columns, two spaces apart, no trailing spaces.
 * Cells are escaped for the terminal before they are measured, so one holding a control or bidi
 * character (printed as `\u202e`, six columns) is as wide as it prints; widths count code points,
 * so a character outside the BMP (a surrogate pair) is one column. A line break in a cell is
 * escaped too (`\u000a`): each row is one line, whatever a trace field holds.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cells = [header, ...rows].map((row) => header.map((_, column) => oneLineText(row[column] ?? "")));
  const widths = columnWidths(header.length, cells);
  return cells
    .map((row) => row.map((cell, column) => cell + " ".repeat(Math.max(0, (widths[column] ?? 0) - codePoints(cell)))).join("  ").trimEnd())
    .join("\n");
}

/**
 * The widest cell of each of `count` columns, in code points. A loop, not `Math.max(...cells)`:
 * spreading one argument per row overflows the call stack on a table of some 150 000 rows.
 */
function columnWidths(count: number, cells: readonly (readonly string[])[]): number[] {
  const widths = new Array<number>(count).fill(0);
  for (const row of cells) {
    for (const [column, cell] of row.entries()) widths[column] = Math.max(widths[column] ?? 0, codePoints(cell));
  }
  return widths;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}
