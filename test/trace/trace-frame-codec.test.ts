import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import type { TraceEvent } from "../../src/trace/trace-event.ts";
import { decodeTraceFrames, encodeTraceFrame, TRACE_FRAME_HEADER_BYTES } from "../../src/trace/trace-frame-codec.ts";
import { approvalRequestEvent, chainEndEvent, chainStartEvent, toolCallEvent, toolResultEvent } from "./fixtures/sample-events.ts";

const GOLDEN_EVENTS: TraceEvent[] = [
  chainStartEvent("golden"),
  toolCallEvent(0),
  approvalRequestEvent("golden"),
  toolResultEvent(0),
  chainEndEvent(),
];

describe("trace frame codec", () => {
  it("frames each event as a 4-byte big-endian length and its msgpack payload", () => {
    const frame = encodeTraceFrame(toolCallEvent(0));
    expect(frame.readUInt32BE(0)).toBe(frame.length - TRACE_FRAME_HEADER_BYTES);
    expect(decodeTraceFrames(frame)).toEqual({ events: [toolCallEvent(0)], validBytes: frame.length, tornBytes: 0 });
  });

  it("round-trips a log of every event type", () => {
    const bytes = Buffer.concat(GOLDEN_EVENTS.map(encodeTraceFrame));
    expect(decodeTraceFrames(bytes).events).toEqual(GOLDEN_EVENTS);
  });

  it("reads the golden v1 log byte for byte (the on-disk format must not drift)", async () => {
    const golden = await readFile(new URL("./fixtures/golden-v1.trace", import.meta.url));
    const expected = JSON.parse(await readFile(new URL("./fixtures/golden-v1.json", import.meta.url), "utf8")) as TraceEvent[];
    expect(decodeTraceFrames(golden).events).toEqual(expected);
    expect(Buffer.concat(expected.map(encodeTraceFrame)).equals(golden)).toBe(true);
  });

  it("reports a torn tail instead of throwing", () => {
    const whole = Buffer.concat(GOLDEN_EVENTS.map(encodeTraceFrame));
    const last = encodeTraceFrame(chainEndEvent()).length;
    for (const cut of [1, 2, last - 4, last - 1]) {
      const decoded = decodeTraceFrames(whole.subarray(0, whole.length - cut));
      expect(decoded.events).toEqual(GOLDEN_EVENTS.slice(0, -1));
      expect(decoded.validBytes).toBe(whole.length - last);
      expect(decoded.tornBytes).toBe(last - cut);
    }
    expect(decodeTraceFrames(new Uint8Array(0))).toEqual({ events: [], validBytes: 0, tornBytes: 0 });
  });

  it("treats a last frame whose payload does not decode as torn", () => {
    const start = encodeTraceFrame(chainStartEvent("t"));
    const zeros = Buffer.from([0, 0, 0, 3, 0x93, 0x01, 0x02]); // an array of three holding two
    expect(decodeTraceFrames(Buffer.concat([start, zeros]))).toMatchObject({ validBytes: start.length, tornBytes: 7 });
  });

  it("throws TRACE_INVALID for a bad frame that has frames after it", () => {
    const bad = Buffer.from([0, 0, 0, 0]); // empty payload
    const bytes = Buffer.concat([encodeTraceFrame(chainStartEvent("t")), bad, encodeTraceFrame(toolCallEvent(0))]);
    let error: unknown;
    try {
      decodeTraceFrames(bytes);
    } catch (thrown) {
      error = thrown;
    }
    expect(isChainRuntimeError(error) && error.code).toBe("TRACE_INVALID");
  });

  it("does not let a __proto__ key reach the prototype", () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as unknown;
    const [event] = decodeTraceFrames(encodeTraceFrame(toolCallEvent(0, { args: hostile }))).events;
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf((event as { args: object }).args)).toBe(Object.prototype);
  });

  it("keeps a __proto__ key as the own data it was (a replay sees what the run saw)", () => {
    const recorded = JSON.parse('{"__proto__": {"polluted": true}, "nested": [{"__proto__": 1, "constructor": 2}]}') as unknown;
    const [event] = decodeTraceFrames(encodeTraceFrame(toolCallEvent(0, { args: recorded }))).events;
    const args = (event as { args: Record<string, unknown> }).args;
    expect(JSON.stringify(args)).toBe(JSON.stringify(recorded));
    expect(Object.keys(args)).toEqual(["__proto__", "nested"]);
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it("decodes from a Uint8Array view that is not a Buffer", () => {
    const frame = encodeTraceFrame(toolCallEvent(1));
    const padded = new Uint8Array(frame.length + 8);
    padded.set(frame, 8);
    expect(decodeTraceFrames(padded.subarray(8)).events).toEqual([toolCallEvent(1)]);
  });

  it("encodes an object of 65 536 keys or more (too wide for msgpack's 16-bit map header)", () => {
    const wide: Record<string, number> = {};
    for (let i = 0; i < 70_000; i++) wide[`k${i}`] = i;
    const event: TraceEvent = { ...toolResultEvent(0), result: { status: "ok", text: "wide", structured: wide } } as TraceEvent;
    const frame = encodeTraceFrame(event);
    const decoded = decodeTraceFrames(frame).events[0] as Extract<TraceEvent, { type: "tool-result" }>;
    expect(Object.keys((decoded.result as { structured: object }).structured)).toHaveLength(70_000);
  });
});
