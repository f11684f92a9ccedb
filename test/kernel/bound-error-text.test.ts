import { describe, expect, it } from "vitest";
import { boundStack, clipText, MAX_STACK_LINE_CHARS, MAX_STACK_LINES } from "../../src/kernel/bound-error-text.ts";

describe("bounds on thrown error text", () => {
  it("cuts a long text once, with the original length in the marker, and leaves the cut as it is", () => {
    const cut = clipText("x".repeat(1_000), 200);
    expect(cut).toBe(`${"x".repeat(200)}… [800 more characters]`);
    expect(clipText(cut, 200)).toBe(cut);
    expect(clipText("short", 200)).toBe("short");
  });

  it("never splits a surrogate pair", () => {
    expect(clipText(`${"x".repeat(199)}😀tail`, 200)).toBe(`${"x".repeat(199)}… [6 more characters]`);
  });

  it("bounds a stack to its first lines, each cut, and is idempotent", () => {
    const stack = Array.from({ length: 300 }, (_, i) => `    at f${i} (chain.js:${i}:1)${i === 0 ? "y".repeat(5_000) : ""}`).join("\n");
    const bounded = boundStack(stack);
    const lines = bounded.split("\n");
    expect(lines).toHaveLength(MAX_STACK_LINES + 1);
    expect(lines[0]).toMatch(new RegExp(`^.{${MAX_STACK_LINE_CHARS}}… \\[\\d+ more characters\\]$`, "u"));
    expect(lines.at(-1)).toMatch(/^ {4}… \[stack cut: \d+ more characters\]$/);
    expect(boundStack(bounded)).toBe(bounded);
  });
});
