import { displayWidth } from "./display-width.ts";
import { splitLines } from "./line-index.ts";

/** Options of {@link codeFrame}. */
export interface CodeFrameOptions {
  /**
   * Lines shown above the faulty line.
   * @defaultValue 2
   */
  readonly linesAbove?: number;
  /**
   * Lines shown below the faulty line.
   * @defaultValue 2
   */
  readonly linesBelow?: number;
  /**
   * Longest slice of a line shown; longer lines are cut to a window around the column, marked `…`.
   * @defaultValue 160
   */
  readonly maxLineLength?: number;
}

/**
 * A plain-text code frame in the style of Babel's, without colours: the lines around
 * `line`, each with its number, the faulty one marked `>` and followed by a caret under
 * `column`.
 *
 * ```text
 *   1 | const a = 1;
 * > 2 | const b = ;
 *     |           ^
 *   3 | return b;
 * ```
 *
 * `line` and `column` are 1-based (column in UTF-16 code units); out-of-range values are
 * clamped to the text, so a position just past the end (an unexpected end of script) points
 * after the last character. The caret is placed by display width, so it stands under the
 * column on a monospace screen: two cells for a CJK character or an emoji, none for a combining
 * mark (see `display-width.ts`); tabs before the column are kept in the caret line.
 */
export function codeFrame(source: string, line: number, column: number, options: CodeFrameOptions = {}): string {
  const lines = splitLines(source);
  const above = options.linesAbove ?? 2;
  const below = options.linesBelow ?? 2;
  const maxLength = Math.max(20, options.maxLineLength ?? 160);
  const target = Math.min(Math.max(1, Math.trunc(line) || 1), lines.length);
  const targetText = lines[target - 1] ?? "";
  const caretIndex = Math.min(Math.max(0, (Math.trunc(column) || 1) - 1), targetText.length);
  const windowStart = targetText.length > maxLength ? Math.max(0, caretIndex - (maxLength >> 1)) : 0;

  const first = Math.max(1, target - above);
  const last = Math.min(lines.length, target + below);
  const width = String(last).length;
  const out: string[] = [];
  for (let number = first; number <= last; number += 1) {
    const text = clip(lines[number - 1] ?? "", windowStart, maxLength);
    const gutter = `${number === target ? ">" : " "} ${String(number).padStart(width)} |`;
    out.push(text.length > 0 ? `${gutter} ${text}` : gutter);
    if (number === target) {
      const leadIn = windowStart > 0 ? " " : "";
      const before = targetText.slice(windowStart, caretIndex).split("\t").map((part) => " ".repeat(displayWidth(part))).join("\t");
      out.push(`  ${" ".repeat(width)} | ${leadIn}${before}^`);
    }
  }
  return out.join("\n");
}

function clip(text: string, start: number, maxLength: number): string {
  if (start === 0 && text.length <= maxLength) return text;
  const slice = text.slice(start, start + maxLength);
  return `${start > 0 ? "…" : ""}${slice}${start + maxLength < text.length ? "…" : ""}`;
}
