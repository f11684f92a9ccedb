import { describe, expect, it } from "vitest";
import { callFromFrame } from "../../sandbox/isolate-common.ts";
import { boundLogLine, utf8Prefix } from "../../sandbox/output-cap.ts";

describe("boundLogLine (the host's own output bound)", () => {
  it("counts UTF-8 bytes, not UTF-16 units", () => {
    expect(boundLogLine("€€", 0, 100)).toEqual({ text: "€€", counted: 6, cut: false });
    expect(boundLogLine("abc", 10, 100)).toEqual({ text: "abc", counted: 13, cut: false });
  });

  it("cuts the line that crosses the bound, never inside a character, and stops after it", () => {
    expect(boundLogLine("€€€€", 0, 7)).toEqual({ text: "€€", counted: 7, cut: true });
    expect(boundLogLine("a😀b", 0, 4)).toEqual({ text: "a", counted: 4, cut: true });
    expect(boundLogLine("more", 7, 7)).toBeUndefined();
    expect(boundLogLine("x".repeat(20), 0, 10, 4)).toEqual({ text: "xxxxxx", counted: 10, cut: true });
  });
});

describe("utf8Prefix", () => {
  it("is the longest prefix within the byte budget", () => {
    expect(utf8Prefix("héllo", 2)).toBe("h");
    expect(utf8Prefix("héllo", 3)).toBe("hé");
    expect(utf8Prefix("😀😀", 7)).toBe("😀");
    expect(utf8Prefix("abc", 0)).toBe("");
    expect(utf8Prefix("abc", 10)).toBe("abc");
  });
});

describe("callFromFrame", () => {
  it("drops a call frame whose index the prelude could not have given", () => {
    for (const index of [-1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(callFromFrame(index, "echo", "{}", undefined, 1024), String(index)).toBeUndefined();
    }
    expect(callFromFrame(3, "echo", "{}", undefined, 1024)).toEqual({ callIndex: 3, tool: "echo", argsJson: "{}" });
  });
});
