import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FrameDecoder, MAX_FRAME_BYTES, decodeFrame, encodeFrame, encodeMessage, isFrame } from "../../src/bridge/codec.ts";
import { FRAME_KIND, PROTOCOL_VERSION, type Frame } from "../../src/bridge/protocol.ts";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { Packr } from "msgpackr";

const FIXTURES = new URL("../fixtures/bridge/", import.meta.url);

/** A small deterministic PRNG so the property loops are reproducible. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function randomText(next: () => number): string {
  const alphabet = ["a", "Z", "0", " ", '"', "\\", "\n", "é", "✓", "𝄞", "\u2028", "\u0000"];
  let out = "";
  const length = Math.floor(next() * 40);
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * alphabet.length)];
  return out;
}

function randomFrame(next: () => number): Frame {
  const callIndex = Math.floor(next() * 2 ** 31);
  switch (Math.floor(next() * 6)) {
    case 0:
      return { kind: FRAME_KIND.call, callIndex, tool: randomText(next), argsJson: JSON.stringify({ t: randomText(next) }) };
    case 1:
      return { kind: FRAME_KIND.result, callIndex, resultJson: JSON.stringify({ status: "ok", text: randomText(next) }) };
    case 2:
      return { kind: FRAME_KIND.log, level: (["log", "info", "warn", "error", "debug"] as const)[callIndex % 5] ?? "log", text: randomText(next) };
    case 3:
      return { kind: FRAME_KIND.done, returnJson: JSON.stringify(randomText(next)) };
    case 4:
      return { kind: FRAME_KIND.clock, readings: [callIndex % 1000, 1 + (callIndex % 7), callIndex, 1] };
    default:
      return { kind: FRAME_KIND.done, error: { name: "Error", message: randomText(next), stack: randomText(next) } };
  }
}

const expectBridgeError = (fn: () => unknown): void => {
  try {
    fn();
  } catch (error) {
    expect(isChainRuntimeError(error) && error.code).toBe("BRIDGE_FRAME_INVALID");
    return;
  }
  throw new Error("expected a BRIDGE_FRAME_INVALID error");
};

describe("bridge codec", () => {
  const names = readdirSync(FIXTURES).filter((file) => file.endsWith(".json")).map((file) => file.slice(0, -5));

  it("has a golden fixture for every frame kind", () => {
    const kinds = new Set(names.map((name) => (JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")) as Frame).kind));
    expect([...kinds].sort()).toEqual(Object.values(FRAME_KIND).sort());
  });

  it.each(names)("encodes %s to its golden bytes and back", (name) => {
    const frame = JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), "utf8")) as Frame;
    const bytes = new Uint8Array(readFileSync(new URL(`${name}.bin`, FIXTURES)));
    expect(Buffer.from(encodeFrame(frame)).equals(Buffer.from(bytes))).toBe(true);
    expect(decodeFrame(bytes)).toEqual(frame);
  });

  it("accepts clock readings only as pairs of whole milliseconds and counts of at least 1", () => {
    expect(isFrame({ kind: FRAME_KIND.clock, readings: [0, 1, 12, 3] })).toBe(true);
    for (const readings of [[], [1], [-1, 1], [1, 0], [1.5, 1], [1, Number.NaN], ["1", 1], new Array(20_002).fill(1)]) {
      expect(isFrame({ kind: FRAME_KIND.clock, readings })).toBe(false);
    }
  });

  it("round-trips random frames exactly", () => {
    const next = prng(1);
    for (let i = 0; i < 500; i++) {
      const frame = randomFrame(next);
      expect(decodeFrame(encodeFrame(frame))).toEqual(frame);
    }
  });

  it("reassembles frames from chunks that split and coalesce them at random", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const next = prng(seed);
      const frames = Array.from({ length: 30 }, () => randomFrame(next));
      const stream = Buffer.concat(frames.map((frame) => encodeFrame(frame)));
      const decoder = new FrameDecoder();
      const out: Frame[] = [];
      for (let offset = 0; offset < stream.length; ) {
        const size = 1 + Math.floor(next() * 64);
        out.push(...decoder.push(stream.subarray(offset, offset + size)));
        offset += size;
      }
      expect(out).toEqual(frames);
      expect(decoder.pendingBytes).toBe(0);
    }
  });

  it("keeps every encoded frame intact while later frames are encoded", () => {
    // Frames are views on msgpackr's output buffer (no copy): later encodes must not write over them.
    const next = prng(7);
    const frames = Array.from({ length: 2000 }, (_, i) =>
      i % 500 === 250 ? { kind: FRAME_KIND.log, level: "log" as const, text: "y".repeat(100_000 + i) } : randomFrame(next),
    );
    const encoded = frames.map((frame) => encodeFrame(frame));
    expect(encoded.map((bytes) => decodeFrame(bytes))).toEqual(frames);
  });

  it("reassembles large frames from many chunks, the length prefix split too", () => {
    const big = { kind: FRAME_KIND.log, level: "log" as const, text: "é😀".repeat(300_000) };
    const small = { kind: FRAME_KIND.result, callIndex: 3, resultJson: "{}" };
    const head = encodeFrame(small);
    const stream = Buffer.concat([head, encodeFrame(big), encodeFrame(small), encodeFrame(big)]);
    // Cuts inside the big frame's length prefix, then chunks of several sizes.
    for (const cut of [head.length + 1, head.length + 2, head.length + 3, head.length + 4, head.length + 5]) {
      for (const size of [4096, 65_536, 1_000_003]) {
        const decoder = new FrameDecoder();
        const out: Frame[] = [...decoder.push(stream.subarray(0, cut))];
        expect(decoder.pendingBytes).toBe(cut - head.length);
        for (let offset = cut; offset < stream.length; offset += size) out.push(...decoder.push(stream.subarray(offset, offset + size)));
        expect(out).toEqual([small, big, small, big]);
        expect(decoder.pendingBytes).toBe(0);
      }
    }
  });

  it("holds no more than a peer sent for a frame declared huge, and still reassembles one past the preallocation bound", () => {
    // A peer that declares 60 MiB and stalls must not make the reader hold 60 MiB.
    const before = process.memoryUsage().arrayBuffers;
    const decoders = Array.from({ length: 4 }, () => new FrameDecoder());
    const prefix = new Uint8Array(9);
    new DataView(prefix.buffer).setUint32(0, 60 * 1024 * 1024, false);
    for (const decoder of decoders) expect(decoder.push(prefix)).toEqual([]);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 1024 * 1024);
    expect(decoders[0]?.pendingBytes).toBe(9);
    // A real frame of ~12 MiB (past the 8 MiB bound) arrives in 64 KiB chunks: the buffer grows.
    const big = { kind: FRAME_KIND.log, level: "log" as const, text: "ab€".repeat(4_200_000) };
    const bytes = encodeFrame(big);
    expect(bytes.length).toBeGreaterThan(8 * 1024 * 1024);
    const decoder = new FrameDecoder();
    const out: Frame[] = [];
    for (let offset = 0; offset < bytes.length; offset += 65_536) out.push(...decoder.push(bytes.subarray(offset, offset + 65_536)));
    expect(out).toEqual([big]);
    expect(decoder.pendingBytes).toBe(0);
  });

  it("does not depend on the caller keeping its chunk buffer", () => {
    const bytes = encodeFrame({ kind: FRAME_KIND.log, level: "log", text: "hello" });
    const decoder = new FrameDecoder();
    const chunk = Buffer.from(bytes.subarray(0, 6));
    expect(decoder.push(chunk)).toEqual([]);
    chunk.fill(0);
    expect(decoder.push(bytes.subarray(6))).toEqual([{ kind: FRAME_KIND.log, level: "log", text: "hello" }]);
  });

  it("refuses truncated bytes, trailing bytes and oversize lengths", () => {
    const bytes = encodeFrame({ kind: FRAME_KIND.result, callIndex: 1, resultJson: "{}" });
    expectBridgeError(() => decodeFrame(bytes.subarray(0, 2)));
    expectBridgeError(() => decodeFrame(bytes.subarray(0, bytes.length - 1)));
    expectBridgeError(() => decodeFrame(Buffer.concat([bytes, Buffer.from([0])])));
    const huge = new Uint8Array(4);
    new DataView(huge.buffer).setUint32(0, MAX_FRAME_BYTES + 1, false);
    expectBridgeError(() => new FrameDecoder().push(huge));
  });

  it("refuses another protocol version and malformed frames", () => {
    const packr = new Packr({ useRecords: false, structuredClone: false });
    const frameWith = (value: unknown): Uint8Array => {
      const body = packr.pack(value);
      const out = new Uint8Array(4 + body.length);
      new DataView(out.buffer).setUint32(0, body.length, false);
      out.set(body, 4);
      return out;
    };
    expectBridgeError(() => decodeFrame(frameWith({ v: PROTOCOL_VERSION + 1, frame: { kind: FRAME_KIND.result, callIndex: 0, resultJson: "{}" } })));
    expectBridgeError(() => decodeFrame(frameWith({ v: PROTOCOL_VERSION, frame: { kind: FRAME_KIND.result, callIndex: -1, resultJson: "{}" } })));
    expectBridgeError(() => decodeFrame(frameWith({ v: PROTOCOL_VERSION, frame: { kind: "nope" } })));
    expectBridgeError(() => decodeFrame(frameWith("text")));
  });

  it("checks each frame kind's fields", () => {
    expect(isFrame({ kind: FRAME_KIND.call, callIndex: 0, tool: "t", argsJson: "{}" })).toBe(true);
    expect(isFrame({ kind: FRAME_KIND.call, callIndex: 0.5, tool: "t", argsJson: "{}" })).toBe(false);
    expect(isFrame({ kind: FRAME_KIND.log, level: "trace", text: "" })).toBe(false);
    expect(isFrame({ kind: FRAME_KIND.done })).toBe(true);
    expect(isFrame({ kind: FRAME_KIND.done, returnJson: "1", error: { name: "E", message: "m" } })).toBe(false);
    expect(isFrame({ kind: FRAME_KIND.done, error: { name: "E" } })).toBe(false);
  });
});

describe("codec memory", () => {
  it("does not keep packing into a large buffer after a large message", () => {
    const large = encodeFrame({ kind: FRAME_KIND.log, level: "log", text: "x".repeat(4 * 1024 * 1024) });
    expect(large.buffer.byteLength).toBeGreaterThan(4 * 1024 * 1024);
    const small = encodeFrame({ kind: FRAME_KIND.log, level: "log", text: "after" });
    expect(small.buffer.byteLength).toBeLessThanOrEqual(1024 * 1024);
    expect(decodeFrame(small)).toEqual({ kind: FRAME_KIND.log, level: "log", text: "after" });
    // the large frame is still whole: the new buffer did not write over it
    expect((decodeFrame(large) as { text: string }).text.length).toBe(4 * 1024 * 1024);
  });

  it("packs a large message into a buffer sized to fit, not msgpackr's 4x growth", () => {
    const MiB = 1024 * 1024;
    // A byte array (a result text on the process pipe) gets about its own size...
    const bytes = new Uint8Array(MiB).fill(0x78);
    const withBytes = encodeMessage({ kind: "tool-results", results: [0, '{"status":"ok","text":""}', bytes] });
    expect(withBytes.buffer.byteLength).toBeLessThan(MiB + 4096);
    // ...a string its bound, 3 bytes per UTF-16 unit (msgpackr alone: 12 MiB for this one).
    const text = "é".repeat(MiB);
    const withString = encodeFrame({ kind: FRAME_KIND.done, returnJson: text });
    expect(withString.buffer.byteLength).toBeLessThan(3 * MiB + 4096);
    expect((decodeFrame(withString) as { returnJson: string }).returnJson).toBe(text);
    const [decoded] = new FrameDecoder((value): value is { results: unknown[] } => typeof value === "object").push(withBytes);
    expect(Buffer.from(decoded?.results[2] as Uint8Array).equals(Buffer.from(bytes))).toBe(true);
  });

  it("still packs a message deeper than its size walk, growing as msgpackr does", () => {
    let nested: unknown = "x".repeat(200_000);
    for (let i = 0; i < 12; i++) nested = [nested];
    const frame = encodeFrame({ kind: FRAME_KIND.done, error: { name: "E", message: "m", stack: "s" } });
    expect(decodeFrame(frame)).toMatchObject({ kind: FRAME_KIND.done });
    const deep = encodeMessage({ nested });
    let value = new FrameDecoder((v): v is { nested: unknown } => typeof v === "object").push(deep)[0]?.nested;
    for (let i = 0; i < 12; i++) value = (value as unknown[])[0];
    expect(value).toBe("x".repeat(200_000));
  });
});
