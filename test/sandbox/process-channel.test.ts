import { duplexPair } from "node:stream";
import { describe, expect, it } from "vitest";
import { encodeMessage, FrameDecoder } from "../../src/bridge/codec.ts";
import { FRAME_KIND } from "../../src/bridge/protocol.ts";
import { isChainRuntimeError } from "../../src/kernel/index.ts";
import { ProcessChannel } from "../../sandbox/process-channel.ts";
import { MAX_FRAME_BYTES } from "../../src/bridge/codec.ts";
import {
  isChildMessage,
  isHostMessage,
  PROCESS_MESSAGE_KIND,
  RESULT_FIELDS,
  splitBatch,
  type ChildMessage,
  type HostMessage,
} from "../../sandbox/process-protocol.ts";

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function pair(): {
  host: ProcessChannel<ChildMessage, HostMessage>;
  received: ChildMessage[];
  closed: (string | undefined)[];
  malformed: boolean[];
  childEnd: ReturnType<typeof duplexPair>[1];
} {
  const [hostEnd, childEnd] = duplexPair();
  const received: ChildMessage[] = [];
  const closed: (string | undefined)[] = [];
  const malformed: boolean[] = [];
  const host = new ProcessChannel<ChildMessage, HostMessage>(hostEnd, isChildMessage, {
    onMessage: (message) => received.push(message),
    onClose: (reason, wasMalformed) => {
      closed.push(reason);
      malformed.push(wasMalformed === true);
    },
  });
  return { host, received, closed, malformed, childEnd };
}

describe("ProcessChannel", () => {
  it("writes every message sent in one tick with a single write, in order", async () => {
    const { host, childEnd } = pair();
    const chunks: Buffer[] = [];
    childEnd.on("data", (chunk: Buffer) => chunks.push(chunk));
    for (let callIndex = 0; callIndex < 50; callIndex++) {
      host.send({ kind: PROCESS_MESSAGE_KIND.results, results: [callIndex, `{"n":${callIndex}}`, null] });
    }
    expect(chunks).toEqual([]);
    await tick();
    expect(chunks).toHaveLength(1);
    const decoded = new FrameDecoder(isHostMessage).push(chunks[0] as Buffer);
    expect(decoded.map((message) => (message.kind === PROCESS_MESSAGE_KIND.results ? message.results[0] : -1))).toEqual(
      Array.from({ length: 50 }, (_, i) => i),
    );
  });

  it("delivers messages split across many chunks, a large one included", async () => {
    const { received, childEnd } = pair();
    const text = "é".repeat(300_000);
    const bytes = Buffer.concat([
      encodeMessage({ kind: FRAME_KIND.log, level: "info", text }),
      encodeMessage({ kind: PROCESS_MESSAGE_KIND.ready }),
    ]);
    for (let offset = 0; offset < bytes.length; offset += 4_099) childEnd.write(bytes.subarray(offset, offset + 4_099));
    await tick();
    await tick();
    expect(received).toEqual([{ kind: FRAME_KIND.log, level: "info", text }, { kind: PROCESS_MESSAGE_KIND.ready }]);
  });

  it("closes with a reason on a message the receiving side does not accept", async () => {
    const { received, closed, malformed, childEnd } = pair();
    childEnd.write(encodeMessage({ kind: PROCESS_MESSAGE_KIND.run, chainId: "c" })); // a host message, sent to the host
    await tick();
    expect(received).toEqual([]);
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatch(/malformed message/);
    expect(malformed).toEqual([true]); // this side ended the stream: the owner kills the child for it
  });

  it("reports a plain end of the stream without a reason, once", async () => {
    const { closed, malformed, childEnd, host } = pair();
    childEnd.end();
    await tick();
    await tick();
    expect(closed).toEqual([undefined]);
    expect(malformed).toEqual([false]);
    expect(host.isClosed).toBe(true);
  });

  it("refuses to encode a message over the frame limit", () => {
    const { host } = pair();
    const huge = "x".repeat(65 * 1024 * 1024);
    try {
      host.send({ kind: PROCESS_MESSAGE_KIND.results, results: [0, huge, null] });
      throw new Error("expected a throw");
    } catch (error) {
      expect(isChainRuntimeError(error) && error.code).toBe("BRIDGE_FRAME_INVALID");
    }
  });
});

describe("process protocol guards", () => {
  it("accepts each message on its own side only", () => {
    const limits = { memoryLimitMb: 8, cpuTimeMs: 1, totalTimeoutMs: 1, maxOutputBytes: 1, maxArgumentBytes: 1 };
    const run = { kind: PROCESS_MESSAGE_KIND.run, chainId: "c", script: "s", scriptName: "n", toolNames: ["a"], maxToolCalls: 1, limits, seed: 1, clockStart: 0 };
    expect(isHostMessage(run)).toBe(true);
    expect(isChildMessage(run)).toBe(false);
    expect(isHostMessage({ ...run, toolNames: [1] })).toBe(false);
    expect(isHostMessage({ ...run, limits: { ...limits, cpuTimeMs: -1 } })).toBe(false);
    expect(isHostMessage({ ...run, clockLiveAt: 1_795_000_000_000 })).toBe(true);
    for (const clockLiveAt of [1.5, "1", Number.NaN]) expect(isHostMessage({ ...run, clockLiveAt })).toBe(false);
    expect(isHostMessage({ ...run, budgetSpentMs: 12.5 })).toBe(true);
    for (const budgetSpentMs of [-1, "1", Number.NaN, Number.POSITIVE_INFINITY]) expect(isHostMessage({ ...run, budgetSpentMs })).toBe(false);
    const outcome = { kind: PROCESS_MESSAGE_KIND.outcome, outcome: { status: "ok", returnJson: "1", wallMs: 1, cpuMs: 1, heapBytes: 1 } };
    expect(isChildMessage(outcome)).toBe(true);
    expect(isHostMessage(outcome)).toBe(false);
    expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, status: "weird" } })).toBe(false);
    expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, error: { phase: "limit", name: "E" } } })).toBe(false);
    expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, unansweredCalls: [0, 3] } })).toBe(true);
    for (const unansweredCalls of [[-1], [1.5], ["0"], 7]) {
      expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, unansweredCalls } })).toBe(false);
    }
    const rejection = { phase: "runtime", name: "Error", message: "lost", stack: "Error: lost\n    at chain.js:2:9" };
    expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, unhandledRejections: [rejection, { ...rejection, name: "" }] } })).toBe(true);
    for (const unhandledRejections of [[{ ...rejection, message: 7 }], [{ name: "Error", message: "x" }], "lost", Array.from({ length: 6 }, () => rejection)]) {
      expect(isChildMessage({ ...outcome, outcome: { ...outcome.outcome, unhandledRejections } })).toBe(false);
    }
    const calls = { kind: PROCESS_MESSAGE_KIND.calls, calls: [0, "t", "{}", null, 1, "u", "{}", "not plain data"] };
    expect(isChildMessage(calls)).toBe(true);
    expect(isHostMessage(calls)).toBe(false);
    for (const bad of [[], [0, "t", "{}"], [-1, "t", "{}", null], [0.5, "t", "{}", null], [0, 1, "{}", null], [0, "t", {}, null], [0, "t", "{}", 7], "0"]) {
      expect(isChildMessage({ kind: PROCESS_MESSAGE_KIND.calls, calls: bad })).toBe(false);
    }
    const results = { kind: PROCESS_MESSAGE_KIND.results, results: [0, "{}", null, 1, "{}", new Uint8Array([0x61])] };
    expect(isHostMessage(results)).toBe(true);
    expect(isChildMessage(results)).toBe(false);
    for (const bad of [[], [0, "{}"], [-1, "{}", null], [0, 1, null], [0, "{}", "a"], [0, "{}", undefined], null]) {
      expect(isHostMessage({ kind: PROCESS_MESSAGE_KIND.results, results: bad })).toBe(false);
    }
    // the single-call bridge frames do not travel on this pipe
    expect(isChildMessage({ kind: FRAME_KIND.call, callIndex: 0, tool: "t", argsJson: "{}" })).toBe(false);
    expect(isHostMessage({ kind: FRAME_KIND.result, callIndex: 0, resultJson: "{}" })).toBe(false);
  });

  it("carries a result's text bytes through the codec as bytes", () => {
    const bytes = Buffer.from("é😀".repeat(10_000), "utf8");
    const [decoded] = new FrameDecoder(isHostMessage).push(encodeMessage({ kind: PROCESS_MESSAGE_KIND.results, results: [2, "{}", bytes, 3, "{}", null] }));
    expect(decoded?.kind).toBe(PROCESS_MESSAGE_KIND.results);
    const fields = (decoded as { results: readonly unknown[] }).results;
    expect(fields.filter((_, i) => i !== 2)).toEqual([2, "{}", 3, "{}", null]);
    const text = fields[2];
    expect(text).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(text as Uint8Array).equals(bytes)).toBe(true);
  });
});

describe("FrameDecoder with many chunks", () => {
  it("holds an incomplete frame's chunks and reports them as pending", () => {
    const bytes = encodeMessage({ kind: PROCESS_MESSAGE_KIND.ready });
    const decoder = new FrameDecoder(isChildMessage);
    for (let i = 0; i < bytes.length - 1; i++) expect(decoder.push(bytes.subarray(i, i + 1))).toEqual([]);
    expect(decoder.pendingBytes).toBe(bytes.length - 1);
    expect(decoder.push(bytes.subarray(bytes.length - 1))).toEqual([{ kind: PROCESS_MESSAGE_KIND.ready }]);
    expect(decoder.pendingBytes).toBe(0);
  });
});

describe("splitBatch", () => {
  it("keeps a batch whole in the usual case", () => {
    const flat = [0, "{}", null, 1, "{}", null];
    expect(splitBatch(flat, RESULT_FIELDS)).toEqual([{ entries: flat, oversized: false }]);
  });

  it("splits where the encoded size could pass the frame limit, and isolates an entry too large alone", () => {
    const mib = 1024 * 1024;
    const big = new Uint8Array(40 * mib); // bytes count as they are
    const text = "x".repeat(12 * mib); // a long string counts its exact UTF-8 length
    const huge = new Uint8Array(MAX_FRAME_BYTES);
    const flat = [0, "{}", big, 1, "{}", big, 2, text, null, 3, "{}", huge, 4, "{}", null];
    const parts = splitBatch(flat, RESULT_FIELDS);
    expect(parts.map((part) => [part.entries.filter((_, i) => i % RESULT_FIELDS === 0), part.oversized])).toEqual([
      [[0], false],
      [[1, 2], false],
      [[3], true],
      [[4], false],
    ]);
    for (const part of parts) {
      if (!part.oversized) expect(encodeMessage({ kind: PROCESS_MESSAGE_KIND.results, results: part.entries }).length).toBeLessThan(MAX_FRAME_BYTES);
    }
  });
});
