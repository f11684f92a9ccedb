/**
 * The text of a `SKILL.md` from its bytes: UTF-8, with or without a BOM, and nothing else.
 *
 * Decoding is fatal, never replacing: a file saved as Latin-1 or Windows-1252 would otherwise
 * load with U+FFFD where its accents were ("caf� cr�me") and go, garbled and in silence, into a
 * model's prompt. The refusal names the line and byte offset of the first bad byte, so the
 * author can find it.
 *
 * A UTF-16 or UTF-32 file is told apart before that by its byte-order mark (or, without one, by
 * the NUL byte beside the opening `-` every skill file starts with): as UTF-8 it is either
 * invalid or a front matter of NUL-interleaved characters, and either refusal would say nothing
 * about the real fault.
 * @module
 */
import { ChainRuntimeError } from "../kernel/index.ts";

/** Byte-order marks and NUL patterns of the encodings a skill file is sometimes saved in by mistake. */
const OTHER_ENCODINGS: readonly { readonly prefix: readonly number[]; readonly encoding: string; readonly how: string }[] = [
  // UTF-32 LE first: its mark starts with the UTF-16 LE one.
  { prefix: [0xff, 0xfe, 0x00, 0x00], encoding: "UTF-32LE", how: "by its byte-order mark" },
  { prefix: [0x00, 0x00, 0xfe, 0xff], encoding: "UTF-32BE", how: "by its byte-order mark" },
  { prefix: [0xff, 0xfe], encoding: "UTF-16LE", how: "by its byte-order mark" },
  { prefix: [0xfe, 0xff], encoding: "UTF-16BE", how: "by its byte-order mark" },
  // "-" (0x2d) beside a NUL: the opening "---" in UTF-16 without a byte-order mark.
  { prefix: [0x2d, 0x00], encoding: "UTF-16LE", how: "without a byte-order mark, by the NUL after its first character" },
  { prefix: [0x00, 0x2d], encoding: "UTF-16BE", how: "without a byte-order mark, by the NUL before its first character" },
];

/**
 * `bytes` (the content of `file`) as text; a leading UTF-8 BOM is dropped. Throws
 * `ChainRuntimeError` `SKILL_INVALID` naming `file` when the bytes are UTF-16 or UTF-32
 * (`details.encoding`), or are not valid UTF-8 (`details.line`, `details.offset`: the 0-based
 * byte offset of the first bad byte, `details.byte`: its value).
 */
export function decodeSkillText(bytes: Uint8Array, file: string): string {
  const other = OTHER_ENCODINGS.find(({ prefix }) => prefix.every((byte, index) => bytes[index] === byte));
  if (other !== undefined) {
    throw new ChainRuntimeError("SKILL_INVALID", `${file}: the skill file is ${other.encoding} (${other.how}); a skill file must be UTF-8, so save it as UTF-8.`, {
      details: { file, encoding: other.encoding },
    });
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    const offset = firstInvalidUtf8Byte(bytes);
    let line = 1;
    let lineStart = 0;
    for (let index = 0; index < offset; index++) {
      if (bytes[index] === 0x0a) {
        line++;
        lineStart = index + 1;
      }
    }
    const byte = bytes[offset] ?? 0;
    const hex = `0x${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    throw new ChainRuntimeError(
      "SKILL_INVALID",
      `${file}:${line}: the skill file is not valid UTF-8: byte ${hex} at offset ${offset} ` +
        `(byte ${offset - lineStart + 1} of line ${line}) is not part of a UTF-8 character. ` +
        "Save the file as UTF-8 (Latin-1 and Windows-1252 are not).",
      { details: { file, line, offset, byte }, cause: error },
    );
  }
}

/**
 * The 0-based offset of the first byte of `bytes` that is not part of a valid UTF-8 character
 * (`bytes.length` for a text cut inside its last character). Called only once the fatal decode
 * has failed: the replacing decoder's output is walked character by character, each valid one
 * advancing by its UTF-8 length, until a U+FFFD that the bytes there do not spell out (EF BF BD).
 */
function firstInvalidUtf8Byte(bytes: Uint8Array): number {
  // ignoreBOM keeps a leading BOM as a character, so the offsets stay those of the file.
  const text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  let offset = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (code === 0xfffd && !(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)) return offset;
    offset += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return offset;
}
