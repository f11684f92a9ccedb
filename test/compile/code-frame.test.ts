import { describe, expect, it } from "vitest";
import { codeFrame, displayWidth, lineStartOffsets, positionAtOffset, utf8ColumnToUtf16 } from "../../src/compile/index.ts";

const SOURCE = ["one", "two", "three", "four", "five", "six"].join("\n");

describe("codeFrame", () => {
  it("shows two lines around the fault with a caret under the column", () => {
    expect(codeFrame(SOURCE, 4, 3)).toBe(["  2 | two", "  3 | three", "> 4 | four", "    |   ^", "  5 | five", "  6 | six"].join("\n"));
  });

  it("on line 1 shows only what exists", () => {
    expect(codeFrame(SOURCE, 1, 1)).toBe(["> 1 | one", "    | ^", "  2 | two", "  3 | three"].join("\n"));
  });

  it("pads line numbers to the widest shown", () => {
    const source = Array.from({ length: 12 }, (_, i) => `l${String(i + 1)}`).join("\n");
    expect(codeFrame(source, 10, 2, { linesAbove: 1, linesBelow: 0 })).toBe(["   9 | l9", "> 10 | l10", "     |  ^"].join("\n"));
  });

  it("clamps positions past the end (unexpected end of script)", () => {
    expect(codeFrame("ab", 9, 99)).toBe(["> 1 | ab", "    |   ^"].join("\n"));
  });

  it("keeps tabs in the caret line so it aligns", () => {
    expect(codeFrame("\t\tx = ;", 1, 7)).toBe(["> 1 | \t\tx = ;", "    | \t\t    ^"].join("\n"));
  });

  it.each([
    // [what comes before the fault, the line, the fault's column, what the caret line holds before "^"]
    ["CJK characters (two cells each)", "const 名前 = ;", 12, " ".repeat(13)],
    ["fullwidth forms", "const ｘ = ＡＢ + ;", 16, " ".repeat(18)],
    ["an emoji (two code units, two cells)", "const s = '😀'; const b = ;", 27, " ".repeat(26)],
    ["an emoji joined with U+200D (eight code units, two cells)", "const s = '👨‍👩‍👧'; const b = ;", 33, " ".repeat(26)],
    ["a flag (four code units, two cells)", "const s = '🇫🇷'; const b = ;", 29, " ".repeat(26)],
    ["combining marks (no cell)", "const e\u0301\u0323 = ;", 13, " ".repeat(10)],
    ["a U+FEFF (no cell)", "\uFEFFconst b = ;", 12, " ".repeat(10)],
    ["a tab and a wide character", "\t名 = ;", 6, `\t${" ".repeat(5)}`],
  ])("puts the caret under the column by display width after %s", (_label, line, column, before) => {
    expect(line.slice(column - 1)).toBe(";");
    expect(codeFrame(line, 1, column)).toBe([`> 1 | ${line}`, `    | ${before}^`].join("\n"));
  });

  it("cuts very long lines to a window around the column", () => {
    const line = `${"a".repeat(1000)}!${"b".repeat(1000)}`;
    const frame = codeFrame(line, 1, 1001, { maxLineLength: 40 });
    const [text, caret] = frame.split("\n");
    expect(text).toBe(`> 1 | …${"a".repeat(20)}!${"b".repeat(19)}…`);
    expect(caret?.indexOf("^")).toBe(text?.indexOf("!"));
  });

  it("handles CRLF and empty sources", () => {
    expect(codeFrame("a\r\nb = ;\r\nc", 2, 5)).toBe(["  1 | a", "> 2 | b = ;", "    |     ^", "  3 | c"].join("\n"));
    expect(codeFrame("", 1, 1)).toBe(["> 1 |", "    | ^"].join("\n"));
  });
});

describe("displayWidth", () => {
  it.each([
    ["", 0],
    ["plain ASCII", 11],
    ["名前", 4],
    ["ｶﾀｶﾅ", 4], // halfwidth katakana
    ["한국어", 6],
    ["ＡＢ", 4],
    ["e\u0301", 1],
    ["\u0301", 0],
    ["a\u200Bb\uFEFF", 2],
    ["😀", 2],
    ["❤", 1], // text presentation
    ["❤\uFE0F", 2],
    ["1\uFE0F\u20E3", 2],
    ["👍🏽", 2],
    ["👨‍👩‍👧", 2],
    ["🇫🇷🇩🇪", 4],
    ["é😀名x", 6],
  ])("displayWidth(%j) = %i", (text, width) => {
    expect(displayWidth(text)).toBe(width);
  });
});

describe("line index", () => {
  it("counts every ECMAScript line terminator once", () => {
    const text = "a\r\nb\nc\rd\u2028e\u2029f";
    const starts = lineStartOffsets(text);
    expect(starts).toEqual([0, 3, 5, 7, 9, 11]);
    expect(positionAtOffset(starts, text.indexOf("e"))).toEqual({ line: 5, column: 1 });
    expect(positionAtOffset(starts, 1)).toEqual({ line: 1, column: 2 });
  });

  it("converts UTF-8 byte columns to UTF-16 columns", () => {
    expect(utf8ColumnToUtf16("x'😀é';", 0)).toBe(0);
    expect(utf8ColumnToUtf16("x'😀é';", 2)).toBe(2);
    expect(utf8ColumnToUtf16("x'😀é';", 6)).toBe(4);
    expect(utf8ColumnToUtf16("x'😀é';", 8)).toBe(5);
  });
});
