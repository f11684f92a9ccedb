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
   * Rewrites a V8 stack: every `scriptName:L:C` becomes `<filename>:l:c` in the original
   * script, the frame of the script's own function reads `at chain.ts:l:c` (instead of
   * `at __chain__ (…)`), and frames that are not in the script (prelude, host, wrapper,
   * helpers) are dropped. Lines that are not frames (the message) are kept.
   */
  mapStack(stack: string, scriptName: string): string;
  /** The first frame of `stack` that maps into the original script, if any. */
  locateError(stack: string, scriptName: string): SourcePosition | undefined;
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
}

/** Builds a {@link SourcePositionMapper}; see {@link SourcePositionMapperOptions}. */
export function createSourcePositionMapper(options: SourcePositionMapperOptions): SourcePositionMapper {
  const filename = options.filename ?? DEFAULT_SOURCE_NAME;
  const { lineCount, lineOffset, segments } = options;

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
    }
    const originalLine = wrappedLine - lineOffset;
    if (originalLine < 1 || originalLine > lineCount) return undefined;
    return { line: originalLine, column: originalColumn };
  };

  const mapFrames = (stack: string, scriptName: string, onPosition?: (position: SourcePosition) => boolean): string => {
    const location = new RegExp(`${escapeRegExp(scriptName)}:(\\d+):(\\d+)`, "gu");
    const out: string[] = [];
    for (const line of stack.split("\n")) {
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
    mapStack: (stack, scriptName) => mapFrames(stack, scriptName),
    locateError: (stack, scriptName) => {
      let found: SourcePosition | undefined;
      mapFrames(stack, scriptName, (position) => {
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
