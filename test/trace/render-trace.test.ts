import { describe, expect, it } from "vitest";
import type { TraceCallEntry } from "../../src/trace/chain-trace.ts";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import { renderScriptWithMarker, renderTraceTable } from "../../src/trace/render-trace.ts";
import { chainStartEvent, toolCallEvent, toolResultEvent } from "./fixtures/sample-events.ts";
import { thrown } from "../support/thrown.ts";

describe("renderTraceTable", () => {
  it("shows one aligned row per call: seq, callId, tool, status or state, ms", () => {
    const trace = foldTraceEvents([
      chainStartEvent("r"),
      toolCallEvent(0),
      toolResultEvent(0, { durationMs: 12.4 }),
      toolCallEvent(1, { callId: "c10", tool: "send_email" }),
      toolResultEvent(1, { callId: "c10", status: "denied", result: { status: "denied", text: "no", code: "APPROVAL_DENIED" }, durationMs: 1503 }),
      toolCallEvent(2, { tool: "crm_query" }),
    ]);
    expect(renderTraceTable(trace)).toBe(
      [
        "seq  callId  tool        status                    ms",
        "0    c0      echo        ok                        12",
        "1    c10     send_email  denied (APPROVAL_DENIED)  1503",
        "2    c2      crm_query   in-doubt                  -",
      ].join("\n"),
    );
  });

  it("says so when there are no calls", () => {
    expect(renderTraceTable(foldTraceEvents([chainStartEvent("r")]))).toBe("seq  callId  tool  status  ms\n(no calls)");
  });

  it("renders a trace of 200 000 calls (no call-stack overflow from one argument per row)", () => {
    const base = foldTraceEvents([chainStartEvent("big"), toolCallEvent(0)]);
    const call = base.calls[0] as TraceCallEntry;
    const calls = Array.from({ length: 200_000 }, (_, seq) => ({ ...call, seq, callId: `c${seq}` }));
    const lines = renderTraceTable({ ...base, calls }).split("\n");
    expect(lines).toHaveLength(200_001);
    expect(lines[0]).toBe("seq     callId   tool  status    ms");
    expect(lines[200_000]).toBe("199999  c199999  echo  in-doubt  -");
  });

  it("shows started for a live view of a running call", () => {
    const trace = foldTraceEvents([chainStartEvent("r"), toolCallEvent(0)], { openCallState: "started" });
    expect(renderTraceTable(trace).split("\n")[1]).toBe("0    c0      echo  started  -");
  });
});

describe("renderScriptWithMarker", () => {
  const source = Array.from({ length: 10 }, (_, index) => `line ${index + 1}`).join("\n");

  it("numbers every line and marks the failing one with >", () => {
    const lines = renderScriptWithMarker(source, 9).split("\n");
    expect(lines[0]).toBe("   1 | line 1");
    expect(lines[8]).toBe(">  9 | line 9");
    expect(lines[9]).toBe("  10 | line 10");
    expect(lines.filter((line) => line.startsWith(">"))).toHaveLength(1);
  });

  it("marks nothing without a line or with one outside the script", () => {
    for (const line of [undefined, 0, 11]) {
      expect(renderScriptWithMarker(source, line).includes(">")).toBe(false);
    }
  });

  it("handles CRLF and blank lines without trailing spaces", () => {
    expect(renderScriptWithMarker("a\r\n\r\nb", 2)).toBe("  1 | a\n> 2 |\n  3 | b");
  });

  it("counts lines as JavaScript does: a lone CR, U+2028 and U+2029 end a line too, CRLF is one", () => {
    // An error at line 3 of this script is the throw: JavaScript counts \r, \u2028 and \u2029.
    const script = "a\rb\u2028throw 1\u2029c\r\nd";
    expect(renderScriptWithMarker(script, 3)).toBe("  1 | a\n  2 | b\n> 3 | throw 1\n  4 | c\n  5 | d");
    expect(renderScriptWithMarker(script, 6)).not.toContain(">");
  });
});


describe("render-trace arguments", () => {
  it("renderTraceTable refuses what is not a trace with TRACE_INVALID, as exportTraceJson does", () => {
    const good = foldTraceEvents([chainStartEvent("r"), toolCallEvent(0)]);
    for (const trace of [{}, null, undefined, "trace", { ...good, calls: 5 }, { ...good, calls: [{ seq: 0 }] }]) {
      const error = thrown(() => renderTraceTable(trace as never));
      expect(error.code).toBe("TRACE_INVALID");
      expect(error.message).toMatch(/^renderTraceTable\(\): not a chain trace: /);
    }
  });

  it("renderScriptWithMarker refuses a source that is not a string or a line that is not a number", () => {
    for (const source of [undefined, null, 5, { source: "x" }]) {
      expect(thrown(() => renderScriptWithMarker(source as never))).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "source" } });
    }
    for (const line of [null, "2", {}]) {
      expect(thrown(() => renderScriptWithMarker("a\nb", line as never))).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "line" } });
    }
    expect(thrown(() => renderScriptWithMarker(undefined as never)).message).toBe(
      "renderScriptWithMarker() source must be the script's text (a string); got undefined.",
    );
  });
});
