/**
 * How wide a text shows in a monospace terminal or editor, in cells: what a caret under a
 * column must skip. Counted per grapheme cluster (what shows as one character: `é` written as
 * `e` + U+0301, a flag, an emoji joined with U+200D), the way current terminals draw them:
 *
 * - 0 for a cluster of nothing but marks, format and control characters (a combining mark on
 *   its own, U+200B, U+FEFF);
 * - 2 for an emoji shown as a picture (an RGI emoji sequence: `❤️`, `1️⃣`, `👍🏽`, `🇫🇷`,
 *   `👨‍👩‍👧`; or any cluster with an emoji-presentation character) and for a cluster that starts
 *   with an East Asian Wide or Fullwidth character (CJK, kana, hangul, fullwidth forms:
 *   {@link WIDE_RANGES});
 * - 1 for the rest.
 *
 * A tab has no fixed width: callers keep tabs as they are (see `codeFrame`).
 * @module
 */

/** The text's width in cells: the sum of its grapheme clusters' widths (see the module comment). */
export function displayWidth(text: string): number {
  // ASCII without controls, the usual case: one cell per character.
  if (/^[\x20-\x7e]*$/u.test(text)) return text.length;
  let width = 0;
  for (const { segment } of graphemes().segment(text)) width += clusterWidth(segment);
  return width;
}

let segmenter: Intl.Segmenter | undefined;
function graphemes(): Intl.Segmenter {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  return segmenter;
}

function clusterWidth(cluster: string): number {
  if (/^[\p{Mn}\p{Me}\p{Cf}\p{Cc}]*$/u.test(cluster)) return 0;
  if (/^\p{RGI_Emoji}$/v.test(cluster) || /\p{Emoji_Presentation}/u.test(cluster)) return 2;
  return isWide(cluster.codePointAt(0) ?? 0) ? 2 : 1;
}

/**
 * Code points Unicode's East Asian Width property gives as Wide or Fullwidth (`EastAsianWidth.txt`),
 * by block (unassigned gaps inside a block included), leaving out the emoji the emoji check
 * already takes; sorted, not overlapping.
 */
const WIDE_RANGES: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], // Hangul Jamo, leading consonants
  [0x2329, 0x232a], // angle brackets
  [0x2e80, 0x303e], // CJK radicals, Kangxi radicals, ideographic description, CJK symbols and punctuation
  [0x3041, 0x33ff], // hiragana, katakana, bopomofo, hangul compatibility jamo, kanbun, CJK strokes and enclosed letters
  [0x3400, 0x4dbf], // CJK Extension A
  [0x4e00, 0x9fff], // CJK Unified Ideographs
  [0xa000, 0xa4cf], // Yi
  [0xa960, 0xa97f], // Hangul Jamo Extended-A
  [0xac00, 0xd7a3], // Hangul syllables
  [0xf900, 0xfaff], // CJK compatibility ideographs
  [0xfe10, 0xfe19], // vertical forms
  [0xfe30, 0xfe6f], // CJK compatibility forms, small form variants
  [0xff00, 0xff60], // fullwidth forms (not the halfwidth ones after them)
  [0xffe0, 0xffe6], // fullwidth signs
  [0x16fe0, 0x16fe4], // ideographic symbols
  [0x17000, 0x18d08], // Tangut, Khitan, Tangut supplement
  [0x1aff0, 0x1b2ff], // kana extended and supplement, Nushu
  [0x1f200, 0x1f265], // enclosed ideographic supplement
  [0x20000, 0x2fffd], // CJK Extensions B-F, compatibility supplement
  [0x30000, 0x3fffd], // CJK Extensions G-H
];

function isWide(codePoint: number): boolean {
  let low = 0;
  let high = WIDE_RANGES.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const [first, last] = WIDE_RANGES[middle] ?? [0, -1];
    if (codePoint < first) high = middle - 1;
    else if (codePoint > last) low = middle + 1;
    else return true;
  }
  return false;
}
