import { describe, expect, it } from "vitest";
import { linearRegExp, toRe2Syntax } from "../../src/toolbox/linear-regexp.ts";

/** Patterns as tool schemas write them, and texts around their edges. */
const PATTERNS = [
  "^[a-z]+$",
  "^\\d{3}-\\d{4}$",
  "^[A-Z]{2}\\d{2}[A-Z0-9]{1,30}$",
  "^\\S+@\\S+\\.\\S+$",
  "^\\s*$",
  "^[\\s,]+$",
  "^.+$",
  "^a.b$",
  "^\\u00e9t\\u00E9$",
  "^\\u{1F600}$",
  "^[\\u0041-\\u005A]+$",
  "^\\p{L}+$",
  "^(?:[a-z0-9-]+\\.)+[a-z]{2,}$",
  "^(?<year>\\d{4})-(?<month>\\d{2})$",
  "^\\w+$",
  "\\bword\\b",
  "^[^\\n]*$",
  "^\\/api\\/v\\d+$",
  "colou?r",
  "^(a+)+$",
  "^(a|aa)+$",
  "^x{2,3}$",
  "^\\uD83D\\uDE00$",
  "^[\\uD83D\\uDE00]$",
];
const TEXTS = [
  "",
  "abc",
  "ABC",
  "555-1234",
  "DE44500105175407324931",
  "a@b.co",
  "a b@c.d",
  " \t\n",
  "\u00a0\u2003\ufeff",
  "a\nb",
  "a\rb",
  "a\u2028b",
  "axb",
  "été",
  "😀",
  "héllo",
  "example.com",
  "2026-11",
  "a word here",
  "/api/v2",
  "color",
  "aaaa",
  "xx",
  "xxxx",
  "\uD83D",
  "😀😀",
];

describe("linearRegExp (ajv's pattern engine)", () => {
  it("matches what V8's engine matches, for schema-style patterns", () => {
    for (const pattern of PATTERNS) {
      const native = new RegExp(pattern, "u");
      const linear = linearRegExp(pattern, "u");
      expect(linear, pattern).not.toBeInstanceOf(RegExp);
      for (const text of TEXTS) expect(linear.test(text), `${pattern} on ${JSON.stringify(text)}`).toBe(native.test(text));
    }
  });

  it("answers a catastrophic pattern at once", () => {
    expect(linearRegExp("^(a+)+$", "u").test(`${"a".repeat(50_000)}!`)).toBe(false);
    expect(linearRegExp("^(\\w+\\s?)*$", "u").test(`${"word ".repeat(10_000)}!`)).toBe(false);
  });

  it("keeps V8's engine for what RE2 cannot express", () => {
    for (const pattern of ["^(?=.*\\d).+$", "(?<!x)y", "^(a)\\1$", "^[^]$", "[\\S\\d]", "\\cJ", "^(?s:.+)$", "(?m:a$)", "(?-i:a)", "^[[:digit:][a]$"]) {
      expect(toRe2Syntax(pattern), pattern).toBeUndefined();
      const engine = linearRegExp(pattern, "u");
      expect(engine).toBeInstanceOf(RegExp);
    }
  });

  it("refuses, as new RegExp does, a pattern that is not ECMAScript", () => {
    expect(() => linearRegExp("(", "u")).toThrow(SyntaxError);
    expect(() => linearRegExp("a{", "u")).toThrow(SyntaxError);
  });
});
