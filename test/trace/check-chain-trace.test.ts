import { describe, expect, it } from "vitest";
import {
  exportTraceJson,
  foldTraceEvents,
  renderTraceTable,
  suspendedCalls,
  traceToTest,
  type ChainTrace,
} from "../../src/index.ts";
import { chainEndEvent, chainStartEvent, toolCallEvent, toolResultEvent } from "./fixtures/sample-events.ts";
import { thrown } from "../support/thrown.ts";


const trace: ChainTrace = foldTraceEvents([chainStartEvent("v"), toolCallEvent(0), toolResultEvent(0), chainEndEvent()]);

/** Public functions that take a trace from their caller and check it at once: [function, the caller its messages name, call]. */
const callers: ReadonlyArray<readonly [string, string, (trace: ChainTrace) => unknown]> = [
  ["exportTraceJson", "exportTraceJson()", (value) => exportTraceJson(value)],
  ["renderTraceTable", "renderTraceTable()", (value) => renderTraceTable(value)],
  ["suspendedCalls", "suspendedCalls()", (value) => suspendedCalls(value)],
  // traceToTest() checks through the export it embeds.
  ["traceToTest", "exportTraceJson()", (value) => traceToTest(value)],
];

describe("checkChainTrace: the trace format version", () => {
  it.each(callers)("%s refuses a trace object of a version it does not read, as loading it from a file does", (_function, name, call) => {
    for (const version of [99, 3, 0, 1.5, Number.NaN]) {
      const error = thrown(() => call({ ...trace, version }));
      expect(error.code).toBe("TRACE_INVALID");
      expect(error.message).toBe(
        `${name}: Trace format version ${String(version)} is not supported (this reader knows 1 and 2). ` +
          "Read it with the isochain version that wrote it.",
      );
      expect(error.details).toEqual({ version });
    }
  });

  it("names the version before any other problem: a newer format may have another shape", () => {
    const error = thrown(() => exportTraceJson({ ...trace, version: 99, calls: "c0" } as unknown as ChainTrace));
    expect(error.message).toMatch(/^exportTraceJson\(\): Trace format version 99 is not supported/);
  });

  it("leaves a version that is not a number to the shape check", () => {
    const error = thrown(() => renderTraceTable({ ...trace, version: "2" } as unknown as ChainTrace));
    expect(error.code).toBe("TRACE_INVALID");
    expect(error.message).toMatch(/^renderTraceTable\(\): not a chain trace: version is a string, not a number\./);
  });

  it.each(callers)("%s reads versions 1 and 2", (_function, _name, call) => {
    for (const version of [1, 2]) expect(() => call({ ...trace, version })).not.toThrow();
  });
});

describe("checkChainTrace: the fields a reader prints", () => {
  const ended = (outcome: object): ChainTrace => ({ ...trace, outcome: { ...trace.outcome, ...outcome } }) as ChainTrace;

  it.each([
    ['chainId "a\\nisochain: forged line" is not 1 to 128 letters, digits, "_" or "-"', { ...trace, chainId: "a\nisochain: forged line" }],
    ['chainId "../escape" is not 1 to 128 letters, digits, "_" or "-"', { ...trace, chainId: "../escape" }],
    ["toolbox.tools[0] is not { name, risk, schemaDigest } (strings)", { ...trace, toolbox: { tools: [null], digest: "d" } }],
    ["parentChainId is an object, not a string", { ...trace, parentChainId: { toString: 1 } }],
    ["approvalRequests[0] is not { id, tool, risk, args, ... } (id, tool and risk strings)", { ...trace, approvalRequests: [{ id: "r", tool: "t", risk: { x: 1 } }] }],
    ["outcome.outputText is a number, not a string", ended({ outputText: 5 })],
    ["outcome.returnArtifactRef is a number, not a string", ended({ returnArtifactRef: 12 })],
    ["outcome.durationMs is a string, not a finite number", ended({ durationMs: "1" })],
    ["outcome.error is not { phase, name, message, line?, column? } (phase, name and message strings; line and column numbers)", ended({ status: "error", error: null })],
    ["outcome.error is not { phase, name, message, line?, column? } (phase, name and message strings; line and column numbers)", ended({ status: "error", error: { phase: "runtime", name: "E", message: "m", line: "2" } })],
  ])("refuses a trace whose %s, naming the field, not with a TypeError", (problem, value) => {
    for (const [, name, call] of callers) {
      const error = thrown(() => call(value as unknown as ChainTrace));
      expect(error.code).toBe("TRACE_INVALID");
      expect(error.message).toBe(`${name}: not a chain trace: ${problem}. Load one with a TraceStore or loadTraceFile.`);
    }
  });

  it("ends the message of a policy refused with one period, not two", () => {
    const error = thrown(() => exportTraceJson({ ...trace, policy: { maxToolCalls: -5 } } as unknown as ChainTrace));
    expect(error.message).toBe(
      "exportTraceJson(): not a chain trace: its policy is not one a chain could have run under: ChainPolicy.maxToolCalls must be an integer from 0 to 1000000; got -5. " +
        "Load one with a TraceStore or loadTraceFile.",
    );
  });
});
