import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  defineTool,
  exportTraceJson,
  foldTraceEvents,
  isChainRuntimeError,
  MemoryTraceStore,
  pendingApprovals,
  replay,
  resumeChain,
  suspendedCalls,
  ToolChainTool,
  traceToTest,
  type ChainTrace,
} from "../../src/index.ts";

/** The code a call threw with (or "no throw"). */
async function codeOf(action: () => unknown): Promise<string> {
  try {
    await action();
    return "no throw";
  } catch (error) {
    return isChainRuntimeError(error) ? error.code : `untyped ${String(error)}`;
  }
}

describe("functions that take a trace refuse what is not one, with a typed error", () => {
  let trace: ChainTrace;
  let chain: ToolChainTool;
  beforeAll(async () => {
    const store = new MemoryTraceStore();
    const echo = defineTool({ name: "echo", description: "Echo.", inputSchema: { type: "object", properties: {} }, execute: (args) => args });
    chain = new ToolChainTool({ tools: [echo], traceStore: store, driver: "in-process" });
    const run = await chain.run("return (await tools.echo({ a: 1 })).status;");
    trace = await store.load(run.chainId);
  });
  afterAll(() => chain.close());

  it("a valid trace passes every entry point", async () => {
    expect(await codeOf(() => exportTraceJson(trace))).toBe("no throw");
    expect(await codeOf(() => traceToTest(trace))).toBe("no throw");
    expect(await codeOf(() => suspendedCalls(trace))).toBe("no throw");
    expect((await replay(trace, { mode: "strict", driver: "in-process" })).identical).toBe(true);
  });

  it.each([
    ["null", null],
    ["an empty object", {}],
    ["a null tool in the toolbox", "toolsNull"],
    ["calls that are not an array", "callsString"],
    ["a call without an id", "callNoId"],
    ["approval requests that are null", "approvalsNull"],
    ["a seed run() would refuse", "seedFraction"],
    ["a policy no chain could have run under", "policyBad"],
  ])("TRACE_INVALID for %s", async (_label, kind) => {
    const hostile: unknown =
      kind === "seedFraction"
        ? { ...trace, seed: 1.5 }
        : kind === "policyBad"
          ? { ...trace, policy: { ...trace.policy, maxToolCalls: -1 } }
          : kind === "toolsNull"
        ? { ...trace, toolbox: { ...trace.toolbox, tools: [null] } }
        : kind === "callsString"
          ? { ...trace, calls: "c0" }
          : kind === "callNoId"
            ? { ...trace, calls: [{ ...trace.calls[0], callId: 7 }] }
            : kind === "approvalsNull"
              ? { ...trace, approvalRequests: null }
              : kind;
    const asTrace = hostile as ChainTrace;
    expect(await codeOf(() => replay(asTrace, { mode: "strict", driver: "in-process" }))).toBe("TRACE_INVALID");
    expect(await codeOf(() => replay(asTrace, { mode: "resume", tools: [], driver: "in-process" }))).toBe("TRACE_INVALID");
    expect(await codeOf(() => exportTraceJson(asTrace))).toBe("TRACE_INVALID");
    expect(await codeOf(() => traceToTest(asTrace))).toBe("TRACE_INVALID");
    expect(await codeOf(() => pendingApprovals(asTrace))).toBe("TRACE_INVALID");
    expect(await codeOf(() => suspendedCalls(asTrace))).toBe("TRACE_INVALID");
  });

  it("TRACE_INVALID for arguments nested past the stack, in export and traceToTest", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    const hostile = { ...trace, calls: [{ ...trace.calls[0], args: deep }] } as unknown as ChainTrace;
    expect(await codeOf(() => exportTraceJson(hostile))).toBe("TRACE_INVALID");
    expect(await codeOf(() => traceToTest(hostile))).toBe("TRACE_INVALID");
  });

  it("ARGUMENT_INVALID for missing options; TRACE_INVALID for events that are not an array", async () => {
    expect(await codeOf(() => replay(trace, null as never))).toBe("ARGUMENT_INVALID");
    expect(await codeOf(() => resumeChain(trace.chainId, "approved", {} as never))).toBe("ARGUMENT_INVALID");
    expect(await codeOf(() => foldTraceEvents(null as never))).toBe("TRACE_INVALID");
  });
});
