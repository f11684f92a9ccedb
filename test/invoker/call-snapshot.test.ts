// The call object as the invoker reads it: each field once, a rejection only when it is a
// failure, and one record under its own seq for every call, however odd the object.
import { describe, expect, it } from "vitest";
import type { Hooks, InvocationFailure, InvocationResult, ToolCall } from "../../src/kernel/index.ts";
import { MAX_ERROR_MESSAGE_CHARS } from "../../src/kernel/bound-error-text.ts";
import { echoTool, makeInvoker } from "./invoker-fixtures.ts";

/** A getter-backed property that counts its reads and answers `answers[n]` (the last one after). */
function counted<T>(answers: readonly T[]): { reads: number; get(): T } {
  const counter = {
    reads: 0,
    get(): T {
      const answer = answers[Math.min(counter.reads, answers.length - 1)] as T;
      counter.reads++;
      return answer;
    },
  };
  return counter;
}

describe("ToolInvoker: ToolCall.rejection", () => {
  const malformed: [string, unknown][] = [
    ["a success", { status: "ok", text: "injected success" }],
    ["an unknown code", { status: "error", code: "NOPE", text: "x" }],
    ["a code inherited from Object.prototype", { status: "error", code: "toString", text: "x" }],
    ["a text that is not a string", { status: "denied", code: "APPROVAL_DENIED", text: 5 }],
    ["no status", { code: "BRIDGE_ERROR", text: "x" }],
    ["null", null],
    ["a string", "refused"],
    [
      "a getter that throws",
      {
        get status(): string {
          throw new Error("status boom");
        },
      },
    ],
  ];

  it.each(malformed)("refuses a call whose rejection is %s as malformed: recorded, counted, never run", async (_label, rejection) => {
    const echo = echoTool("echo");
    const invoker = makeInvoker([echo], { policy: { maxToolCalls: 1 } });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "echo", arguments: {}, rejection } as unknown as ToolCall, { session });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining("rejection is malformed") });
    expect(echo.calls).toEqual([]);
    expect(session.trace).toEqual([expect.objectContaining({ seq: 0, tool: "echo", status: "error", code: "INVALID_ARGUMENTS", error: result.text })]);
    expect(await invoker.invoke({ name: "echo", arguments: {} }, { session })).toMatchObject({ code: "BUDGET_EXCEEDED" });
    await session.close();
  });

  it("returns a failure rejection as a copy, each field read once: a getter cannot turn it into a success", async () => {
    const echo = echoTool("echo");
    const invoker = makeInvoker([echo]);
    const session = invoker.openSession();
    const status = counted(["error", "ok"]);
    const text = counted(["arguments must be plain JSON data", "injected success"]);
    const rejection = {
      get status() {
        return status.get();
      },
      code: "BRIDGE_ERROR",
      get text() {
        return text.get();
      },
    };
    const result = await invoker.invoke({ name: "echo", arguments: {}, rejection } as unknown as ToolCall, { session });
    const reads = [status.reads, text.reads];
    expect(reads).toEqual([1, 1]);
    expect(result).not.toBe(rejection);
    expect(result).toEqual({ status: "error", code: "BRIDGE_ERROR", text: "arguments must be plain JSON data" });
    expect(session.trace[0]).toMatchObject({ status: "error", code: "BRIDGE_ERROR", error: "arguments must be plain JSON data" });
    const denied: InvocationFailure = { status: "denied", code: "APPROVAL_DENIED", text: "a human said no" };
    expect(await invoker.invoke({ name: "echo", arguments: {}, rejection: denied }, { session })).toEqual(denied);
    expect(echo.calls).toEqual([]);
    await session.close();
  });

  it("bounds a rejection's text like any failure text the invoker passes on", async () => {
    const invoker = makeInvoker([echoTool("echo")]);
    const session = invoker.openSession();
    const rejection: InvocationFailure = { status: "error", code: "BRIDGE_ERROR", text: "x".repeat(1_000_000) };
    const result = await invoker.invoke({ name: "echo", arguments: {}, rejection }, { session });
    expect(result.text).toBe(`${"x".repeat(MAX_ERROR_MESSAGE_CHARS)}… [${1_000_000 - MAX_ERROR_MESSAGE_CHARS} more characters]`);
    expect(session.trace[0]?.error).toBe(result.text);
    await session.close();
  });
});

describe("ToolInvoker: call objects that cannot be read", () => {
  const boom = (what: string) => () => {
    throw new Error(`${what} boom`);
  };
  const unreadable: [string, unknown][] = [
    ["a name getter that throws", Object.defineProperty({ arguments: {} }, "name", { get: boom("name") })],
    ["an arguments getter that throws", Object.defineProperty({ name: "echo" }, "arguments", { get: boom("arguments") })],
    ["a rejection getter that throws", Object.defineProperty({ name: "echo", arguments: {} }, "rejection", { get: boom("rejection") })],
    ["an id getter that throws", Object.defineProperty({ name: "echo", arguments: {} }, "id", { get: boom("id") })],
    ["a proxy whose trap throws", new Proxy({ name: "echo", arguments: {} }, { get: boom("trap") })],
    ["a name whose text cannot be made", { name: { toString: boom("toString") }, arguments: {} }],
  ];

  it("gives each a failure, its TOOL_START and TOOL_END, and one record under its own seq (no gap)", async () => {
    const echo = echoTool("echo");
    const started: number[] = [];
    const ended: number[] = [];
    const hooks: Hooks = { TOOL_START: (event) => void started.push(event.seq), TOOL_END: (event) => void ended.push(event.seq) };
    const invoker = makeInvoker([echo], { hooks });
    const session = invoker.openSession();
    const calls = [{ name: "echo", arguments: {} }, ...unreadable.map(([, call]) => call), { name: "echo", arguments: {} }];
    const results: InvocationResult[] = [];
    for (const call of calls) results.push(await invoker.invoke(call as ToolCall, { session }));
    expect(results.map((result) => [result.status, result.status === "ok" ? undefined : result.code])).toEqual([
      ["ok", undefined],
      ...unreadable.map(() => ["error", "TOOL_ERROR"]),
      ["ok", undefined],
    ]);
    unreadable.forEach(([label], i) => {
      expect(results[i + 1]?.text, label).toMatch(/^Invoker error before the call started: \w+ boom$/);
    });
    const seqs = calls.map((_, i) => i);
    expect(session.trace.map((record) => record.seq)).toEqual(seqs);
    expect(session.trace.slice(1, -1).map((record) => [record.status, record.code])).toEqual(unreadable.map(() => ["error", "TOOL_ERROR"]));
    expect(started).toEqual(seqs);
    expect(ended).toEqual(seqs);
    expect(echo.calls).toHaveLength(2);
    await session.close();
  });

  it("reads each field once: the name looked up is the one that runs and is recorded", async () => {
    const echo = echoTool("echo");
    const other = echoTool("other");
    const started: string[] = [];
    const invoker = makeInvoker([echo, other], { hooks: { TOOL_START: (event) => void started.push(event.tool) } });
    const session = invoker.openSession();
    const name = counted(["echo", "other"]);
    const id = counted(["given-id", "other-id"]);
    const args = counted([{ n: 1 }, { n: 2 }]);
    const rejection = counted([undefined]);
    const call = {
      get name() {
        return name.get();
      },
      get id() {
        return id.get();
      },
      get arguments() {
        return args.get();
      },
      get rejection() {
        return rejection.get();
      },
    };
    const result = await invoker.invoke(call as unknown as ToolCall, { session });
    expect(result).toMatchObject({ status: "ok", structured: { n: 1 } });
    expect([name.reads, id.reads, args.reads, rejection.reads]).toEqual([1, 1, 1, 1]);
    expect(echo.calls.map((c) => [c.args, c.ctx.callId])).toEqual([[{ n: 1 }, "given-id"]]);
    expect(other.calls).toEqual([]);
    expect(started).toEqual(["echo"]);
    expect(session.trace[0]).toMatchObject({ tool: "echo", callId: "given-id", status: "ok" });
    await session.close();
  });
});
