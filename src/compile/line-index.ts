/**
 * Line bookkeeping for script text. Lines end at every ECMAScript line terminator (`\r\n`,
 * `\n`, `\r`, U+2028, U+2029), the same rule V8 uses for stack positions and esbuild for
 * error locations, so a CRLF script and an LF script give the same line numbers. Columns are
 * UTF-16 code units, like JavaScript string indices and V8 stack columns.
 * @module
 */

/** A 1-based line and column in a text; the column counts UTF-16 code units. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/** Offsets (UTF-16 indices) at which each line of `text` starts; always at least one entry. */
export function lineStartOffsets(text: string): number[] {
  const starts = [0];
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0x0a || code === 0x2028 || code === 0x2029) {
      starts.push(index + 1);
    } else if (code === 0x0d) {
      if (text.charCodeAt(index + 1) === 0x0a) index += 1;
      starts.push(index + 1);
    }
  }
  return starts;
}

/** The lines of `text` without their terminators. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|[\n\r\u2028\u2029]/u);
}

/** The 1-based position of a UTF-16 `offset` in a text whose line starts are `starts`. */
export function positionAtOffset(starts: readonly number[], offset: number): SourcePosition {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((starts[middle] ?? 0) <= offset) low = middle;
    else high = middle - 1;
  }
  return { line: low + 1, column: offset - (starts[low] ?? 0) + 1 };
}

/** Converts a 0-based UTF-8 byte column within `lineText` into a 0-based UTF-16 column. */
export function utf8ColumnToUtf16(lineText: string, byteColumn: number): number {
  if (byteColumn <= 0) return 0;
  let bytes = 0;
  let index = 0;
  while (index < lineText.length && bytes < byteColumn) {
    const code = lineText.codePointAt(index) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    index += code >= 0x10000 ? 2 : 1;
  }
  return index + Math.max(0, byteColumn - bytes);
}
