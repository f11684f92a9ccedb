/**
 * A minimal decoder for the `mappings` field of a version 3 source map (base64 VLQ).
 *
 * Invariants: generated columns restart at 0 on each generated line (`;`); source index,
 * original line and original column are deltas carried across the whole string. Segments
 * of one field (no source) are kept out: they map to nothing. Names are not decoded.
 * @module
 */
import { ChainRuntimeError } from "../kernel/index.ts";

/** One mapping: a generated column and the original position it came from, all 0-based. */
export interface MappingSegment {
  readonly generatedColumn: number;
  readonly sourceIndex: number;
  readonly originalLine: number;
  readonly originalColumn: number;
}

const BASE64_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT_VALUE = new Int8Array(128).fill(-1);
for (let index = 0; index < BASE64_DIGITS.length; index += 1) {
  DIGIT_VALUE[BASE64_DIGITS.charCodeAt(index)] = index;
}

/**
 * Decodes a `mappings` string into one array of segments per generated line (index 0 = line 1),
 * each sorted by generated column as the format requires.
 * @throws ChainRuntimeError `COMPILE_FAILED` when the string is not valid base64 VLQ.
 */
export function decodeSourceMapMappings(mappings: string): MappingSegment[][] {
  const lines: MappingSegment[][] = [];
  let segments: MappingSegment[] = [];
  let sourceIndex = 0;
  let originalLine = 0;
  let originalColumn = 0;
  let generatedColumn = 0;
  const fields: number[] = [];
  let value = 0;
  let shift = 0;

  const endSegment = (position: number): void => {
    if (shift !== 0) throw malformed(position, "a VLQ number is cut off");
    if (fields.length === 0) return;
    generatedColumn += fields[0] ?? 0;
    if (fields.length >= 4) {
      sourceIndex += fields[1] ?? 0;
      originalLine += fields[2] ?? 0;
      originalColumn += fields[3] ?? 0;
      segments.push({ generatedColumn, sourceIndex, originalLine, originalColumn });
    } else if (fields.length !== 1) {
      throw malformed(position, `a segment has ${String(fields.length)} fields`);
    }
    fields.length = 0;
  };

  for (let index = 0; index < mappings.length; index += 1) {
    const code = mappings.charCodeAt(index);
    if (code === 0x3b /* ; */) {
      endSegment(index);
      lines.push(segments);
      segments = [];
      generatedColumn = 0;
      continue;
    }
    if (code === 0x2c /* , */) {
      endSegment(index);
      continue;
    }
    const digit = code < 128 ? (DIGIT_VALUE[code] ?? -1) : -1;
    if (digit < 0) throw malformed(index, `unexpected character ${JSON.stringify(mappings[index])}`);
    value += (digit & 31) * 2 ** shift;
    if ((digit & 32) !== 0) {
      shift += 5;
      continue;
    }
    fields.push(value % 2 === 1 ? -Math.floor(value / 2) : Math.floor(value / 2));
    value = 0;
    shift = 0;
  }
  endSegment(mappings.length);
  lines.push(segments);
  return lines;
}

function malformed(position: number, why: string): ChainRuntimeError {
  return new ChainRuntimeError("COMPILE_FAILED", `Malformed source map mappings at ${String(position)}: ${why}.`, {
    details: { position },
  });
}
