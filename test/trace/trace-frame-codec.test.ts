import { readFile } from "node:fs/promises";
import { Packr, unpack } from "msgpackr";
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

  it("treats a whole-length last frame as torn when it is a record's start followed by zeros", () => {
    const start = encodeTraceFrame(chainStartEvent("t"));
    // a map of two: key "a", then the zeros a file system left where the rest was to land
    const zeroFilled = Buffer.from([0, 0, 0, 5, 0x82, 0xa1, 0x61, 0, 0]);
    expect(decodeTraceFrames(Buffer.concat([start, zeroFilled]))).toMatchObject({ validBytes: start.length, tornBytes: 9 });
  });

  it("throws TRACE_INVALID for a last frame whose bytes are all there but damaged (read as torn, its call would run again)", () => {
    const start = encodeTraceFrame(chainStartEvent("t"));
    const call = Buffer.from(encodeTraceFrame(toolCallEvent(0)));
    call[4] = 0xc1; // the payload's first byte: a type msgpack never uses
    expect(() => decodeTraceFrames(Buffer.concat([start, call]))).toThrow(/Trace frame 1 at byte \d+ does not decode: the last frame, whole but damaged/);
    // a map of two holding one: msgpack calls it cut short, but all of the frame's bytes are there
    const damagedInside = Buffer.from([0, 0, 0, 5, 0x82, 0xa1, 0x61, 0x01, 0xc1]);
    expect(() => decodeTraceFrames(Buffer.concat([start, damagedInside]))).toThrow(/whole but damaged/);
  });

  it("throws TRACE_INVALID for a frame holding what no writer logs: a BigInt (alone or in a typed array), a value holding itself", () => {
    const start = encodeTraceFrame(chainStartEvent("t"));
    const frameOf = (event: unknown, packr: Packr): Buffer => {
      const body = packr.pack(event);
      const header = Buffer.alloc(TRACE_FRAME_HEADER_BYTES);
      header.writeUInt32BE(body.length);
      return Buffer.concat([header, body]);
    };
    const cyclic: Record<string, unknown> = { ...toolCallEvent(0) };
    cyclic.args = cyclic;
    const cases: [unknown, RegExp, Packr][] = [
      [{ ...toolCallEvent(0), args: { n: 2n ** 70n } }, /holds a BigInt/, new Packr({ useRecords: false, useBigIntExtension: true })],
      [{ ...toolCallEvent(0), args: { n: new BigInt64Array([1n]) } }, /holds a BigInt/, new Packr({ useRecords: false, moreTypes: true })],
      [cyclic, /does not decode/, new Packr({ useRecords: false, structuredClone: true })],
    ];
    for (const [event, message, packr] of cases) {
      let error: unknown;
      try {
        decodeTraceFrames(Buffer.concat([start, frameOf(event, packr), encodeTraceFrame(chainEndEvent())]));
      } catch (thrown) {
        error = thrown;
      }
      expect(isChainRuntimeError(error) && error.code, String(message)).toBe("TRACE_INVALID");
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).toContain("Trace frame 1 at byte");
    }
    // What a writer logs decodes: a caller's raw arguments 300 levels deep (the invoker refuses
    // them past 64, after TOOL_START logged them), dates and bytes.
    let kept: unknown = 1;
    for (let i = 0; i < 300; i++) kept = { k: kept };
    const fine = toolCallEvent(0, { args: { kept, none: null, at: new Date(0), bytes: Uint8Array.from([1]) } });
    expect(decodeTraceFrames(Buffer.concat([start, encodeTraceFrame(fine)])).events).toHaveLength(2);
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

  it("encodes JSON whose constructor and toJSON keys are data (msgpackr would call toJSON), and gives it back", () => {
    // JSON.parse makes `__proto__` an own key, as a tool's JSON does.
    const parsed = JSON.parse('{"constructor":1,"toJSON":1,"nested":[{"constructor":"x","toJSON":"y","__proto__":2}]}') as Record<string, unknown>;
    const event = { ...toolCallEvent(0), args: parsed } as TraceEvent;
    const decoded = decodeTraceFrames(encodeTraceFrame(event)).events[0] as Extract<TraceEvent, { type: "tool-call" }>;
    expect(JSON.stringify(decoded.args)).toBe(JSON.stringify(parsed));
    expect(Object.getPrototypeOf((decoded.args as { nested: object[] }).nested[0])).toBe(Object.prototype);
  });
});

/** The UTF-16 code units of `text`: what a script sees, and what must survive a trace. */
function units(text: string): number[] {
  return Array.from({ length: text.length }, (_, i) => text.charCodeAt(i));
}

/** An object msgpackr writes as what its `toJSON` returns. */
class Stamp {
  toJSON(): string {
    return "stamp\uD800";
  }
}

/** Strings holding lone surrogates, short and long (msgpackr writes the two in other ways). */
const SHORT = "a\uD800b";
const LONG = `${"x".repeat(100)}\uDC00${"y".repeat(100)}`;

describe("trace frame codec: lone surrogates", () => {
  it("gives back every string as it was, lone surrogates included, in results, arguments, approvals, keys and the outcome", () => {
    const events: TraceEvent[] = [
      chainStartEvent("lone", { source: `return "\uD83D";` }),
      toolCallEvent(0, { args: { s: "q\uD83D", t: "\uDE00".repeat(40), [`key\uD800`]: [SHORT] } }),
      toolResultEvent(0, { result: { status: "ok", text: LONG, structured: { short: SHORT, long: LONG, nested: [{ [`\uDBFF`]: SHORT }] } } }),
      { type: "approval-request", request: { ...approvalRequestEvent("lone").request, args: { to: `ceo\uDFFF@example.com` } } },
      chainEndEvent({ returnValue: { codes: [97, 55296, 98], text: SHORT }, outputText: `log ${LONG}\n` }),
    ];
    const decoded = decodeTraceFrames(Buffer.concat(events.map(encodeTraceFrame))).events;
    expect(decoded).toEqual(events);
    const { structured } = (decoded[2] as Extract<TraceEvent, { type: "tool-result" }>).result as { structured: Record<string, unknown> };
    expect(units(structured.short as string)).toEqual([97, 0xd800, 98]);
    expect(structured.long).toBe(LONG);
    const args = (decoded[1] as Extract<TraceEvent, { type: "tool-call" }>).args as Record<string, unknown>;
    expect(Object.keys(args)).toEqual(["s", "t", "key\uD800"]);
    expect(units(args.s as string)).toEqual([113, 0xd83d]);
  });

  it("writes only an event holding a lone surrogate as an escaped frame; every other event is its map, as before", () => {
    const plain = toolResultEvent(0, { result: { status: "ok", text: '"quoted" \uD83D\uDE00 (a whole pair)' } });
    const lone = toolResultEvent(0, { result: { status: "ok", text: SHORT } });
    expect(encodeTraceFrame(plain)[4]).toBe(0xde); // a map (msgpackr's 16-bit header)
    const frame = encodeTraceFrame(lone);
    // Any msgpack reader reads it; one that does not know escaped frames sees no event in it.
    expect(unpack(frame.subarray(4))).toEqual(["isochain:escaped-strings", { ...lone, result: { status: "ok", text: '"a\\ud800b"' } }]);
    expect(decodeTraceFrames(frame).events).toEqual([lone]);
  });

  it("gives back, in an escaped frame, strings that begin with a quote, a __proto__ key, bytes and what toJSON returns", () => {
    const recorded = JSON.parse('{"__proto__": {"polluted": "\\ud800"}, "\\"key\\"": "\\"value\\"", "json": "\\"a\\\\ud800b\\""}') as Record<string, unknown>;
    const args = { recorded, bytes: Uint8Array.from([0xed, 0xa0, 0x80]), stamp: new Stamp(), empty: "" };
    const [event] = decodeTraceFrames(encodeTraceFrame(toolCallEvent(0, { args }))).events;
    const decoded = (event as Extract<TraceEvent, { type: "tool-call" }>).args as Record<string, unknown>;
    expect(JSON.stringify(decoded.recorded)).toBe(JSON.stringify(recorded));
    expect(Object.getPrototypeOf(decoded.recorded)).toBe(Object.prototype);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.keys(decoded.recorded as object)).toEqual(["__proto__", '"key"', "json"]);
    expect(Uint8Array.from(decoded.bytes as Uint8Array)).toEqual(Uint8Array.from([0xed, 0xa0, 0x80]));
    expect(units(decoded.stamp as string)).toEqual([...units("stamp"), 0xd800]);
    expect(decoded.empty).toBe("");
  });

  it("treats an escaped frame cut short at the end of the log as a torn tail", () => {
    const start = encodeTraceFrame(chainStartEvent("t"));
    const escaped = encodeTraceFrame(toolResultEvent(0, { result: { status: "ok", text: LONG } }));
    expect(escaped[4]).toBe(0x92); // an array of two: the escaped frame
    for (const cut of [1, 10, escaped.length - 6]) {
      const decoded = decodeTraceFrames(Buffer.concat([start, escaped.subarray(0, escaped.length - cut)]));
      expect(decoded).toMatchObject({ events: [chainStartEvent("t")], validBytes: start.length, tornBytes: escaped.length - cut });
    }
  });

  it("refuses an escaped frame whose quoted string is not JSON text, with frames after it, as TRACE_INVALID", () => {
    const payload = Buffer.from(encodeTraceFrame(toolCallEvent(0, { args: { s: SHORT } })).subarray(4).toString("latin1").replace('"a\\ud800b"', '"a\\uXYZWb"'), "latin1");
    const header = Buffer.alloc(4);
    header.writeUInt32BE(payload.length);
    const bytes = Buffer.concat([encodeTraceFrame(chainStartEvent("t")), header, payload, encodeTraceFrame(toolResultEvent(0))]);
    expect(() => decodeTraceFrames(bytes)).toThrow(/Trace frame 1 at byte \d+ does not decode/);
  });
});
