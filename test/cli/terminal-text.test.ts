import { describe, expect, it } from "vitest";
import { escapeForTerminal, formatApprovalPrompt } from "../../src/approval/format-approval-prompt.ts";
import { clipText } from "../../src/cli/clip-text.ts";
import { formatRun } from "../../src/cli/format-run.ts";
import { formatTable } from "../../src/cli/format-table.ts";
import { oneLineText, terminalText } from "../../src/cli/terminal-text.ts";
import { type ChainRunResult, escapeTerminalText, MemoryBlobStore } from "../../src/index.ts";

const BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"];

describe("terminalText", () => {
  it("makes escape sequences and other control characters visible, keeping newlines, tabs and text", () => {
    expect(terminalText("chain \u001b[2J\u001b]0;owned\u0007id")).toBe("chain \\u001b[2J\\u001b]0;owned\\u0007id");
    expect(terminalText("a\tb\nc\r\u0000\u007f\u009b")).toBe("a\tb\nc\\u000d\\u0000\\u007f\\u009b");
    expect(terminalText("héllo ✓ 𝄞 שלום مرحبا")).toBe("héllo ✓ 𝄞 שלום مرحبا");
  });

  it("makes every bidi control visible (U+061C, U+200E/F, U+202A-202E, U+2066-2069)", () => {
    for (const char of BIDI) {
      expect(terminalText(`a${char}b`)).toBe(`a\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}b`);
    }
  });

  it("makes characters that show as nothing, or break a line unseen, visible: a recipient reads as it is", () => {
    const invisible = ["\u00ad", "\u180e", "\u200b", "\u200c", "\u200d", "\u2028", "\u2029", "\u2060", "\u2064", "\ufeff"];
    for (const char of invisible) {
      expect(terminalText(`a${char}b`)).toBe(`a\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}b`);
    }
    const prompt = formatApprovalPrompt({ id: "r1", chainId: "c", callId: "c0", tool: "send", risk: "high", args: { to: "ceo@exam\u200bple.com" } } as never);
    expect(prompt).toContain("ceo@exam\\u200bple.com");
  });

  it("is the approval prompt's definition too: the two escape the same characters", () => {
    const sample = `x\u001b[2J\u009b${BIDI.join("")}\u0085y`;
    expect(terminalText(sample)).toBe(escapeTerminalText(sample));
    expect(escapeForTerminal(sample)).toBe(escapeTerminalText(sample));
    const prompt = formatApprovalPrompt({ id: "r1", chainId: "c", callId: "c0", tool: "send", risk: "high", args: { to: `bob ${BIDI.join("")}` } } as never);
    expect(prompt).not.toMatch(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    expect(prompt).toContain("\\u061c");
  });

  it("oneLineText escapes line breaks too (\\n, U+2028, U+2029), for text that must stay on its line", () => {
    expect(oneLineText("a\nb\u2028c\u2029d\r\u001b")).toBe("a\\u000ab\\u2028c\\u2029d\\u000d\\u001b");
    expect(oneLineText("a\tb ✓")).toBe("a\tb ✓");
  });

  it("leaves JSON meaning the same", () => {
    const value = { s: `\\${BIDI.join("")}\u001b` };
    expect(JSON.parse(terminalText(JSON.stringify(value)))).toEqual(value);
  });
});

describe("formatTable", () => {
  it("measures cells as printed (escaped), so the columns line up", () => {
    const lines = formatTable(["tool", "status"], [["a\u202eb\u001b", "ok"], ["longer_name", "error"]]).split("\n");
    expect(lines).toEqual([`tool${" ".repeat(12)}status`, "a\\u202eb\\u001b  ok", `longer_name${" ".repeat(5)}error`]);
  });

  it("lays out 200 000 rows (no call-stack overflow from one argument per row)", () => {
    const rows = Array.from({ length: 200_000 }, (_, index) => [String(index), "ok"]);
    const lines = formatTable(["seq", "status"], rows).split("\n");
    expect(lines).toHaveLength(200_001);
    expect(lines[0]).toBe("seq     status");
    expect(lines[200_000]).toBe("199999  ok");
  });

  it("keeps each row on one line: a line break in a cell is escaped and measured as printed", () => {
    expect(formatTable(["a", "b"], [["x\ny", "1"], ["p\u2028q", "2"]]).split("\n")).toEqual([`a${" ".repeat(9)}b`, "x\\u000ay  1", "p\\u2028q  2"]);
  });

  it("counts a character outside the BMP as one column", () => {
    expect(formatTable(["t", "s"], [["𝄞", "x"], ["ab", "y"]]).split("\n")).toEqual(["t   s", "𝄞   x", "ab  y"]);
  });
});

describe("clipText", () => {
  it("never splits a surrogate pair", () => {
    const text = `${"a".repeat(78)}😀😀😀`;
    const clipped = clipText(text, 80);
    expect(clipped).toBe(`${"a".repeat(78)}😀…`);
    expect(clipped).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(clipText("short", 80)).toBe("short");
  });
});

describe("formatRun", () => {
  const run = (callTrace: readonly object[]): ChainRunResult =>
    ({
      chainId: "c",
      status: "ok",
      durationMs: 1,
      stats: { toolCalls: callTrace.length, cpuMs: 1 },
      returnValue: null,
      outputText: "",
      callTrace,
    }) as unknown as ChainRunResult;
  const options = { scriptPath: "s.ts", code: "", artifacts: new Map(), blobStore: new MemoryBlobStore() };

  it("cuts a call's note at 80 characters without splitting a surrogate pair", async () => {
    const text = await formatRun(run([{ seq: 0, callId: "c0", tool: "t", status: "error", durationMs: 1, code: "TOOL_ERROR", error: `${"e".repeat(67)}😀😀😀😀😀` }]), options);
    expect(text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    expect(text).toContain(`TOOL_ERROR ${"e".repeat(67)}😀…`);
  });

  it("prints the run's warnings after its status", async () => {
    const warned = {
      ...run([]),
      warnings: [
        { code: "CALLS_NOT_AWAITED", message: "1 tool call (#0) had not been answered when the script returned", seqs: [0] },
        { code: "UNHANDLED_REJECTION", message: "A promise was rejected at line 2, column 9 and nothing handled it: Error: disk full.", line: 2, column: 9 },
      ],
    } as ChainRunResult;
    const lines = (await formatRun(warned, options)).split("\n");
    expect(lines.slice(1, 5)).toEqual([
      "status: ok  1.0 ms  0 tool call(s)  cpu 1.0 ms",
      "",
      "warning (CALLS_NOT_AWAITED): 1 tool call (#0) had not been answered when the script returned",
      "warning (UNHANDLED_REJECTION): A promise was rejected at line 2, column 9 and nothing handled it: Error: disk full.",
    ]);
  });

  it("lines the trace up as printed when a cell holds a control or bidi character", async () => {
    const text = terminalText(
      await formatRun(
        run([
          { seq: 0, callId: "c0", tool: "x\u001b\u202ey", status: "ok", durationMs: 1 },
          { seq: 1, callId: "c1", tool: "longer_tool", status: "ok", durationMs: 1 },
        ]),
        options,
      ),
    );
    const rows = text.split("\n").filter((line) => /^ {2}(seq|\d) /.test(line));
    expect(rows).toHaveLength(3);
    const statusColumn = rows.map((line) => line.indexOf(line.startsWith("  seq") ? "status" : "ok"));
    expect(new Set(statusColumn).size, rows.join("\n")).toBe(1);
  });
});
