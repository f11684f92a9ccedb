import { describe, expect, it } from "vitest";
import { terminalText } from "../../src/cli/terminal-text.ts";

describe("terminalText", () => {
  it("makes escape sequences and other control characters visible, keeping newlines, tabs and text", () => {
    expect(terminalText("chain \u001b[2J\u001b]0;owned\u0007id")).toBe("chain \\u001b[2J\\u001b]0;owned\\u0007id");
    expect(terminalText("a\tb\nc\r\u0000\u007f\u009b")).toBe("a\tb\nc\\u000d\\u0000\\u007f\\u009b");
    expect(terminalText("héllo ✓ 𝄞")).toBe("héllo ✓ 𝄞");
  });
});
