import { describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import type { TraceEvent } from "../../src/trace/trace-event.ts";
import {
  approvalRequestEvent,
  chainEndEvent,
  chainStartEvent,
  toolCallEvent,
  toolResultEvent,
} from "./fixtures/sample-events.ts";

function foldError(events: readonly unknown[]): { code: string; message: string } {
  try {
    foldTraceEvents(events as TraceEvent[]);
  } catch (error) {
    if (isChainRuntimeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error("expected foldTraceEvents to throw");
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const field of Object.values(value)) deepFreeze(field);
    Object.freeze(value);
  }
  return value;
}

describe("foldTraceEvents", () => {
  it("builds a trace from a whole log without touching the events", () => {
    const events = deepFreeze([
      chainStartEvent("f1"),
      toolCallEvent(0),
      approvalRequestEvent("f1"),
      toolResultEvent(0),
      chainEndEvent({ outputText: "log line\n", error: { phase: "runtime", name: "Error", message: "boom", line: 2 } }),
    ]);
    const trace = foldTraceEvents(events);
    expect(trace).toMatchObject({ version: 2, chainId: "f1", seed: 42 });
    expect(trace.calls[0]).toMatchObject({ callId: "c0", state: "completed", status: "ok", durationMs: 100, endedAt: 1_700_000_000_200 });
    expect(trace.approvalRequests).toHaveLength(1);
    expect(trace.outcome).toEqual({
      status: "ok",
      returnValue: "hi 0",
      outputText: "log line\n",
      error: { phase: "runtime", name: "Error", message: "boom", line: 2 },
      durationMs: 250,
      stats: { wallMs: 250, cpuMs: 3, heapBytes: 1_000_000, toolCalls: 1 },
    });
  });

  it("leaves absent optional fields out rather than undefined", () => {
    const { risk: _risk, ...callWithoutRisk } = toolCallEvent(0);
    const { returnValue: _returnValue, ...endWithoutValue } = chainEndEvent();
    const trace = foldTraceEvents([chainStartEvent("f2"), callWithoutRisk, endWithoutValue]);
    expect("parentChainId" in trace).toBe(false);
    expect("risk" in (trace.calls[0] ?? {})).toBe(false);
    expect("returnValue" in (trace.outcome ?? {})).toBe(false);
    expect("outcome" in foldTraceEvents([chainStartEvent("f2")])).toBe(false);
  });

  it("orders calls by seq, whatever order the log holds them in", () => {
    const trace = foldTraceEvents([
      chainStartEvent("f3"),
      toolCallEvent(2),
      toolCallEvent(0),
      toolResultEvent(2),
      toolCallEvent(1),
      toolResultEvent(0),
    ]);
    expect(trace.calls.map((call) => [call.seq, call.state])).toEqual([
      [0, "completed"],
      [1, "in-doubt"],
      [2, "completed"],
    ]);
  });

  it("marks open calls in-doubt by default and started on request", () => {
    const events = [chainStartEvent("f4"), toolCallEvent(0)];
    expect(foldTraceEvents(events).calls[0]?.state).toBe("in-doubt");
    expect(foldTraceEvents(events, { openCallState: "started" }).calls[0]?.state).toBe("started");
  });

  it("keeps a call that ended after chain-end", () => {
    const trace = foldTraceEvents([chainStartEvent("f5"), toolCallEvent(0), chainEndEvent({ status: "cancelled" }), toolResultEvent(0)]);
    expect(trace.calls[0]?.state).toBe("completed");
    expect(trace.outcome?.status).toBe("cancelled");
  });

  it.each([
    ["an empty log", []],
    ["a log not starting with chain-start", [toolCallEvent(0)]],
    ["an unknown format version", [chainStartEvent("x", { version: 99 })]],
    ["a second chain-start", [chainStartEvent("x"), chainStartEvent("x")]],
    ["a callId started twice", [chainStartEvent("x"), toolCallEvent(0), toolCallEvent(0)]],
    ["a result for a call never started", [chainStartEvent("x"), toolResultEvent(0)]],
    ["two results for one call", [chainStartEvent("x"), toolCallEvent(0), toolResultEvent(0), toolResultEvent(0)]],
    ["a result whose seq disagrees", [chainStartEvent("x"), toolCallEvent(0), toolResultEvent(0, { seq: 3 })]],
    ["a second chain-end", [chainStartEvent("x"), chainEndEvent(), chainEndEvent()]],
    ["an unknown event type", [chainStartEvent("x"), { type: "tool-mystery" }]],
    ["a non-object event", [chainStartEvent("x"), 42]],
    ["a negative seq", [chainStartEvent("x"), toolCallEvent(0, { seq: -1 })]],
    ["a chain-start without source", [{ ...chainStartEvent("x"), source: undefined }]],
    ["a tool-result without a result", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: null }]],
    ["a chain-end without stats", [chainStartEvent("x"), { ...chainEndEvent(), stats: undefined }]],
    // A replay hands recorded results to the script as they are: tampered ones stop here.
    ["a seed run() would refuse", [chainStartEvent("x", { seed: 1.5 })]],
    ["a result status the invoker never returns", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "weird", text: "" } }]],
    ["a result whose text is not a string", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "ok", text: 12345 } }]],
    ["a failed result without a code", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "error", text: "x" } }]],
    ["a result ref that is not a sha256 ref", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "ok", text: "", artifactRef: "sha256:../../etc/passwd" } }]],
    ["result files that are not files", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "ok", text: "", files: "nope" } }]],
    ["a negative result size", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), result: { status: "ok", text: "", bytes: -1 } }]],
    ["a record status no call has", [chainStartEvent("x"), toolCallEvent(0), { ...toolResultEvent(0), status: "weird" }]],
    ["a chain status no run has", [chainStartEvent("x"), { ...chainEndEvent(), status: "whatever" }]],
    ["a clock start no Date can hold", [chainStartEvent("x", { clockStart: 1e300 })]],
    ["a creation time no Date can hold", [chainStartEvent("x", { createdAt: -9e15 })]],
    ["a call start no Date can hold", [chainStartEvent("x"), toolCallEvent(0, { startedAt: 8.64e15 + 1 })]],
    // Readers print and compare these: one of another type must not reach them.
    ["a toolbox tool that is null", [chainStartEvent("x", { toolbox: { tools: [null], digest: "d" } as never })]],
    ["a toolbox tool without a risk", [chainStartEvent("x", { toolbox: { tools: [{ name: "t", schemaDigest: "s" }], digest: "d" } as never })]],
    ["a toolbox without a digest", [chainStartEvent("x", { toolbox: { tools: [] } as never })]],
    ["a parent chain id that is an object", [chainStartEvent("x", { parentChainId: { toString: 1 } as never })]],
    ["a call risk that is an object", [chainStartEvent("x"), toolCallEvent(0, { risk: { x: 1 } as never })]],
    ["an approval request without an id", [chainStartEvent("x"), { type: "approval-request", request: { tool: "t", risk: "high" } }]],
    ["console output that is not a string", [chainStartEvent("x"), chainEndEvent({ outputText: 5 as never })]],
    ["a return artifact ref that is not a string", [chainStartEvent("x"), chainEndEvent({ returnArtifactRef: 12 as never })]],
    ["an error that is null", [chainStartEvent("x"), chainEndEvent({ status: "error", error: null as never })]],
    ["an error that is a string", [chainStartEvent("x"), chainEndEvent({ status: "error", error: "boom" as never })]],
    ["an error whose name is an object", [chainStartEvent("x"), chainEndEvent({ status: "error", error: { phase: "runtime", name: {}, message: "m" } as never })]],
    ["an error whose line is a string", [chainStartEvent("x"), chainEndEvent({ status: "error", error: { phase: "runtime", name: "E", message: "m", line: "2" } as never })]],
  ])("refuses %s with TRACE_INVALID", (_label, events) => {
    expect(foldError(events).code).toBe("TRACE_INVALID");
  });

  it("reads a version-1 log (no clock events, no result order) as well as the current one", () => {
    const trace = foldTraceEvents([chainStartEvent("old", { version: 1 }), toolCallEvent(0), toolResultEvent(0), chainEndEvent()]);
    expect(trace.version).toBe(1);
    expect(trace.clockReadings).toBeUndefined();
    expect(trace.calls[0]?.state).toBe("completed");
    expect(() => foldTraceEvents([chainStartEvent("new", { version: 3 })])).toThrow(/version 3 is not supported \(this reader knows 1 and 2\)/);
  });

  it("names the field that is malformed", () => {
    expect(foldError([chainStartEvent("x"), { ...toolCallEvent(0), startedAt: "soon" }]).message).toContain('"startedAt"');
    expect(foldError([chainStartEvent("x"), chainEndEvent({ outputText: { a: 1 } as never })]).message).toBe('Trace event 1 (chain-end) has a malformed "outputText".');
    expect(foldError([chainStartEvent("x", { parentChainId: 5 as never })]).message).toBe('Trace event 0 (chain-start) has a malformed "parentChainId".');
    // A digest is a sha256 digest: anything else is a damaged or hand-made record.
    expect(foldError([chainStartEvent("x"), { ...toolCallEvent(0), argsDigest: "not-hex!" }]).message).toBe('Trace event 1 (tool-call) has a missing or malformed "argsDigest".');
  });

  it("takes a complete error and leaves absent optional fields alone", () => {
    const error = { phase: "runtime", name: "E", message: "m", line: 2, column: 5, codeFrame: "> 2 | x", stack: "E: m" } as const;
    expect(foldTraceEvents([chainStartEvent("x"), chainEndEvent({ status: "error", error })]).outcome?.error).toEqual(error);
    const { risk: _risk, ...withoutRisk } = toolCallEvent(0);
    expect(() => foldTraceEvents([chainStartEvent("x"), withoutRisk, chainEndEvent()])).not.toThrow();
  });
});
