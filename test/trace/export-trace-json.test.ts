import { describe, expect, it } from "vitest";
import { exportTraceJson } from "../../src/trace/export-trace-json.ts";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import { chainEndEvent, chainStartEvent, toolCallEvent, toolResultEvent } from "./fixtures/sample-events.ts";

describe("exportTraceJson", () => {
  it("pretty-prints a trace that parses back to the same data", () => {
    const trace = foldTraceEvents([chainStartEvent("j"), toolCallEvent(0), toolResultEvent(0), chainEndEvent()]);
    const text = exportTraceJson(trace);
    expect(text).toContain('\n  "chainId": "j",');
    expect(JSON.parse(text)).toEqual(trace);
  });

  it("writes byte arrays as base64 and BigInts as strings instead of failing", () => {
    const trace = foldTraceEvents([
      chainStartEvent("j"),
      toolCallEvent(0, { args: { bytes: Buffer.from("hi"), view: new Uint8Array([1, 2]), big: 10n } }),
    ]);
    expect(JSON.parse(exportTraceJson(trace)).calls[0].args).toEqual({
      bytes: { $bytes: "aGk=" },
      view: { $bytes: "AQI=" },
      big: "10",
    });
  });
});
