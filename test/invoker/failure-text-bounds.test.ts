// Failure texts a tool or caller controls (a thrown message, an unknown name) are cut where they
// are made, so neither the result nor the record's `error` grows with them. (An `isError`
// result's size rules are in shape-result.test.ts.)
import { describe, expect, it } from "vitest";
import { MAX_ECHOED_NAME_CHARS } from "../../src/invoker/gates/lookup-tool.ts";
import type { ToolRegistry } from "../../src/invoker/tool-registry.ts";
import { ToolInvoker } from "../../src/invoker/tool-invoker.ts";
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS } from "../../src/kernel/bound-error-text.ts";
import { echoTool, FAST_POLICY, localTool, makeInvoker } from "./invoker-fixtures.ts";

const MIB = 1024 * 1024;
/** What `clipText` makes of `char` repeated `length` times, cut at `max`. */
const cut = (char: string, length: number, max: number) => `${char.repeat(max)}… [${length - max} more characters]`;

describe("ToolInvoker failure texts stay bounded", () => {
  it.each([
    ["an Error with a huge message", new Error("m".repeat(MIB)), `threw Error: ${cut("m", MIB, MAX_ERROR_MESSAGE_CHARS)}`],
    ["an Error with a huge name", Object.assign(new Error("short"), { name: "N".repeat(MIB) }), `threw ${cut("N", MIB, MAX_ERROR_NAME_CHARS)}: short`],
    ["a huge string", "s".repeat(MIB), `threw a non-Error value: ${cut("s", MIB, MAX_ERROR_MESSAGE_CHARS)}`],
  ])("cuts what a tool threw (%s) in TOOL_ERROR and its record", async (_label, thrown, expected) => {
    const invoker = makeInvoker([
      localTool("t", () => {
        throw thrown;
      }),
    ]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "t", arguments: {} }, { session });
    expect(result).toEqual({ status: "error", code: "TOOL_ERROR", text: `Tool "t" ${expected}` });
    expect(session.trace[0]).toMatchObject({ code: "TOOL_ERROR", error: result.text });
  });

  it("cuts an unknown tool name repeated in UNKNOWN_TOOL, and its record's error", async () => {
    const invoker = makeInvoker([echoTool("echo")]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "x".repeat(MIB), arguments: {} }, { session });
    expect(result).toEqual({
      status: "error",
      code: "UNKNOWN_TOOL",
      text: `Unknown tool "${cut("x", MIB, MAX_ECHOED_NAME_CHARS)}". Available tools: "echo".`,
    });
    expect(session.trace[0]).toMatchObject({ code: "UNKNOWN_TOOL", error: result.text });
  });

  it("cuts the name of a call refused by a closed session", async () => {
    const invoker = makeInvoker([echoTool("echo")]);
    const session = invoker.openSession();
    await session.close();
    const result = await invoker.invoke({ name: "x".repeat(MIB), arguments: {} }, { session });
    expect(result).toEqual({
      status: "error",
      code: "CANCELLED",
      text: `The session was closed; the call of "${cut("x", MIB, MAX_ECHOED_NAME_CHARS)}" did not run. Open a new session.`,
    });
  });

  it("cuts an invoker error whose message comes from the caller's call object", async () => {
    const invoker = makeInvoker([echoTool("echo")]);
    const call = {
      name: "echo",
      arguments: {},
      get id(): string {
        throw new Error("i".repeat(MIB));
      },
    };
    const result = await invoker.invoke(call, { session: invoker.openSession() });
    expect(result).toEqual({
      status: "error",
      code: "TOOL_ERROR",
      text: `Invoker error before the call started: ${cut("i", MIB, MAX_ERROR_MESSAGE_CHARS)}`,
    });
  });

  it("cuts the name and message of an invoker error while calling, and its record's error", async () => {
    const registry: ToolRegistry = {
      get() {
        throw new Error("g".repeat(MIB));
      },
      names: () => [],
    };
    const invoker = new ToolInvoker({ toolbox: registry, policy: FAST_POLICY });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "x".repeat(MIB), arguments: {} }, { session });
    expect(result).toEqual({
      status: "error",
      code: "TOOL_ERROR",
      text: `Invoker error while calling "${cut("x", MIB, MAX_ECHOED_NAME_CHARS)}": ${cut("g", MIB, MAX_ERROR_MESSAGE_CHARS)}`,
    });
    expect(session.trace[0]).toMatchObject({ code: "TOOL_ERROR", error: result.text });
  });
});
