import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_ARGS_CHARS,
  escapeForTerminal,
  formatApprovalArgs,
  formatApprovalPrompt,
  parseApprovalAnswer,
} from "../../src/approval/format-approval-prompt.ts";
import { makeApprovalRequest } from "../contracts/approval-store.contract.ts";

describe("formatApprovalPrompt", () => {
  it("shows tool, risk, chain, request id and pretty JSON args, and ends with the question", () => {
    const text = formatApprovalPrompt(makeApprovalRequest({ args: { to: "a@b.c", n: [1] } }));
    expect(text).toContain("Approval needed: send_email (risk: high)");
    expect(text).toContain("chain: chain-1  request: req-1");
    expect(text).toContain('    {\n      "to": "a@b.c",\n      "n": [\n        1\n      ]\n    }');
    expect(text.endsWith("Approve? [y/N/s(kip)] ")).toBe(true);
  });

  it("escapes terminal control sequences and bidi overrides coming from the request", () => {
    const text = formatApprovalPrompt(
      makeApprovalRequest({ tool: "rm\u001b[2K", chainId: "c\nfake line", args: { note: "\u009b31m hidden \u202e txt.exe" } }),
    );
    expect(text).not.toMatch(/[\u001b\u009b\u202e]/);
    expect(text).toContain("rm\\u001b[2K");
    expect(text).toContain("c\\nfake line");
    expect(text).toContain("\\u009b31m hidden \\u202e txt.exe");
  });

  it("truncates long arguments with a note of what was left out", () => {
    const text = formatApprovalPrompt(makeApprovalRequest({ args: { blob: "x".repeat(10_000) } }), 100);
    expect(text).toMatch(/\.\.\. \(\d+ more characters not shown\)/);
    expect(text.length).toBeLessThan(400);
  });
});

describe("formatApprovalArgs", () => {
  it("defaults to 2000 characters", () => {
    expect(DEFAULT_MAX_ARGS_CHARS).toBe(2000);
    const shown = formatApprovalArgs("y".repeat(5000));
    expect(shown.split("\n")[0]).toHaveLength(2000);
    expect(shown.split("\n")[1]).toBe(`... (${5002 - 2000} more characters not shown)`);
  });

  it("keeps short arguments whole", () => {
    expect(formatApprovalArgs({ a: 1 }, 100)).toBe('{\n  "a": 1\n}');
  });

  it("never cuts a surrogate pair in half", () => {
    const shown = formatApprovalArgs("😀😀😀", 4);
    expect(shown.split("\n")[0]).toBe('"😀');
  });

  it("shows values JSON cannot hold without throwing", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(formatApprovalArgs(cyclic)).toBe("(arguments not serialisable as JSON)");
    expect(formatApprovalArgs({ n: 10n })).toContain('"10n"');
    expect(formatApprovalArgs(undefined)).toBe("(none)");
  });
});

describe("escapeForTerminal", () => {
  it("escapes newlines unless told to keep them, and leaves plain text alone", () => {
    expect(escapeForTerminal("a\nb")).toBe("a\\nb");
    expect(escapeForTerminal("a\nb", true)).toBe("a\nb");
    expect(escapeForTerminal("héllo 日本 ✓")).toBe("héllo 日本 ✓");
    expect(escapeForTerminal("\u0007\u007f\t")).toBe("\\u0007\\u007f\\u0009");
  });
});

describe("parseApprovalAnswer", () => {
  it.each([
    ["y", "approved"],
    ["Y", "approved"],
    [" yes ", "approved"],
    ["YES", "approved"],
    ["s", "skipped"],
    ["Skip", "skipped"],
    ["", "denied"],
    ["n", "denied"],
    ["no", "denied"],
    ["yep", "denied"],
    ["y y", "denied"],
  ])("reads %j as %s", (line, decision) => {
    expect(parseApprovalAnswer(line)).toBe(decision);
  });
});
