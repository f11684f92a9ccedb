import { describe, expect, it } from "vitest";
import { formatLogArguments, formatValue } from "../../prelude/format-value.ts";

describe("formatLogArguments", () => {
  it("prints strings raw and other values JSON-ish", () => {
    expect(formatLogArguments(["a", 1, -0, 2n, null, undefined, true, { k: "v", "x-y": [1] }])).toBe(
      'a 1 -0 2n null undefined true { k: "v", "x-y": [ 1 ] }',
    );
  });

  it("marks cycles and cuts deep or long values", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic["me"] = cyclic;
    expect(formatValue(cyclic)).toBe("{ a: 1, me: [Circular] }");
    expect(formatValue({ a: { b: { c: { d: { e: 1 } } } } })).toBe("{ a: { b: { c: { d: [Object] } } } }");
    expect(formatValue(Array.from({ length: 102 }, () => 0))).toMatch(/\.\.\. 2 more \]$/);
  });

  it("prints functions, symbols, errors, dates, maps and sets", () => {
    const error = new TypeError("bad");
    error.stack = "TypeError: bad\n    at x";
    expect(formatLogArguments([function named() {}, Symbol("s"), error, new Date(0), new Map([["k", 1]]), new Set([1])])).toBe(
      '[Function: named] Symbol(s) TypeError: bad\n    at x 1970-01-01T00:00:00.000Z Map(1) { "k" => 1 } Set(1) { 1 }',
    );
  });

  it("never throws, whatever getters do", () => {
    const hostile = { get boom(): never { throw new Error("x"); } };
    expect(formatValue(hostile)).toBe("[unprintable]");
  });
});
