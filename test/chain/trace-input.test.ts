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

  it("a replay names a recorded digest that does not match the recorded arguments as damage, not as other arguments", async () => {
    const edited = withCall({ argsDigest: "0".repeat(64) }) as ChainTrace;
    const report = await replay(edited, { mode: "strict", driver: "in-process" });
    expect(report.divergence).toMatchObject({ kind: "call-mismatch", callId: "c0", diff: [] });
    expect(report.divergence?.message).toBe(
      "Call c0 (tools.echo) has the arguments the trace records, but not the digest it records for them: the trace was damaged or edited.",
    );
  });

  it("a trace recorded under a policy past today's upper bounds still loads, replays and resumes (brought down to them)", async () => {
    const older = { ...trace, policy: { ...trace.policy, maxToolCalls: Number.MAX_SAFE_INTEGER, memoryLimitMb: 20_000 } } as ChainTrace;
    expect(await codeOf(() => exportTraceJson(older))).toBe("no throw");
    expect((await replay(older, { mode: "strict", driver: "in-process" })).identical).toBe(true);
    const echo = defineTool({ name: "echo", description: "Echo.", inputSchema: { type: "object", properties: {} }, execute: (args) => args });
    const resumed = await replay(older, { mode: "resume", tools: [echo], traceStore: new MemoryTraceStore(), driver: "in-process" });
    expect(resumed.run.status).toBe("ok");
    // Still refused: what no chain could ever have run under.
    expect(await codeOf(() => exportTraceJson({ ...trace, policy: { ...trace.policy, maxToolCalls: -1 } } as ChainTrace))).toBe("TRACE_INVALID");
  });

  it("a valid trace passes every entry point", async () => {
    expect(await codeOf(() => exportTraceJson(trace))).toBe("no throw");
    expect(await codeOf(() => traceToTest(trace))).toBe("no throw");
    expect(await codeOf(() => suspendedCalls(trace))).toBe("no throw");
    expect((await replay(trace, { mode: "strict", driver: "in-process" })).identical).toBe(true);
  });

  const withCall = (change: Record<string, unknown>): unknown => ({ ...trace, calls: [{ ...trace.calls[0], ...change }] });
  const hostileTraces: Record<string, () => unknown> = {
    null: () => null,
    "an empty object": () => ({}),
    "a null tool in the toolbox": () => ({ ...trace, toolbox: { ...trace.toolbox, tools: [null] } }),
    "calls that are not an array": () => ({ ...trace, calls: "c0" }),
    "a call without an id": () => withCall({ callId: 7 }),
    "approval requests that are null": () => ({ ...trace, approvalRequests: null }),
    "a seed run() would refuse": () => ({ ...trace, seed: 1.5 }),
    "a clock start no Date can hold": () => ({ ...trace, clockStart: 1e300 }),
    "a creation time no Date can hold": () => ({ ...trace, createdAt: -Infinity }),
    "a policy no chain could have run under": () => ({ ...trace, policy: { ...trace.policy, maxToolCalls: -1 } }),
    // Recorded results reach the script as they are on replay: only what the invoker could return.
    "a call state that does not exist": () => withCall({ state: "whatever" }),
    "a call without an argument digest": () => withCall({ argsDigest: undefined }),
    "an argument digest that is no sha256 digest": () => withCall({ argsDigest: "not-hex!" }),
    "a completed call whose result is null": () => withCall({ result: null }),
    "a completed call whose result is a string": () => withCall({ result: "pwned" }),
    'a result with status "weird"': () => withCall({ result: { status: "weird", text: "x" } }),
    "a result whose text is a number": () => withCall({ result: { status: "ok", text: 42 } }),
    "a result whose artifact ref leaves the store": () => withCall({ result: { status: "ok", text: "x", artifactRef: "../../etc/passwd" } }),
    "a malformed result on a call that never completed": () => withCall({ state: "in-doubt", result: { status: "ok" } }),
    "an outcome status that does not exist": () => ({ ...trace, outcome: { ...trace.outcome, status: "whatever" } }),
  };

  it.each(Object.keys(hostileTraces))("TRACE_INVALID for %s", async (label) => {
    const hostile = (hostileTraces[label] as () => unknown)();
    const asTrace = hostile as ChainTrace;
    expect(await codeOf(() => replay(asTrace, { mode: "strict", driver: "in-process" }))).toBe("TRACE_INVALID");
    expect(await codeOf(() => replay(asTrace, { mode: "resume", tools: [], traceStore: new MemoryTraceStore(), driver: "in-process" }))).toBe("TRACE_INVALID");
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

  it("ARGUMENT_INVALID for resume decisions that are not one or name no in-doubt or suspended call", async () => {
    const { result: _result, ...started } = trace.calls[0] as ChainTrace["calls"][number];
    const { outcome: _outcome, ...crashed } = { ...trace, calls: [{ ...started, state: "in-doubt" as const }] };
    const resume = (decisions: Record<string, unknown>): Promise<unknown> =>
      replay(crashed, { mode: "resume", tools: [], traceStore: new MemoryTraceStore(), driver: "in-process", ...decisions } as never);
    const refusal = async (decisions: Record<string, unknown>): Promise<string> => {
      try {
        await resume(decisions);
        return "no throw";
      } catch (error) {
        return isChainRuntimeError(error) ? `${error.code}: ${error.message}` : `untyped ${String(error)}`;
      }
    };
    expect(await refusal({ inDoubt: { c0: "yes" } })).toMatch(/^ARGUMENT_INVALID: .*inDoubt\.c0 must be "assume-done" or "re-execute"; got "yes"/);
    expect(await refusal({ inDoubt: { c0: "RE-EXECUTE" } })).toMatch(/^ARGUMENT_INVALID/);
    expect(await refusal({ inDoubt: { c9: "assume-done" } })).toMatch(/^ARGUMENT_INVALID: .*has no in-doubt call c9; its in-doubt call is c0\.$/);
    expect(await refusal({ inDoubt: 42 })).toMatch(/^ARGUMENT_INVALID: .*inDoubt must be an object/);
    expect(await refusal({ approvals: { c0: "maybe" } })).toMatch(/^ARGUMENT_INVALID: .*approvals\.c0 must be "approved", "denied" or "skipped"/);
    // The chain was not suspended: an approval decision would never be read.
    expect(await refusal({ approvals: { c0: "approved" } })).toMatch(/^ARGUMENT_INVALID: .*has no call suspended for approval c0; it has none/);
    const settled = (await resume({ inDoubt: { c0: "assume-done" } })) as { inDoubt: unknown };
    expect(settled.inDoubt).toEqual([{ callId: "c0", tool: "echo", risk: "safe", resolution: "assume-done" }]);
  });
});
