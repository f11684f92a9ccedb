import { describe, expect, it } from "vitest";
import { codeFrame, lineStartOffsets, positionAtOffset, utf8ColumnToUtf16 } from "../../src/compile/index.ts";

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
