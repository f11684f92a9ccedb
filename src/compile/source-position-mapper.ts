/**
 * Maps positions in compiled code (what V8 reports) back to the model's original script.
 *
 * Two shapes behind one interface: a line offset (type stripping keeps every column, the
 * wrapper only adds one line) and a decoded esbuild source map. Positions that fall in the
 * wrapper or in esbuild helpers map to nothing, and stack frames at such positions, or in
 * any other file (prelude, host), are dropped from mapped stacks.
 * @module
 */
import { COMPILED_FUNCTION_NAME, DEFAULT_SOURCE_NAME } from "./compiled-script-contract.ts";
import type { MappingSegment } from "./decode-source-map-mappings.ts";
import type { SourcePosition } from "./line-index.ts";

/** Translates compiled-code positions into positions in the original script. */
export interface SourcePositionMapper {
  /** Name of the original script used in mapped stacks, e.g. `chain.ts`. */
  readonly filename: string;
  /**
   * The original position of a 1-based `line`/`column` of the compiled code (V8 stack
   * numbering), or `undefined` when it is wrapper or helper code.
   */
  originalPosition(line: number, column: number): SourcePosition | undefined;
  /**
   * Rewrites a V8 stack: every `scriptName:L:C` of a frame becomes `<filename>:l:c` in the
   * original script, the frame of the script's own function reads `at chain.ts:l:c` (instead of
   * `at __chain__ (…)`), and frames that are not in the script (prelude, host, wrapper,
   * helpers) are dropped. The header (the error's name and message) is kept as it is; see
   * {@link StackHeader} for how it is told from the frames.
   */
  mapStack(stack: string, scriptName: string, header?: StackHeader): string;
  /** The first frame of `stack` that maps into the original script, if any. */
  locateError(stack: string, scriptName: string, header?: StackHeader): SourcePosition | undefined;
}

/**
 * The error whose stack is mapped. V8 begins a stack with the error's name and message
 * (`TypeError: x is not a function`) and then lists the frames, one per line; a message may span
 * lines and hold text that reads like a frame (a tool's error text carrying someone else's
 * stack), so the header's lines are counted from these and never read as frames. V8 writes the
 * stack when it is first read, from the name and message of that moment: a script that reads it,
 * then changes them, gets its frames read by a different count. A message cut before it reached
 * the host is counted as far as it goes. Without a header, the stack's first line is taken as its
 * header and every later line that reads like a frame is a frame.
 */
export interface StackHeader {
  readonly name: string;
  readonly message: string;
}

/** Options of {@link createSourcePositionMapper}. */
export interface SourcePositionMapperOptions {
  /**
   * Name of the original script in mapped stacks.
   * @defaultValue `"chain.ts"`
   */
  readonly filename?: string;
  /** Number of lines of the original script; positions past it map to nothing. */
  readonly lineCount: number;
  /** Lines added before the body by the wrapper (compiled line - offset = original line). */
  readonly lineOffset: number;
  /**
   * Decoded esbuild mappings of the compiled code, with original lines counted in the wrapped
   * text. Absent: columns are kept and only the line offset applies.
   */
  readonly segments?: readonly (readonly MappingSegment[])[];
  /**
   * The compiled code and the wrapped original text the segments map between. With them a
   * position past a segment's start moves as far in the original when the text between is the
   * same on both sides: esbuild maps only some tokens, so an error V8 places on an operator
   * (`big + x`) would otherwise land on the operand before it.
   */
  readonly texts?: { readonly generated: string; readonly original: string };
}

/** Builds a {@link SourcePositionMapper}; see {@link SourcePositionMapperOptions}. */
export function createSourcePositionMapper(options: SourcePositionMapperOptions): SourcePositionMapper {
  const filename = options.filename ?? DEFAULT_SOURCE_NAME;
  const { lineCount, lineOffset, segments, texts } = options;
  // Split on the first error that needs them, then kept with the mapper (a cached script's).
  let lines: { generated: readonly string[]; original: readonly string[] } | undefined;
  const linesOf = (given: { readonly generated: string; readonly original: string }) =>
    (lines ??= { generated: given.generated.split("\n"), original: given.original.split(LINE_BREAK) });

  const originalPosition = (line: number, column: number): SourcePosition | undefined => {
    if (!Number.isInteger(line) || !Number.isInteger(column) || line < 1 || column < 1) return undefined;
    let wrappedLine: number;
    let originalColumn: number;
    if (segments === undefined) {
      wrappedLine = line;
      originalColumn = column;
    } else {
      const segment = findSegment(segments[line - 1], column - 1);
      if (segment === undefined || segment.sourceIndex !== 0) return undefined;
      wrappedLine = segment.originalLine + 1;
      originalColumn = segment.originalColumn + 1;
      const distance = column - 1 - segment.generatedColumn;
      if (distance > 0 && texts !== undefined) {
        const { generated, original } = linesOf(texts);
        const between = generated[line - 1]?.slice(segment.generatedColumn, column - 1);
        if (between !== undefined && between.length === distance && original[segment.originalLine]?.startsWith(between, segment.originalColumn) === true) {
          originalColumn += distance;
        }
      }
    }
    const originalLine = wrappedLine - lineOffset;
    if (originalLine < 1 || originalLine > lineCount) return undefined;
    return { line: originalLine, column: originalColumn };
  };

  const mapFrames = (
    stack: string,
    scriptName: string,
    header: StackHeader | undefined,
    onPosition?: (position: SourcePosition) => boolean,
  ): string => {
    // Only the script's own file, whole: a frame's location is `(name:L:C)` or ends the line
    // after `at ` (`at name:L:C`, `at async name:L:C`); `/srv/app/chain.js:3:4` or
    // `blockchain.js:3:4` is another file.
    const location = new RegExp(`(?<=\\(|^\\s*at (?:async )?)${escapeRegExp(scriptName)}:(\\d+):(\\d+)(?=\\)|$)`, "gu");
    const lines = stack.split("\n");
    const headerLines = header === undefined ? 1 : countLines(header.name, lines.length) + countLines(header.message, lines.length) - 1;
    const out = lines.slice(0, headerLines);
    for (const line of lines.slice(headerLines)) {
      if (!/^\s*at\s/u.test(line)) {
        out.push(line);
        continue;
      }
      let mapped = false;
      const rewritten = line.replace(location, (whole, lineText: string, columnText: string) => {
        const position = originalPosition(Number(lineText), Number(columnText));
        if (position === undefined) return whole;
        mapped = true;
        if (onPosition?.(position) === true) return whole;
        return `${filename}:${String(position.line)}:${String(position.column)}`;
      });
      if (!mapped) continue;
      out.push(renameScriptFrame(rewritten));
    }
    return out.join("\n");
  };

  return {
    filename,
    originalPosition,
    mapStack: (stack, scriptName, header) => mapFrames(stack, scriptName, header),
    locateError: (stack, scriptName, header) => {
      let found: SourcePosition | undefined;
      mapFrames(stack, scriptName, header, (position) => {
        found ??= position;
        return true;
      });
      return found;
    },
  };
}

/** `at __chain__ (chain.ts:3:7)` → `at chain.ts:3:7`; `at async __chain__ (…)` likewise. */
function renameScriptFrame(frame: string): string {
  const match = new RegExp(`^(\\s*at\\s+(?:async\\s+)?)${COMPILED_FUNCTION_NAME}\\s+\\((.*)\\)\\s*$`, "u").exec(frame);
  return match === null ? frame : `${match[1] ?? ""}${match[2] ?? ""}`;
}

/**
 * Lines `text` takes in a stack split at `\n` (the only break V8 puts between frames; a `\r` or
 * U+2028 in a message stays inside its line), counted up to `max`: a message may be long, the
 * stack it heads is bounded.
 */
function countLines(text: string, max: number): number {
  let count = 1;
  for (let at = text.indexOf("\n"); at >= 0 && count < max; at = text.indexOf("\n", at + 1)) count += 1;
  return count;
}

/** The line terminators of JavaScript source, by which the wrapped original text's lines are counted. */
const LINE_BREAK = /\r\n|[\n\r\u2028\u2029]/u;

function findSegment(line: readonly MappingSegment[] | undefined, column: number): MappingSegment | undefined {
  if (line === undefined || line.length === 0) return undefined;
  let low = 0;
  let high = line.length - 1;
  if ((line[0]?.generatedColumn ?? 0) > column) return undefined;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((line[middle]?.generatedColumn ?? 0) <= column) low = middle;
    else high = middle - 1;
  }
  return line[low];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/gu, "\\$&");
}
