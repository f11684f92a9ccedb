import { describe, expect, it } from "vitest";
import { BRIDGE_OP } from "../../src/bridge/protocol.ts";
import { errorResultJson, RAW_TEXT_MIN_LENGTH, toWireResult } from "../../src/bridge/wire-result.ts";
import type { InvocationResult } from "../../src/kernel/index.ts";
import { MAX_BATCH_UNITS, ResultQueue } from "../../sandbox/isolate-common.ts";

const large = (piece: string): string => piece.repeat(Math.ceil(RAW_TEXT_MIN_LENGTH / piece.length));

describe("toWireResult", () => {
  it("keeps a small text inside the JSON", () => {
    const result: InvocationResult = { status: "ok", text: "hello", structured: { a: 1 } };
    expect(toWireResult(result)).toEqual({ resultJson: JSON.stringify(result) });
  });

  it("sends a large text apart, leaving an empty text in its place in the JSON", () => {
    const text = large("é😀");
    const wire = toWireResult({ status: "ok", text, structured: { n: 2 } });
    expect(wire.text).toBe(text);
    expect(wire.resultJson).toBe('{"status":"ok","text":"","structured":{"n":2}}');
    expect(toWireResult({ status: "error", code: "TOOL_ERROR", text }).text).toBe(text);
  });

  it("keeps a text with lone surrogates in the JSON for a UTF-8 carrier, and only there", () => {
    const text = large("a\ud800");
    const utf8 = toWireResult({ status: "ok", text }, { utf8: true });
    expect(utf8.text).toBeUndefined();
    expect((JSON.parse(utf8.resultJson) as { text: string }).text).toBe(text);
    expect(toWireResult({ status: "ok", text }).text).toBe(text);
    expect(toWireResult({ status: "ok", text: large("é") }, { utf8: true }).text).toBeDefined();
  });

  it("serialises a result that is not a plain text holder exactly as JSON.stringify does", () => {
    const text = large("s");
    class Redacting {
      readonly status = "ok";
      readonly text = text;
      toJSON(): unknown {
        return { status: "ok", text: "[redacted]" };
      }
    }
    const redacting = new Redacting() as unknown as InvocationResult;
    expect(toWireResult(redacting)).toEqual({ resultJson: '{"status":"ok","text":"[redacted]"}' });
    const hidden = Object.defineProperty({ status: "ok" }, "text", { value: text, enumerable: false }) as unknown as InvocationResult;
    expect(toWireResult(hidden)).toEqual({ resultJson: '{"status":"ok"}' });
    const getter = { status: "ok", get text() { return text; } } as unknown as InvocationResult;
    expect(toWireResult(getter)).toEqual({ resultJson: JSON.stringify(getter) });
  });

  it("turns a result that cannot be serialised into RESULT_INVALID, never a throw", () => {
    const wire = toWireResult({ status: "ok", text: "x", structured: { n: 1n } as unknown as Record<string, unknown> });
    expect(JSON.parse(wire.resultJson)).toMatchObject({ status: "error", code: "RESULT_INVALID" });
    expect(wire.text).toBeUndefined();
    expect(JSON.parse(errorResultJson("BRIDGE_ERROR", "t"))).toEqual({ status: "error", code: "BRIDGE_ERROR", text: "t" });
  });
});

describe("ResultQueue", () => {
  it("bounds a batch: results past MAX_BATCH_UNITS wait for the next take, in order, one alone never split", () => {
    // 30 parallel calls of 20 MiB each would join into one 600 M-unit string, past V8's limit
    // (a RangeError on the host). Five 12 Mi-unit texts show the bound without that cost.
    const text = "x".repeat(12 * 1024 * 1024);
    const queue = new ResultQueue();
    for (let i = 0; i < 5; i++) queue.push(i, { resultJson: '{"status":"ok","text":""}', text });
    queue.push(5, { resultJson: '{"status":"ok","text":"tail"}' });
    const batches: unknown[][] = [];
    for (let args = queue.take(); args !== undefined; args = queue.take()) batches.push(args);
    expect(queue.length).toBe(0);
    // Two texts (24 Mi units) fit under 32 Mi; a third would not.
    expect(batches.map((args) => args[1])).toEqual([`0:${text.length},1:${text.length}`, `2:${text.length},3:${text.length}`, `4:${text.length},5`]);
    for (const args of batches) expect((args[2] as string).length + ((args[3] as string | undefined)?.length ?? 0)).toBeLessThanOrEqual(MAX_BATCH_UNITS);
    const alone = new ResultQueue();
    const huge = "y".repeat(MAX_BATCH_UNITS + 1);
    alone.push(0, { resultJson: '{"status":"ok","text":""}', text: huge });
    alone.push(1, { resultJson: '{"status":"ok","text":"b"}' });
    expect(alone.take()).toEqual([BRIDGE_OP.resolve, 0, '{"status":"ok","text":""}', huge]);
    expect(alone.take()).toEqual([BRIDGE_OP.resolve, 1, '{"status":"ok","text":"b"}']);
  });

  it("is empty until a result is queued, and empty again after take", () => {
    const queue = new ResultQueue();
    expect(queue.take()).toBeUndefined();
    queue.push(4, { status: "ok", text: "a" });
    expect(queue.length).toBe(1);
    expect(queue.take()).toEqual([BRIDGE_OP.resolve, 4, '{"status":"ok","text":"a"}']);
    expect(queue.length).toBe(0);
    expect(queue.take()).toBeUndefined();
  });

  it("passes a single large text as the fourth argument", () => {
    const queue = new ResultQueue();
    const text = large("z");
    queue.push(0, { status: "ok", text });
    expect(queue.take()).toEqual([BRIDGE_OP.resolve, 0, '{"status":"ok","text":""}', text]);
  });

  it("takes serialised results as they are", () => {
    const queue = new ResultQueue();
    queue.push(1, { resultJson: '{"status":"ok","text":""}', text: "raw" });
    queue.push(2, { resultJson: '{"status":"ok","text":"b"}' });
    expect(queue.take()).toEqual([BRIDGE_OP.resolve, "1:3,2", '[{"status":"ok","text":""},{"status":"ok","text":"b"}]', "raw"]);
  });

  it("writes a batch's texts sent apart in order, each entry with its length", () => {
    const queue = new ResultQueue();
    const first = large("é");
    const second = large("😀");
    queue.push(7, { status: "ok", text: first });
    queue.push(2, { status: "ok", text: "small" });
    queue.push(9, { status: "ok", text: second });
    const args = queue.take();
    expect(args?.[1]).toBe(`7:${first.length},2,9:${second.length}`);
    expect(JSON.parse(args?.[2] as string)).toEqual([
      { status: "ok", text: "" },
      { status: "ok", text: "small" },
      { status: "ok", text: "" },
    ]);
    expect(args?.[3]).toBe(first + second);
  });

  it("forgets texts on clear", () => {
    const queue = new ResultQueue();
    queue.push(0, { status: "ok", text: large("q") });
    queue.clear();
    queue.push(1, { status: "ok", text: "s" });
    queue.push(2, { status: "ok", text: "t" });
    expect(queue.take()).toEqual([BRIDGE_OP.resolve, "1,2", '[{"status":"ok","text":"s"},{"status":"ok","text":"t"}]']);
  });
});
